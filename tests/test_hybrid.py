"""Dense and hybrid retrieval: fusion by ranks in SQL, the query cache, and failure modes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragdb import RagDB
from ragdb.db import bump_generation, connect, scalar
from ragdb.vectors import to_int8
from ragdb.resources import sql
from ragdb.retrieve import Filters, Mode, SearchParams, Searcher
from tests.conftest import REPO, run_cli, write_corpus


def _unit(values: list[float]) -> bytes:
    vector = np.zeros(384, dtype=np.float32)
    vector[: len(values)] = values
    return to_int8(vector / np.linalg.norm(vector)).tobytes()


def test_fusion_uses_ranks_not_chunk_ids(tmp_path: Path) -> None:
    """Chunk ids run 1, 2, 3; BM25 ranks them 3, 2, 1 and vectors 2, 3, 1."""
    conn = connect(tmp_path / "rag.db", create=True)
    bodies = {1: "lora", 2: "lora lora adapter", 3: "lora lora lora adapter adapter"}
    vectors = {1: [0.6, 1.0], 2: [1.0, 0.05], 3: [1.0, 0.5]}  # all within max_distance
    with conn:
        conn.execute("INSERT INTO files (id, path, sha256, size, kind, n_chars, indexed_at) "
                     "VALUES (1, 'a.md', '', 0, 'markdown', 0, '')")
        for chunk_id, body in bodies.items():
            conn.execute("INSERT INTO chunks (id, file_id, first_char, last_char, start_line, "
                         "end_line, kind, text) VALUES (?, 1, ?, ?, 1, 1, 'section', ?)",
                         (chunk_id, chunk_id * 100, chunk_id * 100 + 50, body))
            conn.execute("INSERT INTO chunks_fts (rowid, path, context, body) "
                         "VALUES (?, '', '', ?)", (chunk_id, body))
            conn.execute("INSERT INTO chunk_vectors (vector_id, chunk_id, embedding) "
                         "VALUES (?, ?, vec_int8(?))",
                         (chunk_id * 1000, chunk_id, _unit(vectors[chunk_id])))
    base = {"match": '"lora" OR "adapter"', "query_vector": _unit([1.0, 0.0]), "k": 3,
            **Filters().as_sql()}
    params = SearchParams(rrf_c=10.0, w_lex=1.0, w_dense=0.5, margin_cap=1.0)  # plain RRF
    rows = conn.execute(sql("search_hybrid"), {**base, **params.as_sql()}).fetchall()
    lexical_rank = {3: 1, 2: 2, 1: 3}
    dense_rank = {2: 1, 3: 2, 1: 3}
    expected = {cid: 1.0 / (10 + lexical_rank[cid]) + 0.5 / (10 + dense_rank[cid])
                for cid in bodies}
    assert [row[0] for row in rows] == [3, 2, 1]
    for row in rows:
        assert row[7] == pytest.approx(expected[int(row[0])])  # type: ignore[arg-type]
    # The lexical margin (the default): only the first lexical hit's term grows, by its BM25
    # over the second hit's (at most margin_cap).
    bm25 = {int(row[0]): float(row[7]) for row in conn.execute(sql("search_lexical"), {
        **base, **params.as_sql()})}
    margin = min(2.0, bm25[3] / bm25[2])
    assert margin > 1.0
    expected[3] = margin / (10 + 1) + 0.5 / (10 + 2)
    rows = conn.execute(sql("search_hybrid"), {
        **base, **SearchParams(rrf_c=10.0, w_lex=1.0, w_dense=0.5).as_sql()}).fetchall()
    assert [row[0] for row in rows] == [3, 2, 1]
    for row in rows:
        assert row[7] == pytest.approx(expected[int(row[0])])  # type: ignore[arg-type]


def test_a_chunk_found_by_one_leg_only_still_ranks(tmp_path: Path) -> None:
    conn = connect(tmp_path / "rag.db", create=True)
    with conn:
        conn.execute("INSERT INTO files (id, path, sha256, size, kind, n_chars, indexed_at) "
                     "VALUES (1, 'a.md', '', 0, 'markdown', 0, '')")
        for chunk_id, body in ((1, "lora"), (2, "nothing relevant")):
            conn.execute("INSERT INTO chunks (id, file_id, first_char, last_char, start_line, "
                         "end_line, kind, text) VALUES (?, 1, 0, 5, 1, 1, 'section', ?)",
                         (chunk_id, body))
            conn.execute("INSERT INTO chunks_fts (rowid, path, context, body) "
                         "VALUES (?, '', '', ?)", (chunk_id, body))
        conn.execute("INSERT INTO chunk_vectors (vector_id, chunk_id, embedding) "
                     "VALUES (2000, 2, vec_int8(?))", (_unit([1.0]),))
    rows = conn.execute(sql("search_hybrid"), {
        "match": '"lora"', "query_vector": _unit([1.0]), "k": 5, **SearchParams().as_sql(),
        **Filters().as_sql(),
    }).fetchall()
    assert sorted(int(row[0]) for row in rows) == [1, 2]  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def vector_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("vectors")
    write_corpus(project / "data" / "raw" / "proj")
    result = run_cli("index", "data/raw", "--db", "rag.db", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "vectors" in result.stdout
    return project


def test_hybrid_and_dense_search_end_to_end(vector_project: Path) -> None:
    conn = connect(vector_project / "rag.db")
    searcher = Searcher(conn, use_cache=False)
    # a paraphrase with no word in common with the LoRA page still reaches it densely
    dense = searcher.search("serve several fine-tuned adapters simultaneously", 3, Mode.dense)
    assert dense and dense[0].file_path.endswith("lora.md")
    hybrid = searcher.search("How do I load a LoRA adapter at run time?", 3, Mode.hybrid)
    assert hybrid[0].file_path.endswith("lora.md")


def test_query_cache_is_used_and_invalidated(vector_project: Path, tmp_path: Path) -> None:
    db = tmp_path / "rag.db"
    db.write_bytes((vector_project / "rag.db").read_bytes())
    conn = connect(db)
    searcher = Searcher(conn)
    question = "How do I load a LoRA adapter at run time?"
    first = searcher.search(question, 3)
    cached = scalar(conn, "SELECT count(*) FROM query_cache")
    assert cached == 1
    # the same question is answered from the cache without loading the model
    fresh = Searcher(conn)
    assert fresh.search(question, 3) == first
    assert fresh._embedder is None
    # another spelling (case, spacing) is another search: its own entry (issue 17, item 2)
    fresh.search("  how do I load a LoRA adapter   at run time? ", 3)
    assert scalar(conn, "SELECT count(*) FROM query_cache") == 2
    with conn:
        bump_generation(conn)
    assert scalar(conn, "SELECT count(*) FROM query_cache") == 0


def test_another_version_of_ragdb_never_reads_this_ones_cache(
        vector_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An upgrade may rank differently without an index run: its code fingerprint is in the
    key, so it searches again (its own entry) rather than serving the older ranking."""
    import ragdb.retrieve
    db = tmp_path / "rag.db"
    db.write_bytes((vector_project / "rag.db").read_bytes())
    conn = connect(db)
    question = "How do I load a LoRA adapter at run time?"
    Searcher(conn).search(question, 3, Mode.lexical)
    Searcher(conn).search(question, 3, Mode.lexical)
    assert scalar(conn, "SELECT count(*) FROM query_cache") == 1
    monkeypatch.setattr(ragdb.retrieve, "code_fingerprint", lambda: "an-upgraded-ragdb")
    Searcher(conn).search(question, 3, Mode.lexical)
    assert scalar(conn, "SELECT count(*) FROM query_cache") == 2


