"""Which files two versions of the credential rules (ragdb/secret_files.py) leave out, and what
their content check costs: a new rule must catch real credentials without leaving out the
samples a corpus's docs and tests show, and a question's reference must stay indexed.

Every file under the roots is walked (hidden and ignored ones too, symlinks to files judged
as the index run judges them) and given a verdict as the index run gives one: `secret_name`
first, else `secret_by_content` for a UTF-8 text file of 4 MiB or less (reading.read_text).
The old rules are `git show REV:ragdb/secret_files.py`, imported by path; the new ones are
this checkout's (or `--new REV`). Each file whose verdict differs is printed with the line
that triggers it (values that look real masked to their first 3 characters), then the
counts, the question references among the differing files, and the CPU time of the content
check (time.process_time, files read beforehand, best of `--repeat` alternating runs).

    uv run --frozen python -m benchmarks.bench_secret_verdicts --old 17043e1 \\
        data/raw data/raw-repos data/raw-repos2 data/raw-repos3 data/raw-repos4 \\
        data/raw-repos5 data/raw-repos6 data/raw-repos7
    uv run --frozen python -m benchmarks.bench_secret_verdicts --old 17043e1 data/train/raw
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

from benchmarks.common import host_line
from ragdb.reading import read_text

#: Where the question sets are, relative to the project root: their references must stay in.
QUESTION_GLOBS = ("../shared/datasets/repos/AnsweredQuestions/*.json",
                  "../shared/datasets/public/AnsweredQuestions/*.json",
                  "benchmarks/repos*/AnsweredQuestions/*.json",
                  "training/data/*.jsonl")
#: A token that may be a credential's value: 8 characters or more holding a letter and a digit
#: (masked to its first 3 characters when printed).
_REAL_LOOKING = re.compile(r"(?=[^\s\"'<>=:;,{}]*[A-Za-z])(?=[^\s\"'<>=:;,{}]*\d)"
                           r"[^\s\"'<>=:;,{}]{8,}")
#: ODBC's braced password (`Pwd={Xk9;mQ2vLp}`), which may hold `;` and so escapes the above.
_BRACED = re.compile(r"(?i)((?:pwd|password)[ \t]*=[ \t]*\{)([^}\n]{3})[^}\n]*\}")


def rules_at(rev: str) -> ModuleType:
    """secret_files.py as of git revision `rev`, imported by path (its imports are this
    checkout's ragdb, as the module was a pure move of walking.py's rules)."""
    source = subprocess.run(["git", "show", f"{rev}:ragdb/secret_files.py"], check=True,
                            capture_output=True, text=True).stdout
    folder = tempfile.mkdtemp(prefix="secret_rules_")
    path = os.path.join(folder, f"secret_files_{rev}.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location(f"secret_files_{rev}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def current_rules() -> ModuleType:
    """This checkout's rules."""
    from ragdb import secret_files
    return secret_files


def walk(root: str) -> Iterator[Path]:
    """Every file under root (hidden, ignored and symlinked files alike), sorted."""
    for top, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            yield Path(top, name)


def verdict(rules: ModuleType, path: Path, text: str | None) -> str:
    """'name', 'content' or '' (kept), as the index run judges the file."""
    if rules.secret_name(path.name):
        return "name"
    if text is not None and rules.secret_by_content(path, text):
        return "content"
    return ""


def trigger(rules: ModuleType, path: Path, text: str) -> str:
    """The first line (or the shortest run of up to 4 lines) on which `rules` alone find a
    credential: what made the file a secret."""
    lines = text.splitlines()
    for width in range(1, 5):
        for i in range(len(lines) - width + 1):
            piece = "\n".join(lines[i:i + width])
            if rules.secret_by_content(path, piece):
                return f"line {i + 1}: {piece.strip()[:200]!r}"
    return "(no single stretch of lines: the whole file)"


def mask(line: str) -> str:
    """Real-looking values cut to their first 3 characters."""
    line = _BRACED.sub(lambda m: m[1] + m[2] + "...}", line)
    return _REAL_LOOKING.sub(lambda m: m[0][:3] + "...", line)


def question_paths() -> set[str]:
    """Every file a question's reference cites (the project root's relative paths)."""
    cited: set[str] = set()
    for pattern in QUESTION_GLOBS:
        for name in glob.glob(pattern):
            with open(name, encoding="utf-8") as handle:
                if name.endswith(".jsonl"):
                    rows = [json.loads(line) for line in handle if line.strip()]
                    # `path` is the asked-about chunk's file (`callee` names a symbol)
                    cited.update(str(row["path"]) for row in rows if row.get("path"))
                else:
                    for question in json.load(handle).get("rag_questions", []):
                        cited.update(str(s["file_path"]) for s in question.get("sources", []))
    return cited


def best_time(check: Callable[[Path, str], bool], texts: list[tuple[Path, str]]) -> float:
    """CPU seconds of one pass of the content check over texts."""
    start = time.process_time()
    for path, text in texts:
        check(path, text)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", help="folders to walk (one corpus group)")
    parser.add_argument("--old", required=True, help="git revision of the old rules")
    parser.add_argument("--new", help="git revision of the new rules (default: this checkout)")
    parser.add_argument("--repeat", type=int, default=3, help="timing runs of each version")
    parser.add_argument("--no-mask", action="store_true", help="print values whole")
    args = parser.parse_args()
    old = rules_at(args.old)
    new = rules_at(args.new) if args.new else current_rules()

    walked = 0
    texts: list[tuple[Path, str]] = []  # what the content check reads (not a secret by name)
    differ: list[tuple[Path, str, str, str]] = []
    secrets = [0, 0]
    for root in args.roots:
        for path in walk(root):
            walked += 1
            text, _raw, _reason = read_text(path)
            before, after = verdict(old, path, text), verdict(new, path, text)
            secrets[0] += bool(before)
            secrets[1] += bool(after)
            if text is not None and not old.secret_name(path.name):
                texts.append((path, text))
            if before != after:
                judged = new if after else old
                line = trigger(judged, path, text) if text is not None else "(by name)"
                differ.append((path, before or "kept", after or "kept",
                               line if args.no_mask else mask(line)))

    cited = question_paths()
    for path, before, after, line in differ:
        rel = os.path.relpath(path)
        flag = "  CITED BY A QUESTION" if rel in cited else ""
        print(f"{rel}: {before} -> {after}{flag}\n    {line}")
    print(f"{walked} files walked, {len(texts)} read by content; secrets: {secrets[0]} old, "
          f"{secrets[1]} new; {len(differ)} differ; "
          f"{sum(os.path.relpath(p) in cited for p, *_ in differ)} of them cited by a question")

    times: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(args.repeat):
        times["old"].append(best_time(old.secret_by_content, texts))
        times["new"].append(best_time(new.secret_by_content, texts))
    print(f"content check, CPU s (best of {args.repeat}): old {min(times['old']):.2f}, "
          f"new {min(times['new']):.2f} (all: old "
          f"{' '.join(f'{t:.2f}' for t in times['old'])}; new "
          f"{' '.join(f'{t:.2f}' for t in times['new'])})")
    print(host_line())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
