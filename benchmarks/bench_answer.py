"""`make bench-answer`: answer the public docs questions from their hybrid search results.

Goes through `RagDB.answer_from`, exactly as `ragdb answer` does, with `--style` auto (the
default: the blocks alone where only the small offline model exists), extractive (the blocks)
or generate (a model's checked sentences above them), and reports against the reference
answers: token F1, reference content-word recall, the share of blocks whose lines are their
file's lines at their numbers (re-read from the files the index was built from), valid
citations, answers citing a source, cited sources holding the reference span (same file, IoU >
0.05), empty and path-only answers, for written answers what the claim check kept and dropped,
and seconds per answer (p50 / p95, and the whole run including start-up, divided by the number
of questions). Needs data/bench/rag.db (`make bench --quick` builds it).
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import VLLM_DB, dataset, host_line, percentile
from ragdb import RagDB, evaluate
from ragdb.generate.style import Style
from ragdb.retrieve import Mode
from ragdb.schemas import MinimalSource, RagDataset
from ragdb.tokenize import STOPWORDS

_WORD = re.compile(r"\w+")
# A citation is a bracketed number not glued to code (`shape[1]`, `x[0]` are not citations).
_CITATION = re.compile(r"(?<![\w\]\)])\[(\d{1,3})\]")
_PATH_LINE = re.compile(r"^[\w.\-/]+\.(py|md|rst|txt|toml|cfg|yaml|yml|json|sh)(:\d+-\d+)?$")
# Reference answers say "vllm" in almost every one: it carries no content.
CONTENT_STOP = STOPWORDS | {"vllm", "s", "t", "e", "g", "etc", "via", "one", "two"}


def token_f1(answer: str, reference: str) -> float:
    """SQuAD-style token F1: a crude but honest overlap with the reference answer."""
    got = Counter(w.lower() for w in _WORD.findall(answer))
    want = Counter(w.lower() for w in _WORD.findall(reference))
    common = sum((got & want).values())
    if not common:
        return 0.0
    precision, recall = common / sum(got.values()), common / sum(want.values())
    return 2 * precision * recall / (precision + recall)


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - CONTENT_STOP


def blocks_verbatim(rag: RagDB, result: Any) -> tuple[int, int]:
    """(blocks whose lines are their file's lines at their numbers, blocks shown): each file
    re-read where the index was built, as the answer read it (ragdb.source_files)."""
    from ragdb.source_files import SourceFiles

    files = SourceFiles(rag.conn)
    found = total = 0
    for block in (result.shown or {}).get("blocks", []):
        total += 1
        located = files(result.prompt_sources[block["n"] - 1])
        if located.text is None:
            continue
        lines = located.text.split("\n")[block["start_line"] - 1:block["end_line"]]
        shown = result.text.split("\n")
        found += all(line.strip() in {x.strip() for x in shown} for line in lines)
    return found, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, default=VLLM_DB)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--set", default="docs", choices=("docs", "code"))
    parser.add_argument("--model", default=None)
    parser.add_argument("--style", default=Style.auto.value, choices=[s.value for s in Style])
    args = parser.parse_args()
    run_started = time.perf_counter()
    data = RagDataset.model_validate_json(dataset(args.set).read_text())
    questions = data.rag_questions[: args.limit]
    rag = RagDB(args.db, model=args.model)
    found = rag.search_many([q.question for q in questions], args.k, Mode.hybrid)

    started = time.perf_counter()
    answerer = rag.answerer(args.style)
    load_s = time.perf_counter() - started

    totals, firsts, f1s, recalls = [], [], [], []
    citing = valid = cited_total = cited_sources = cited_holding = 0
    verbatim = blocks = empty = paths_only = 0
    checked = fallbacks = written = kept = 0
    for question, hits in zip(questions, found):
        result = rag.answer_from(question.question, hits, k=args.k, mode=Mode.hybrid,
                                 style=args.style)
        if result.check is not None:  # a written answer and its claim check
            checked += 1
            fallbacks += bool(result.check["fallback"])
            written += result.check["sentences"]
            kept += result.check["kept"]
        totals.append(result.timings.get("total_s", 0.0))
        firsts.append(result.timings.get("first_token_s", 0.0))
        f1s.append(token_f1(result.text, question.answer))
        want = content_words(question.answer)
        recalls.append(len(want & content_words(result.text)) / len(want) if want else 1.0)
        numbers = [int(n) for n in _CITATION.findall(result.text)]
        valid += sum(1 for n in numbers if 1 <= n <= len(result.prompt_sources))
        cited_total += len(numbers)
        citing += bool(result.cited)
        cited_sources += len(result.cited)
        got, total = blocks_verbatim(rag, result)
        verbatim, blocks = verbatim + got, blocks + total
        body = [line for line in _CITATION.sub("", result.text).splitlines() if line.strip()]
        empty += not body
        paths_only += bool(body) and all(_PATH_LINE.match(line.strip()) for line in body)
        for n in result.cited:
            source = result.prompt_sources[n - 1]
            got_source = MinimalSource(file_path=source.file_path,
                                       first_character_index=source.first,
                                       last_character_index=source.last)
            cited_holding += any(evaluate.iou(ref, got_source) > evaluate.IOU_THRESHOLD
                                 for ref in question.sources)
    n = len(questions)
    wall = time.perf_counter() - run_started

    print(host_line())
    print(f"answers by: {answerer.model} (--style {args.style}); {n} {args.set} questions, "
          f"k={args.k}, hybrid sources")
    print("\n| measure | value |\n|---|---|")
    print(f"| token F1 vs reference answers (mean) | {statistics.mean(f1s):.3f} |")
    print(f"| reference content-word recall (mean) | {statistics.mean(recalls):.3f} |")
    print(f"| blocks whose lines are their file's, at their numbers | "
          f"{verbatim} / {blocks} |")
    print(f"| citations naming a given source | "
          f"{(valid / cited_total if cited_total else 1.0):.0%} |")
    print(f"| answers citing at least one source | {citing / n:.0%} |")
    print(f"| cited sources holding the reference span | "
          f"{cited_holding / max(1, cited_sources):.0%} |")
    print(f"| empty answers / answers that are only paths | {empty} / {paths_only} |")
    print(f"| answerer load (the model; nothing for the blocks) | {load_s:.1f} s |")
    if checked:
        print(f"| written answers kept after the check / fell back to the blocks alone | "
              f"{checked - fallbacks} / {fallbacks} |")
        print(f"| written sentences kept / dropped | {kept} / {written - kept} |")
    print(f"| first block or token p50 / p95 | {statistics.median(firsts):.2f} / "
          f"{percentile(firsts, 0.95):.2f} s |")
    print(f"| seconds per answer p50 / p95 | {statistics.median(totals):.2f} / "
          f"{percentile(totals, 0.95):.2f} s |")
    print(f"| whole run incl. start-up and search, per answer | {wall / n:.2f} s |")


if __name__ == "__main__":
    main()
