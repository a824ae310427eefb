"""Stage 4: what the reranker will be shown: ragdb's own top N for every training question.

    python -m training.candidates [--depth 30] [--mode hybrid|lexical]

For each question of `training/data/questions.jsonl`, its package's index (stage 2) is searched
as a user's would be, through `RagDB.search_many`, and the first `depth` chunks are written to
`data/train/candidates.jsonl` with the rank of the chunk the question was written for (None:
not among them). That rank is also the ceiling any reordering of the list can reach, reported
by language and source at the end. Hybrid needs the package's vectors (`training.index
--vectors`); without them a search falls back as ragdb's does and the report says which mode ran.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from ragdb import RagDB
from ragdb.retrieve import Hit, Mode
from training.questions import QuestionRecord, read_records

INDEXES = Path("data/train/index")
CANDIDATES = Path("data/train/candidates.jsonl")


def answer_rank(record: QuestionRecord, hits: list[Hit]) -> int | None:
    """1-based rank of the chunk the question was written for: the same file and an
    overlapping character range (a chunk re-cut by a later chunker still counts)."""
    for rank, hit in enumerate(hits, start=1):
        if hit.file_path == record.path and hit.first < record.last_char \
                and record.first_char < hit.last:
            return rank
    return None


def candidate_row(hit: Hit) -> dict[str, Any]:
    """What training needs of one candidate: where it is, its kind and fused score."""
    return {"path": hit.file_path, "first_char": hit.first, "last_char": hit.last,
            "start_line": hit.start_line, "end_line": hit.end_line, "kind": hit.kind,
            "language": hit.language, "score": hit.score}


def build(depth: int, mode: Mode, out: Path = CANDIDATES,
          records: list[QuestionRecord] | None = None) -> dict[str, list[int | None]]:
    """Every question's candidates (the questions file's, or `records`), package by package
    (one index open at a time)."""
    by_package: dict[str, list[QuestionRecord]] = defaultdict(list)
    for record in read_records() if records is None else records:
        by_package[record.package].append(record)
    ranks: dict[str, list[int | None]] = defaultdict(list)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for package, records in sorted(by_package.items()):
            db = INDEXES / f"{package}.db"
            if not db.is_file():
                print(f"candidates: {package}: no index (python -m training.index)",
                      file=sys.stderr)
                continue
            with RagDB(db, use_cache=False) as rag:
                found = rag.search_many([r.question for r in records], depth, mode)
            for record, hits in zip(records, found):
                rank = answer_rank(record, hits)
                ranks[f"{record.language}/{record.source}"].append(rank)
                handle.write(json.dumps({"question": record.question, "package": package,
                                         "source": record.source, "answer_rank": rank,
                                         "candidates": [candidate_row(h) for h in hits]}) + "\n")
            print(f"candidates: {package}: {len(records)} questions", flush=True)
    return ranks


def report(ranks: dict[str, list[int | None]], depth: int) -> str:
    """Recall at 1, 5 and `depth` by language and source: the reranker's ceiling is the last."""
    lines = [f"| language/source | n | R@1 | R@5 | R@{depth} |", "|---|---|---|---|---|"]
    everything: list[int | None] = []
    for group, found in sorted(ranks.items()) + [("all", everything)]:
        if group != "all":
            everything.extend(found)
        n = len(found) or 1
        cells = [sum(1 for r in found if r is not None and r <= cut) / n for cut in (1, 5, depth)]
        lines.append(f"| {group} | {len(found)} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Build the candidates file and print the recall table."""
    parser = argparse.ArgumentParser(prog="python -m training.candidates",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--depth", type=int, default=30)
    parser.add_argument("--mode", default="hybrid", choices=[m.value for m in Mode])
    args = parser.parse_args(argv)
    ranks = build(args.depth, Mode(args.mode))
    print(report(ranks, args.depth))
    return 0


if __name__ == "__main__":
    sys.exit(main())