def test_dense_on_an_index_without_vectors(project: Path) -> None:
    assert run_cli("index", "data/raw", "--no-vectors", "--db", "rag.db", cwd=project
                   ).returncode == 0
    result = run_cli("search", "lora", "--mode", "dense", "--db", "rag.db", cwd=project)
    assert result.returncode == 1
    assert "no vectors" in result.stderr and "ragdb index" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    # hybrid falls back to BM25 alone
    hybrid = run_cli("search", "lora", "--db", "rag.db", cwd=project)
    assert hybrid.returncode == 0 and "lora.md" in hybrid.stdout


def test_embedder_that_cannot_be_loaded(project: Path) -> None:
    result = run_cli("index", "data/raw", "--embedder", "no/such-model-here", "--db", "rag.db",
                     cwd=project, env={"HF_HUB_OFFLINE": "1"})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot load embedder 'no/such-model-here'" in lines[0]


KILL_AFTER_FIRST_BATCH = """
import os, signal, sys
from ragdb import RagDB

def on_embedded(done: int, total: int) -> None:
    if done:  # the first batch is committed: die as a power cut would
        os.kill(os.getpid(), signal.SIGKILL)

RagDB(sys.argv[1]).index(["data/raw"], on_embedded=on_embedded)
"""


def test_run_killed_during_embedding_is_repaired_next_time(tmp_path: Path) -> None:
    """SIGKILL right after the first vector batch commits (a deterministic moment, whatever
    the host's speed): the next run embeds only what is missing."""
    project = tmp_path
    docs = {f"data/raw/docs/page{i:02}.md": f"# Page {i}\n\nTopic {i}: widgets and gadgets.\n"
            for i in range(40)}  # 40 doc chunks: two batches of 32
    write_corpus(project, docs)
    db = project / "rag.db"
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AFTER_FIRST_BATCH, str(db)], cwd=project,
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "RAGDB_MODELS_DIR": str(REPO / "data" / "models")},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    # Searchable meanwhile: the lexical index is whole, the dense leg says how far it got.
    partial = RagDB(db)
    assert 0 < (partial.dense_coverage() or 0) < 1
    assert partial.search("Topic 7 widgets", 3, "hybrid")[0].file_path.endswith("page07.md")
    partial.close()
    said = run_cli("search", "Topic 7 widgets", "--json", "--db", str(db), cwd=project)
    assert said.returncode == 0 and json.loads(said.stdout)[0]["file_path"].endswith("page07.md")
    assert "the dense leg covers" in said.stderr

    conn = connect(db)
    missing = scalar(conn, "SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
                           "WHERE f.kind = 'markdown' AND c.id NOT IN "
                           "(SELECT chunk_id FROM chunk_vectors)")
    assert missing > 0, "expected the kill to leave chunks without vectors"
    conn.close()
    again = run_cli("index", "data/raw", "--db", str(db), cwd=project)
    assert again.returncode == 0, again.stderr
    assert "0 indexed" in again.stdout  # the chunks were committed; only vectors were missing
    conn = connect(db)
    assert scalar(conn, "SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
                        "WHERE f.kind = 'markdown' AND c.id NOT IN "
                        "(SELECT chunk_id FROM chunk_vectors)") == 0
    assert scalar(conn, "SELECT count(*) FROM chunk_vectors "
                        "WHERE chunk_id NOT IN (SELECT id FROM chunks)") == 0
    assert RagDB(db).dense_coverage() == 1.0


