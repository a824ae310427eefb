"""Measure citation-only extractive answers (ragdb.extractive) on the public question sets.

Retrieves k=10 hybrid sources per question (the project default), answers with the real MiniLM
embedder and prints a markdown table per question set: token F1 and content-word recall against
the reference answers, verbatim passages, valid citations, empty or path-only answers, seconds
per answer. `--grid` instead scores a few global settings on the first 50 docs questions (the
tuning half), with embeddings memoised so the grid is cheap; its timings mean nothing.

    uv run --frozen python -m benchmarks.bench_extractive
    uv run --frozen python -m benchmarks.bench_extractive --grid
"""

from __future__ import annotations

import argparse
import itertools
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from benchmarks.bench_answer import token_f1
from benchmarks.common import (REPOS_DB, REPOS_SET, VLLM_DB, dataset, reference_answers,
                               repo_questions)
from ragdb import RagDB
from ragdb.generate import extractive
from ragdb.walking import language_of
from ragdb.generate.extractive import Passage, SourceText
from ragdb.generate.passage_choice import Settings
from ragdb.retrieve import Hit, Mode
from ragdb.schemas import RagDataset
from ragdb.tokenize import STOPWORDS

K = 10
_WORD = re.compile(r"\w+")
_CITE = re.compile(r"\[(\d+)\]$")
_PATH_LINE = re.compile(r"^[\w.\-/]+\.(py|md|rst|txt|toml|cfg|yaml|yml|json|sh)$")
# Glue on top of the search stopwords: reference answers say "vllm" in almost every one.
CONTENT_STOP = STOPWORDS | {"vllm", "s", "t", "e", "g", "etc", "via", "one", "two"}


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - CONTENT_STOP


def sources_of(hits: Sequence[Hit]) -> list[SourceText]:
    """The hits as the extractive answerer numbers them; kind is the file kind when known."""
    return [SourceText(n, h.file_path, language_of(h.file_path) or h.kind, h.text)
            for n, h in enumerate(hits, 1)]


@dataclass
class Row:
    f1: float
    recall: float
    passages: int
    verbatim: int
    cites: int
    valid: int
    empty: bool
    paths_only: bool
    seconds: float
    chars: int


def measure(question: str, reference: str, sources: list[SourceText],
            embed: extractive.Embed | None, settings: Settings) -> Row:
    started = time.perf_counter()
    result = extractive.answer(question, sources, embed, settings=settings)
    seconds = time.perf_counter() - started
    text = result.text
    verbatim = sum(_verbatim(p, sources, text) for p in result.passages)
    pieces = list(extractive.compose_pieces(result.passages))
    numbers = [int(m.group(1)) for m in (_CITE.search(p.rstrip()) for p in pieces) if m]
    valid = sum(1 for n in numbers if 1 <= n <= len(sources))
    body = [line for line in re.sub(r"\[\d+\]", "", text).splitlines() if line.strip()]
    paths_only = bool(body) and all(_PATH_LINE.match(line.strip()) for line in body)
    want = content_words(reference)
    recall = len(want & content_words(text)) / len(want) if want else 1.0
    return Row(token_f1(text, reference), recall, len(result.passages), verbatim, len(numbers),
               valid, not text.strip(), paths_only, seconds, len(text))


def _verbatim(passage: Passage, sources: list[SourceText], answer: str) -> bool:
    """The passage is its source's span (its signature lines too) and the answer shows it
    (cleaned) as it is."""
    if not 1 <= passage.number <= len(sources):
        return False
    source = sources[passage.number - 1]
    if source.text[passage.start:passage.end] != passage.text:
        return False
    if any(source.text[start:start + len(line)] != line for start, line in passage.context):
        return False  # a signature line shown before a code window is a source line too
    piece = next(extractive.compose_pieces([passage]))
    return piece in answer


def summary(rows: Sequence[Row]) -> dict[str, float]:
    seconds = sorted(r.seconds for r in rows)
    n = len(rows)
    return {
        "n": n,
        "f1": statistics.mean(r.f1 for r in rows),
        "recall": statistics.mean(r.recall for r in rows),
        "passages": statistics.mean(r.passages for r in rows),
        "chars": statistics.mean(r.chars for r in rows),
        "verbatim": sum(r.verbatim for r in rows) / max(1, sum(r.passages for r in rows)),
        "valid": sum(r.valid for r in rows) / max(1, sum(r.cites for r in rows)),
        "empty": sum(r.empty for r in rows),
        "paths_only": sum(r.paths_only for r in rows),
        "p50": statistics.median(seconds),
        "p95": seconds[min(n - 1, int(0.95 * n))],
        "sum": sum(seconds),
    }


def load_set(name: str) -> tuple[list[str], list[str]]:
    data = RagDataset.model_validate_json(dataset(name).read_text())
    return [q.question for q in data.rag_questions], [q.answer for q in data.rag_questions]


