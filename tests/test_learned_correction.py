"""Issue 40 round 2 (benchmarks/bench_learned_correction.py): the learned correction starts from
today's order, and its constraint keeps a confident first result."""

from __future__ import annotations

import math

import numpy as np

from benchmarks.bench_learned_correction import COLUMNS, constrained, design
from benchmarks.bench_learned_fusion import FEATURES


def _rows(n: int) -> list[list[object]]:
    """n candidates in today's fused order (falling fused score), varied features."""
    rng = np.random.default_rng(40)
    return [[i, i == 3, 1.0 / (1 + i), *rng.random(len(FEATURES)).tolist()] for i in range(n)]


def test_todays_features_alone_give_todays_order() -> None:
    """With every weight but today's order's 0, the learned order is the fused one."""
    z = design(_rows(12), named=True)
    assert z.shape == (12, len(COLUMNS))
    for name in ("fused_log", "fused_rr", "first"):
        w = np.zeros(len(COLUMNS))
        w[COLUMNS.index(name)] = 1.0
        assert list(constrained(z @ w, 1000, -math.inf)) == list(range(12))


def test_only_the_top_n_move_and_the_first_stays_without_a_lead() -> None:
    scores = np.array([1.0, 0.0, 3.0, 5.0, 9.0])
    assert list(constrained(scores, 3, -math.inf)) == [2, 0, 1, 3, 4]  # 3 and 4 stay put
    assert list(constrained(scores, 3, 1.5)) == [2, 0, 1, 3, 4]  # it leads the first by 2
    assert list(constrained(scores, 3, 2.0)) == [0, 2, 1, 3, 4]  # a lead of TAU is not enough
    assert list(constrained(scores, 5, math.inf)) == [0, 4, 3, 2, 1]  # the first never moves
