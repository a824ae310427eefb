"""Reranking quality (issue 40): does a reranker lift R@1/5/10 over the fused order, on sets
nobody trained or tuned on? Speed is benchmarks/bench_rerank.py.

    uv run --frozen python -m benchmarks.bench_rerank_quality score --reranker FOLDER|NAME
    uv run --frozen python -m benchmarks.bench_rerank_quality report --reranker FOLDER|NAME

`score` searches every question of the vLLM public sets, the shared repos set and the held-out
repos2, repos3 and repos4 once (hybrid, rerank off, the fused top 30), scores each (question,
candidate) pair with the reranker as the search would (ragdb.rerank.passage, its context),
and saves the fused ranks and the scores to data/bench/rerank/SCORES.json (one file a
reranker), so `report` weighs combinations without scoring again.

`report` compares the fused order, the reranker's order alone and RRF of the two
(ragdb.rerank.combined_score) at a few weights. Questions are split in two halves by a hash of
their id: the combination is chosen on half A, pooled over every set, and half B is reported
beside it; the ceiling (the answer among the 30 the reranker sees) is printed with each set.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.bench_rerank import candidate_passages
from benchmarks.common import (BENCH_DIR, CUTS, Question, evaluated_sets, first_rank,
                               host_line, recall)
from ragdb import RagDB
from ragdb.rerank import RerankParams, Reranking, combined_score
from ragdb.retrieve import Mode, Searcher

OUT = BENCH_DIR / "rerank"
DEPTH = 30
#: The combinations `report` compares: (label, order, weight).
COMBINATIONS = (("fused", "", 0.0), ("reranker alone", "reranker", 1.0),
                ("rrf w 0.5", "rrf", 0.5), ("rrf w 1", "rrf", 1.0), ("rrf w 2", "rrf", 2.0))


def half(question: Question) -> str:
    """A or B, by a hash of the question's id: stable, and blind to how it ranks."""
    return "AB"[int(hashlib.sha256(question.question_id.encode()).hexdigest(), 16) % 2]


def scores_path(reranker: str) -> Path:
    """One scores file a reranker, named from its spec."""
    return OUT / (re.sub(r"[^A-Za-z0-9_.-]+", "_", reranker.strip("/")) + ".json")


def score(reranker: str, max_tokens: int, only: Sequence[str] = ()) -> Path:
    """Fused top 30 and the reranker's score of each candidate, for every question."""
    stage = Reranking(reranker, RerankParams(depth=DEPTH, max_tokens=max_tokens))
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for name, db, questions in evaluated_sets(only):
        with RagDB(db, use_cache=False, rerank=False) as rag:
            searcher = Searcher(rag.conn, use_cache=False)
            found = searcher.search_many([q.question for q in questions], DEPTH, Mode.hybrid)
            for question, hits in zip(questions, found):
                texts = candidate_passages(rag.conn, hits)
                matches = [first_rank(question, [h]) == 1 for h in hits]
                rows.append({"set": name, "kind": question.kind, "id": question.question_id,
                             "difficulty": question.difficulty, "half": half(question),
                             "matches": matches,
                             "scores": stage.score(question.question, texts) if texts else []})
        print(f"score: {name}: {len(questions)} questions "
              f"({time.perf_counter() - started:.0f} s so far)", flush=True)
    out = scores_path(reranker)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"reranker": reranker, "identity": stage.identity,
                               "max_tokens": max_tokens, "depth": DEPTH, "host": host_line(),
                               "date": time.strftime("%Y-%m-%d"), "rows": rows}))
    return out


def rank_after(row: dict[str, Any], order: str, weight: float) -> int | None:
    """The answer's rank (1-based) after one combination; None past the 30 or absent."""
    matches: list[bool] = row["matches"]
    if not order:
        final = list(range(len(matches)))
    else:
        scores: list[float] = row["scores"]
        by_model = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        model_rank = {i: r for r, i in enumerate(by_model, 1)}
        params = RerankParams(order=order, weight=weight)
        final = sorted(range(len(matches)),
                       key=lambda i: (-combined_score(i + 1, model_rank[i], params), i))
    for rank, i in enumerate(final, 1):
        if matches[i]:
            return rank
    return None


def cells(ranks: Sequence[int | None]) -> str:
    """R@1/5/10."""
    return "/".join(f"{recall(ranks, cut):.3f}" for cut in CUTS)


def report(reranker: str) -> None:
    """The comparison table: per set and kind, half B; the choice made on half A."""
    data = json.loads(scores_path(reranker).read_text())
    rows: list[dict[str, Any]] = data["rows"]
    print(f"reranker {data['reranker']} ({data['identity']}), {data['max_tokens']} tokens, "
          f"scored {data['date']} on {data['host']}\n")
    pooled_a = {label: [rank_after(r, order, w) for r in rows if r["half"] == "A"]
                for label, order, w in COMBINATIONS}
    chosen = max(COMBINATIONS[1:], key=lambda c: (recall(pooled_a[c[0]], 5),
                                                  recall(pooled_a[c[0]], 1)))
    print("half A (choose here), pooled: " + "; ".join(
        f"{label} {cells(ranks)}" for label, ranks in pooled_a.items()))
    print(f"best combination on half A: {chosen[0]}\n")
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[f"{row['set']} {row['kind']}"].append(row)
        groups[f"all {row['kind']}"].append(row)
        if row["set"] != "vllm" and row["set"] != "repos":
            groups[f"unseen {row['kind']}"].append(row)
    header = " | ".join(label for label, _, _ in COMBINATIONS)
    for which in ("B", "AB"):
        print(f"\nhalf {which}: R@1/5/10 | ceiling (in the 30)\n")
        print(f"| set kind | n | {header} | ceiling |\n|---|---|" + "---|" * len(COMBINATIONS)
              + "---|")
        for group, members in sorted(groups.items()):
            picked = [r for r in members if r["half"] in which]
            line = " | ".join(cells([rank_after(r, order, w) for r in picked])
                              for _, order, w in COMBINATIONS)
            ceiling = sum(any(r["matches"]) for r in picked) / (len(picked) or 1)
            print(f"| {group} | {len(picked)} | {line} | {ceiling:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["score", "report"])
    parser.add_argument("--reranker", required=True, help="a cross-encoder folder or hub name")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--sets", nargs="*", default=(),
                        help="vllm, repos, repos2, repos3, repos4 (default: every built one)")
    args = parser.parse_args()
    if args.action == "score":
        print(f"score: saved {score(args.reranker, args.max_tokens, args.sets)}")
    report(args.reranker)


if __name__ == "__main__":
    main()
