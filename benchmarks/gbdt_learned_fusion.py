"""Issue 40, learned fusion round 2, a diagnostic: does a non-linear ranker (LightGBM's
lambdarank, a small GBDT) over the same columns as bench_learned_correction beat its linear
listwise scorer, leave one set out, unconstrained and without the result-order rules? Not
expressible as one weighted sum in SQL, so never shipped; benchmark-only, never a ragdb
dependency: lightgbm is installed into data/train/venv, which runs it.

    uv run --frozen python -m benchmarks.bench_learned_correction dump
    data/train/venv/bin/python -m pip install lightgbm==4.7.0
    data/train/venv/bin/python benchmarks/gbdt_learned_fusion.py

The GBDT's settings, fixed before any reading: at most 7 leaves, 200 trees, rate 0.05,
at least 50 candidates a leaf, lambdarank's defaults otherwise.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

DESIGN = "data/bench/learned/design.npz"
FOLDS = ("vllm-code", "vllm-docs", "repos", "repos2", "repos3", "repos4")
UNSEEN = ("repos2", "repos3", "repos4")
PARAMS = {"objective": "lambdarank", "num_leaves": 7, "learning_rate": 0.05,
          "min_data_in_leaf": 50, "verbose": -1, "num_threads": 1, "seed": 40}
TREES = 200


def first_ranks(scores: np.ndarray, y: np.ndarray, starts: np.ndarray,
                sizes: np.ndarray) -> np.ndarray:
    """Each question's first relevant rank in the top 10 by score (0: none)."""
    out = np.zeros(len(sizes), int)
    for i, (start, size) in enumerate(zip(starts, sizes)):
        order = np.argsort(-scores[start:start + size], kind="stable")[:10]
        hits = np.flatnonzero(y[start:start + size][order])
        out[i] = hits[0] + 1 if len(hits) else 0
    return out


def cells(ranks: np.ndarray) -> str:
    return "/".join(f"{np.mean((ranks > 0) & (ranks <= c)):.3f}" for c in (1, 5, 10))


def main() -> None:
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    try:
        import lightgbm  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        sys.exit("gbdt_learned_fusion: lightgbm is not installed here; run it with "
                 "data/train/venv/bin/python after `pip install lightgbm==4.7.0` there")

    data: Any = np.load(DESIGN)
    x, y, sizes = data["x"], data["y"].astype(int), data["sizes"]
    fold, kind, today = data["fold"], data["kind"], data["today"]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    row_q = np.repeat(np.arange(len(sizes)), sizes)
    columns = list(data["columns"])
    fused = x[:, columns.index("fused_log")]
    hand = first_ranks(fused, y, starts, sizes)
    gbdt = np.zeros(len(sizes), int)
    for left in FOLDS:
        train_q = fold != left
        rows = train_q[row_q]
        model = lightgbm.train(PARAMS, lightgbm.Dataset(
            x[rows], y[rows], group=sizes[train_q]), num_boost_round=TREES)
        scores = model.predict(x)
        ranks = first_ranks(scores, y, starts, sizes)
        gbdt[fold == left] = ranks[fold == left]
    print("| set | n | today (hand-set + rules) | hand-set, no rules | GBDT, no rules |\n"
          "|---|---|---|---|---|")
    groups = [(f"{f} {k}", (fold == f) & (kind == k)) for f in FOLDS for k in ("code", "docs")]
    groups += [(f"pooled unseen {k}", np.isin(fold, UNSEEN) & (kind == k))
               for k in ("code", "docs")]
    groups += [(f"pooled all {k}", kind == k) for k in ("code", "docs")]
    for label, pick in groups:
        if pick.any():
            print(f"| {label} | {pick.sum()} | {cells(today[pick])} | {cells(hand[pick])} | "
                  f"{cells(gbdt[pick])} |")


if __name__ == "__main__":
    main()
