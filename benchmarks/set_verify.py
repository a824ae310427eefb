"""The checks of a held-out question set against its fetched corpora (no ragdb involved),
shared by benchmarks/repos3/verify.py and repos4/verify.py (standard library only).

Each set's verify.py names its folder, packages and question-id namespace and calls `run`. It
checks what the set promises: 10 docs and 10 code questions per package with 4 identifier, 3
paraphrase and 3 conceptual in each kind, ids that are uuid5 of the question text, one source
per question under data/raw-SET/PACKAGE/, offsets that slice the file (UTF-8, newlines untouched)
to a 100-1,500 character span that still begins and ends with the passage recorded for it in
anchors.json (the start quote found exactly once in its file), no span used twice, at most three
questions on one file, every question naming its package as a word or its plural (a package name can
be part of other words, so a substring would not do), and the unanswered files holding the
same ids and questions. `--show` prints each question with the text its span slices to.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

MAX_PER_FILE = 3
SHAPE = {(kind, difficulty): n
         for kind in ("docs", "code")
         for difficulty, n in (("identifier", 4), ("paraphrase", 3), ("conceptual", 3))}


def load(path: Path) -> list[dict[str, Any]]:
    """The rag_questions list of one dataset file."""
    with open(path, encoding="utf-8") as f:
        rows: list[dict[str, Any]] = json.load(f)["rag_questions"]
    return rows


def read_text(path: Path) -> str:
    """A corpus file as ragdb reads it: UTF-8, newlines untouched."""
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def check_package(here: Path, namespace: uuid.UUID, root: Path, name: str,
                  anchors: dict[str, dict[str, str]], show: bool, word: str = "") -> list[str]:
    """Every problem found in one package's two dataset files; `word` is the name questions
    use when it is not the folder's (a Debian source package named otherwise upstream)."""
    problems: list[str] = []
    folder = here.name
    answered = load(here / "AnsweredQuestions" / f"dataset_{name}.json")
    unanswered = load(here / "UnansweredQuestions" / f"dataset_{name}.json")
    shape = collections.Counter((q["kind"], q["difficulty"]) for q in answered)
    if dict(shape) != SHAPE:
        problems.append(f"{name}: kinds/difficulties are {dict(shape)}, expected {SHAPE}")
    for path, n in collections.Counter(q["sources"][0]["file_path"] for q in answered
                                       if q["sources"]).items():
        if n > MAX_PER_FILE:
            problems.append(f"{name}: {n} questions point into {path}, at most {MAX_PER_FILE}")
    if [(q["question_id"], q["question"]) for q in unanswered] != \
            [(q["question_id"], q["question"]) for q in answered]:
        problems.append(f"{name}: the unanswered file does not mirror the answered one")
    spans: set[tuple[str, int, int]] = set()
    for q in answered:
        tag = f"{name}: {q['question'][:60]!r}"
        if q["question_id"] != str(uuid.uuid5(namespace, q["question"])):
            problems.append(f"{tag}: question_id is not uuid5(NAMESPACE, question)")
        if not re.search(rf"\b{re.escape(word or name)}s?\b", q["question"], re.IGNORECASE):
            problems.append(f"{tag}: the question does not name its package")
        if q.get("is_valid") is not True or not q.get("answer"):
            problems.append(f"{tag}: not valid or no answer")
        if len(q["sources"]) != 1:
            problems.append(f"{tag}: {len(q['sources'])} sources, expected one")
            continue
        src = q["sources"][0]
        path = src["file_path"]
        first, last = src["first_character_index"], src["last_character_index"]
        if not path.startswith(f"data/raw-{folder}/{name}/"):
            problems.append(f"{tag}: {path} is not under data/raw-{folder}/{name}/")
        if (path, first, last) in spans:
            problems.append(f"{tag}: span {path}[{first}:{last}] is used twice")
        spans.add((path, first, last))
        file = root / path
        if not file.is_file():
            problems.append(f"{tag}: {path} is missing (run benchmarks/{folder}/fetch.sh)")
            continue
        text = read_text(file)
        if not 0 <= first < last <= len(text):
            problems.append(f"{tag}: [{first}:{last}] is outside {path} ({len(text)} chars)")
            continue
        piece = text[first:last]
        if not 100 <= len(piece) <= 1500:
            problems.append(f"{tag}: span is {len(piece)} characters, outside 100-1,500")
        anchor = anchors.get(q["question_id"])
        if anchor is None:
            problems.append(f"{tag}: no quoted passage in anchors.json")
        elif not (piece.startswith(anchor["starts_with"]) and piece.endswith(anchor["ends_with"])):
            problems.append(f"{tag}: {path}[{first}:{last}] no longer slices to its passage")
        elif text.count(anchor["starts_with"]) != 1:
            problems.append(f"{tag}: the start quote occurs {text.count(anchor['starts_with'])} "
                            f"times in {path}, not once")
        if piece != piece.rstrip() or piece.startswith(("\n", "\r")):
            problems.append(f"{tag}: span starts with a blank line or ends with whitespace")
        if show:
            print(f"=== {name} {q['kind']}/{q['difficulty']} {path}[{first}:{last}]")
            print(f"Q: {q['question']}\nA: {q['answer']}\n---\n{piece}\n")
    return problems


def main(here: Path, packages: tuple[str, ...], namespace_url: str,
         words: dict[str, str] | None = None) -> int:
    """Check one set (its folder, package names and question-id namespace); exit status.
    `words` maps a package folder to the name its questions use, where the two differ."""
    parser = argparse.ArgumentParser(description=f"Check the {here.name} question sets "
                                     "against the fetched corpora (no ragdb involved).")
    parser.add_argument("--root", type=Path, default=Path("."), help="project root (default: .)")
    parser.add_argument("--show", action="store_true", help="print every question with its span")
    args = parser.parse_args()
    namespace = uuid.uuid5(uuid.NAMESPACE_URL, namespace_url)
    with open(here / "anchors.json", encoding="utf-8") as f:
        anchors: dict[str, dict[str, str]] = json.load(f)
    problems = [p for name in packages
                for p in check_package(here, namespace, args.root, name, anchors, args.show,
                                       (words or {}).get(name, ""))]
    for p in problems:
        print(f"verify.py: {p}", file=sys.stderr)
    if not problems:
        print(f"verify.py: {20 * len(packages)} questions, all spans check out")
    return 1 if problems else 0


def run(here: Path, packages: tuple[str, ...], namespace_url: str,
        words: dict[str, str] | None = None) -> None:
    """A set's verify.py: main, and `--show | head` (a reader that went away) is no error."""
    try:
        sys.exit(main(here, packages, namespace_url, words))
    except BrokenPipeError:
        sys.exit(0)
