"""`make bench-answer`: answer the public docs questions from their hybrid search results.

Reports model load time, first-token latency and seconds per answer (p50/p95), the share of
answers citing at least one source, the share of citations that are valid, the share of cited
sources that contain the reference span (same file, IoU > 0.05) and token F1 against the
reference answers. Needs `make bench` (or `ragdb index`) to have built data/bench/rag.db.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections import Counter
from pathlib import Path

from benchmarks.common import BENCH_DIR, dataset, host_line, percentile
from ragdb import RagDB, evaluate
from ragdb.retrieve import Mode
from ragdb.schemas import MinimalSource, RagDataset

_WORD = re.compile(r"\w+")


def token_f1(answer: str, reference: str) -> float:
    """SQuAD-style token F1: a crude but honest overlap with the reference answer."""
    got = Counter(w.lower() for w in _WORD.findall(answer))
    want = Counter(w.lower() for w in _WORD.findall(reference))
    common = sum((got & want).values())
    if not common:
        return 0.0
    precision, recall = common / sum(got.values()), common / sum(want.values())
    return 2 * precision * recall / (precision + recall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, default=BENCH_DIR / "rag.db")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--model", default=None)
    args = parser.parse_args()
    data = RagDataset.model_validate_json(dataset("docs").read_text())
    questions = data.rag_questions[: args.limit]
    rag = RagDB(args.db, model=args.model)
    found = rag.search_many([q.question for q in questions], args.k, Mode.hybrid)

    started = time.perf_counter()
    model = rag.generator().model
    load_s = time.perf_counter() - started

    totals, firsts, f1s = [], [], []
    citing = valid = cited_total = cited_sources = cited_holding = 0
    for question, hits in zip(questions, found):
        result = rag.answer_from(question.question, hits, k=args.k, mode=Mode.hybrid)
        totals.append(result.timings.get("total_s", 0.0))
        firsts.append(result.timings.get("first_token_s", 0.0))
        f1s.append(token_f1(result.text, question.answer))
        numbers = [int(n) for n in re.findall(r"\[(\d+)\]", result.text)]
        valid += sum(1 for n in numbers if 1 <= n <= len(result.prompt_sources))
        cited_total += len(numbers)
        citing += bool(result.cited)
        cited_sources += len(result.cited)
        for n in result.cited:
            source = result.prompt_sources[n - 1]
            got = MinimalSource(file_path=source.file_path, first_character_index=source.first,
                                last_character_index=source.last)
            cited_holding += any(evaluate.iou(ref, got) > evaluate.IOU_THRESHOLD
                                 for ref in question.sources)
    n = len(questions)

    print(host_line())
    print(f"model: {model}; {n} docs questions, k={args.k}, hybrid sources")
    print("\n| measure | value |\n|---|---|")
    print(f"| model load | {load_s:.1f} s |")
    print(f"| first token p50 | {statistics.median(firsts):.2f} s |")
    print(f"| seconds per answer p50 / p95 | {statistics.median(totals):.2f} / "
          f"{percentile(totals, 0.95):.2f} s |")
    print(f"| answers citing at least one source | {citing / n:.0%} |")
    print(f"| citations naming a given source | "
          f"{(valid / cited_total if cited_total else 1.0):.0%} |")
    print(f"| cited sources holding the reference span | "
          f"{cited_holding / max(1, cited_sources):.0%} |")
    print(f"| token F1 vs reference answers (mean) | {statistics.mean(f1s):.3f} |")


if __name__ == "__main__":
    main()