def test_filters_apply_inside_both_legs(tmp_path: Path) -> None:
    """The nearest windows and best BM25 matches are in a.md; only b.go is allowed: both legs
    rank among b.go's chunks (the dense leg's KNN runs over the allowed windows only)."""
    conn = connect(tmp_path / "rag.db", create=True)
    with conn:
        conn.execute("INSERT INTO files (id, path, sha256, size, kind, n_chars, indexed_at) "
                     "VALUES (1, 'p/a.md', '', 0, 'markdown', 0, ''), "
                     "(2, 'p/src/b.go', '', 0, 'go', 0, '')")
        for chunk_id in range(1, 41):
            file_id = 1 if chunk_id <= 30 else 2
            body = "lora adapter" if file_id == 1 else "lora"
            conn.execute("INSERT INTO chunks (id, file_id, first_char, last_char, start_line, "
                         "end_line, kind, text) VALUES (?, ?, ?, ?, 1, 1, 'section', ?)",
                         (chunk_id, file_id, chunk_id * 100, chunk_id * 100 + 50, body))
            conn.execute("INSERT INTO chunks_fts (rowid, path, context, body) "
                         "VALUES (?, '', '', ?)", (chunk_id, body))
            near = [1.0, 0.01 * chunk_id] if file_id == 1 else [1.0, 0.1 * (chunk_id - 25)]
            conn.execute("INSERT INTO chunk_vectors (vector_id, chunk_id, embedding) "
                         "VALUES (?, ?, vec_int8(?))", (chunk_id * 1000, chunk_id, _unit(near)))
    params = SearchParams(depth=5, windows_per_chunk=1)
    for filters in (Filters.of(None, "go"), Filters.of("src/*", None),
                    Filters.of(["*.go", "*.rs"], ["go", "python"])):
        rows = conn.execute(sql("search_hybrid"), {
            "match": '"lora" OR "adapter"', "query_vector": _unit([1.0, 0.0]), "k": 5,
            **params.as_sql(), **filters.as_sql(),
        }).fetchall()
        assert [row[0] for row in rows] == [31, 32, 33, 34, 35], filters
        dense = conn.execute(sql("search_dense"), {
            **SearchParams().as_sql(),
            "query_vector": _unit([1.0, 0.0]), "k": 3, "knn_depth": 3, "max_distance": 0.6,
            **filters.as_sql()}).fetchall()
        assert [row[0] for row in dense] == [31, 32, 33]
        assert {row[9] for row in dense} == {"go"}
    unfiltered = conn.execute(sql("search_dense"), {
        **SearchParams().as_sql(),
        "query_vector": _unit([1.0, 0.0]), "k": 3, "knn_depth": 3, "max_distance": 0.6,
        **Filters().as_sql()}).fetchall()
    assert [row[0] for row in unfiltered] == [1, 2, 3]
