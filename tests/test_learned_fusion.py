"""The learned fusion's feature query (issue 40): sql/search_features.sql copies the candidate
legs of sql/search_hybrid.sql, so its hand-set score must stay that file's, chunk for chunk."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bench_learned_fusion import FEATURES, feature_rows, learn, query_vectors
from ragdb import RagDB
from ragdb.db import read_transaction
from ragdb.resources import sql
from ragdb.retrieve import Hit, Mode, Searcher
from tests.conftest import write_corpus

QUESTIONS = ("How do I serve several LoRA adapters at once?",
             "What does `forward` return in the model?",
             "trust_remote_code default")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real rag.db with vectors and symbols, over the small corpus of tests/conftest.py."""
    root = tmp_path_factory.mktemp("learned")
    write_corpus(root / "proj")
    with RagDB(root / "rag.db") as rag:
        rag.index([root / "proj"])
    return root / "rag.db"


def test_the_features_fused_score_is_search_hybrids(indexed: Path) -> None:
    """Every candidate search_hybrid.sql returns comes back with the same score as `fused`,
    and the features query returns no chunk it does not."""
    with RagDB(indexed, use_cache=False) as rag:
        searcher = Searcher(rag.conn, use_cache=False)
        vectors = query_vectors(searcher, QUESTIONS)
        checked = 0
        with read_transaction(rag.conn):
            for question in QUESTIONS:
                planned = searcher.plan(question, 1000, Mode.hybrid, vectors.get(question))
                if planned is None or planned[0] != "search_hybrid":
                    continue
                params = planned[1]
                terms = searcher.bridge_terms(question, vectors.get(question))
                if terms:
                    params = Searcher.bridged(params, terms)
                hybrid = {int(row[0]): float(row[7])
                          for row in rag.conn.execute(sql("search_hybrid"), params)}
                rows = feature_rows(searcher, question, vectors.get(question), 1000)
                assert rows is not None
                features = {int(row[0]): float(row[11]) for row in rows}
                assert features.keys() == hybrid.keys()
                for chunk_id, score in hybrid.items():
                    assert features[chunk_id] == pytest.approx(score, rel=1e-9)
                assert all(len(row) == 13 + len(FEATURES) for row in rows)
                checked += 1
        assert checked >= 2


def test_learned_weights_order_the_rows_by_their_sum(indexed: Path) -> None:
    """With weights, the rows come in the order of the weighted sum of their features, which
    the `learned` column holds, and as hits search_hybrid.sql's columns would make."""
    weights = {"lex_rr": 2.0, "dense_close": 1.0, "prior_path": -0.5, "log_chars": 0.1}
    with RagDB(indexed, use_cache=False) as rag:
        searcher = Searcher(rag.conn, use_cache=False)
        question = QUESTIONS[0]
        vector = query_vectors(searcher, [question]).get(question)
        with read_transaction(rag.conn):
            rows = feature_rows(searcher, question, vector, 5, weights)
    assert rows
    sums = [sum(weights.get(name, 0.0) * float(row[13 + i]) for i, name in enumerate(FEATURES))
            for row in rows]
    assert sums == pytest.approx([float(row[12]) for row in rows])
    assert sums == sorted(sums, reverse=True)
    assert [Hit.of_row(row[:11]).score for row in rows] == pytest.approx(sums)


def test_the_learner_prefers_the_feature_that_marks_the_answer() -> None:
    """Lists where the relevant candidate is the one with the larger dense_close: that weight
    comes out positive, and the one feature that does not tell them apart stays near 0."""
    rows_of = []
    for n in range(20):
        rows = []
        for i in range(5):
            features = [0.0] * len(FEATURES)
            features[FEATURES.index("dense_close")] = 0.5 if i == n % 5 else 0.1
            features[FEATURES.index("log_chars")] = 0.5
            rows.append([i, i == n % 5, 0.0, *features])
        rows_of.append({"rows": rows})
    weights = learn(rows_of)
    assert weights["dense_close"] > 1.0
    assert abs(weights["log_chars"]) < 1e-6