def memoised(embed: extractive.Embed) -> extractive.Embed:
    """Same vectors, each text embedded once: for the grid only (its timings are void)."""
    cache: dict[str, np.ndarray] = {}

    def run(texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        if todo:
            for t, v in zip(todo, embed(todo)):
                cache[t] = v
        return np.stack([cache[t] for t in texts])

    return run


def grid(searcher: RagDB, embed: extractive.Embed, base: Settings) -> None:
    """A few global knobs on the first 50 docs questions; the last 50 are not looked at."""
    questions, answers = load_set("docs")
    questions, answers = questions[:50], answers[:50]
    found = [sources_of(h) for h in searcher.search_many(questions, K, Mode.hybrid)]
    cached = memoised(embed)
    space: dict[str, list[float]] = {
        # Rounds 1 and 2 (EXTRACTIVE.md) settled lexical_weight, max_passages, rank_decay,
        # min_relative and embed_limit; this round measures length.
        "max_chars": [400, 700, 1000],
        "soft_chars": [200, 300, 450],
    }
    results = []
    names = list(space)
    for values in itertools.product(*(space[n] for n in names)):
        settings = replace(base, **dict(zip(names, values)))  # type: ignore[arg-type]
        rows = [measure(q, a, s, cached, settings) for q, a, s in zip(questions, answers, found)]
        got = summary(rows)
        results.append((got["f1"], got["recall"], dict(zip(names, values))))
    results.sort(key=lambda r: -r[0])
    print("| F1 (first 50) | recall | settings |\n|---|---|---|")
    for f1, recall, setting in results[:15]:
        print(f"| {f1:.3f} | {recall:.3f} | {setting} |")
    print(f"\n{len(results)} settings tried; worst F1 {results[-1][0]:.3f}")


def _parse_settings(pairs: Sequence[str]) -> Settings:
    kinds = {f.name: f.type for f in fields(Settings)}
    changes: dict[str, float | int] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name not in kinds:
            sys.exit(f"unknown setting {name!r}; known: {', '.join(kinds)}")
        changes[name] = int(value) if kinds[name] in ("int", int) else float(value)
    return replace(Settings(), **changes)  # type: ignore[arg-type]


def _row(label: str, got: dict[str, float], start_s: float) -> str:
    return (f"| {label} | {got['n']:.0f} | {got['f1']:.3f} | {got['recall']:.3f} | "
            f"{got['passages']:.2f} | {got['chars']:.0f} | {got['verbatim']:.0%} | "
            f"{got['valid']:.0%} | {got['empty']:.0f} | {got['paths_only']:.0f} | "
            f"{got['p50']:.3f} / {got['p95']:.3f} | {got['sum'] + start_s:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, default=VLLM_DB)
    parser.add_argument("--repos", type=Path, default=REPOS_DB,
                        help="the four-repository index (bench_repos.py); skipped if absent")
    parser.add_argument("--grid", action="store_true")
    parser.add_argument("--no-embed", action="store_true", help="BM25 alone")
    parser.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    settings = _parse_settings(args.set)
    searcher = RagDB(args.db)

    started = time.perf_counter()
    embed: extractive.Embed | None = None
    if not args.no_embed:
        embed = searcher.embedder.embed
        embed(["warm up"])
    load_s = time.perf_counter() - started
    if args.grid:
        assert embed is not None, "--grid needs the embedder"
        grid(searcher, embed, settings)
        return

    print(f"settings: {settings}")
    print(f"embedder load: {load_s:.1f} s; k={K} hybrid sources\n")
    print("| set | n | token F1 | content-word recall | passages | answer chars | verbatim "
          "passages | valid citations | empty | only paths | s/answer p50 / p95 | total s "
          "(incl. load) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    run: Callable[[str, str, list[SourceText]], Row] = (
        lambda q, a, s: measure(q, a, s, embed, settings))
    for name in ("docs", "code"):
        questions, answers = load_set(name)
        found = [sources_of(h) for h in searcher.search_many(questions, K, Mode.hybrid)]
        rows = [run(q, a, s) for q, a, s in zip(questions, answers, found)]
        if name == "docs":
            print(_row("docs, first 50 (tuning)", summary(rows[:50]), 0.0))
            print(_row("docs, last 50 (held out)", summary(rows[50:]), 0.0))
            print(_row("docs, all 100", summary(rows), load_s))
        else:
            # bench_accept's sample takes every fifth code question from the first and from
            # the third: those are held out; the others are the code tuning questions.
            held = [r for i, r in enumerate(rows) if i % 5 in (0, 2)]
            tuning = [r for i, r in enumerate(rows) if i % 5 not in (0, 2)]
            print(_row(f"code, tuning {len(tuning)}", summary(tuning), 0.0))
            print(_row(f"code, held out {len(held)} (accept sample)", summary(held), 0.0))
            print(_row(f"code, all {len(rows)}", summary(rows), 0.0))
    if args.repos.exists():
        repos(args.repos, run)


def repos(db: Path, run: Callable[[str, str, list[SourceText]], Row]) -> None:
    """The four other repositories' questions (benchmarks/bench_repos.py), by half: A is
    where settings were chosen, B is held out (bench_accept's sample)."""
    answers = reference_answers((REPOS_SET,))
    questions = repo_questions()
    with RagDB(db, use_cache=False) as rag:
        found = [sources_of(h) for h in rag.search_many([q.question for q in questions], K,
                                                        Mode.hybrid)]
        # The repository index's own language of an extension-less file, as answers use.
        found = [[SourceText(s.number, s.file_path, rag._language_of(s.file_path), s.text)
                  for s in sources] for sources in found]
    rows: dict[str, list[Row]] = {"A": [], "B": []}
    for question, sources in zip(questions, found):
        rows[question.half].append(run(question.question, answers[question.question_id],
                                       sources))
    print(_row("repos, half A (tuning)", summary(rows["A"]), 0.0))
    print(_row("repos, half B (held out)", summary(rows["B"]), 0.0))


if __name__ == "__main__":
    main()
