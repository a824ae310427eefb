"""`ragdb legs`: a PostgreSQL index switched between its ranking legs after it was built (exact
BM25 over postings or pg_textsearch; exact vectors or HNSW), on a real server."""

from __future__ import annotations

from pathlib import Path

import psycopg

from ragdb import RagDB
from tests.conftest import run_cli

QUESTION = "How do I load a LoRA adapter at run time?"


def _indexes(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT indexname FROM pg_indexes WHERE indexname IN "
                            "('chunk_vectors_hnsw', 'chunks_fts_bm25')").fetchall()
    return {str(row[0]) for row in rows}


def test_legs_build_their_indexes_rank_with_them_and_switch_back(
        project: Path, pg_url: str) -> None:
    """An index built with `ragdb index` ranks with exact legs; `ragdb legs` builds the HNSW
    and pg_textsearch indexes and the searches use them (same best file, pg_textsearch's own
    scores); switched back, the indexes are gone and the scores are rag.db's exact ones."""
    done = run_cli("index", "data/raw", "--db", pg_url, cwd=project)
    assert done.returncode == 0, done.stderr
    shown = run_cli("legs", "--db", pg_url, cwd=project)
    assert shown.returncode == 0 and shown.stdout.strip() == "lexical postings, vectors exact"
    with RagDB(pg_url) as rag:
        exact = [(h.chunk_id, h.score) for h in rag.search(QUESTION, 5, "lexical")]
    assert _indexes(pg_url) == set()

    switched = run_cli("legs", "--lexical", "pg_textsearch", "--vectors", "hnsw",
                       "--ef-search", "200", "--db", pg_url, cwd=project)
    assert switched.returncode == 0, switched.stderr
    assert switched.stdout.strip() == "lexical pg_textsearch, vectors hnsw (ef_search 200)"
    assert _indexes(pg_url) == {"chunk_vectors_hnsw", "chunks_fts_bm25"}
    with RagDB(pg_url) as rag:
        bm25 = rag.search(QUESTION, 5, "lexical")
        hybrid = rag.search(QUESTION, 5, "hybrid")
    assert bm25[0].file_path.endswith("docs/features/lora.md")
    assert hybrid[0].file_path.endswith("docs/features/lora.md")
    assert [(h.chunk_id, h.score) for h in bm25] != exact  # another BM25: its own scores

    back = run_cli("legs", "--lexical", "postings", "--vectors", "exact", "--db", pg_url,
                   cwd=project)
    assert back.returncode == 0, back.stderr
    assert _indexes(pg_url) == set()
    with RagDB(pg_url) as rag:
        assert [(h.chunk_id, h.score) for h in rag.search(QUESTION, 5, "lexical")] == exact


def test_legs_refuse_bad_values_and_rag_db_in_one_line(project: Path, pg_url: str) -> None:
    """A leg that does not exist, an ef_search out of range and a rag.db are refused in one
    line, and nothing changes."""
    assert run_cli("index", "data/raw", "--no-vectors", "--db", pg_url,
                   cwd=project).returncode == 0
    for args, words in ((["--lexical", "ts_rank"], "lexical leg must be one of"),
                        (["--vectors", "ivfflat"], "vector leg must be one of"),
                        (["--vectors", "hnsw", "--ef-search", "0"], "ef_search must be")):
        refused = run_cli("legs", *args, "--db", pg_url, cwd=project)
        assert refused.returncode != 0
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0] and "Traceback" not in refused.stderr
    assert _indexes(pg_url) == set()
    assert run_cli("legs", "--db", pg_url, cwd=project).stdout.strip() == (
        "lexical postings, vectors exact")

    assert run_cli("index", "data/raw", "--no-vectors", "--db", "rag.db",
                   cwd=project).returncode == 0
    shown = run_cli("legs", "--db", "rag.db", cwd=project)
    assert shown.returncode == 0 and "FTS5" in shown.stdout
    refused = run_cli("legs", "--vectors", "hnsw", "--db", "rag.db", cwd=project)
    assert refused.returncode != 0
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "PostgreSQL options" in refused.stderr
