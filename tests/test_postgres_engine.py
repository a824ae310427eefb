"""PostgreSQL behind RagDB (`--db postgresql://...`): the same index and the same answers as
rag.db, on a real server (the `pg_url` fixture: a fresh database on a throw-away PostgreSQL 18
with pgvector)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ragdb import RagDB
from ragdb.vectors import WINDOWS_PER_CHUNK
from tests.conftest import SMALL_CORPUS, run_cli, write_corpus

QUESTIONS = ("How do I load a LoRA adapter at run time?", "Gemma2DecoderLayer forward",
             "chunked prefill scheduler", "start a server with vllm serve",
             "is remote code trusted by default")


def _rows_pg(url: str) -> dict[str, Any]:
    """Files and chunks as _rows_sqlite reads them, and the full-text bookkeeping checked:
    every chunk's postings and row length are FTS5's, fts_stats adds them up, no orphans."""
    with psycopg.connect(url) as conn:
        files = conn.execute("SELECT path, sha256, size FROM files ORDER BY path").fetchall()
        chunks = conn.execute(
            "SELECT f.path, c.first_char, c.last_char, c.text FROM chunks c "
            "JOIN files f ON f.id = c.file_id ORDER BY f.path, c.first_char").fetchall()
        stats = conn.execute("SELECT n_chunks, total_length FROM fts_stats").fetchone()
        totals = conn.execute("SELECT count(*), coalesce(sum(fts_length), 0) FROM chunks"
                              ).fetchone()
        orphans = conn.execute("SELECT count(*) FROM postings WHERE chunk_id NOT IN "
                               "(SELECT id FROM chunks)").fetchone()
        lengths = conn.execute("SELECT id, fts_length FROM chunks").fetchall()
        n_postings = conn.execute("SELECT count(*) FROM postings").fetchone()
    assert stats == totals and orphans == (0,)
    assert all(length > 0 for _id, length in lengths)
    assert n_postings is not None and n_postings[0] >= len(chunks)
    return {"files": [tuple(f) for f in files], "chunks": [tuple(c) for c in chunks]}


def _rows_sqlite(rag: RagDB) -> dict[str, Any]:
    """Through RagDB's own apsw connection: a second SQLite library in this process would not
    see its locks (and, closing, would take the -wal file from under it)."""
    files = rag.conn.execute("SELECT path, sha256, size FROM files ORDER BY path").fetchall()
    chunks = rag.conn.execute(
        "SELECT f.path, c.first_char, c.last_char, c.text FROM chunks c "
        "JOIN files f ON f.id = c.file_id ORDER BY f.path, c.first_char").fetchall()
    return {"files": [tuple(f) for f in files], "chunks": [tuple(c) for c in chunks]}


def _ranked(rag: RagDB, mode: str = "lexical") -> list[list[tuple[str, int, int, float]]]:
    return [[(h.file_path, h.first, h.last, round(h.score, 9)) for h in rag.search(q, 5, mode)]
            for q in QUESTIONS]


def test_index_and_search_through_ragdb_and_the_cli(project: Path, pg_url: str) -> None:
    """The CLI indexes into PostgreSQL and searches it (--db and RAGDB_DB), and RagDB finds
    the same hits with the same BM25 scores as in rag.db."""
    done = run_cli("index", "data/raw", "--no-vectors", "--db", pg_url, cwd=project)
    assert done.returncode == 0, done.stderr
    assert "4 indexed" in done.stdout and "4 in the index" in done.stdout
    found = run_cli("search", "How do I load a LoRA adapter?", "--json", "--db", pg_url,
                    cwd=project)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["file_path"] == "data/raw/proj/docs/features/lora.md"
    by_env = run_cli("search", "Gemma2DecoderLayer", "--db", pg_url, cwd=project)
    env_only = run_cli("search", "Gemma2DecoderLayer", cwd=project, env={"RAGDB_DB": pg_url})
    assert by_env.returncode == env_only.returncode == 0, env_only.stderr
    assert "pkg/layers.py" in env_only.stdout and env_only.stdout == by_env.stdout
    roots = run_cli("roots", "--db", pg_url, cwd=project)
    assert roots.returncode == 0 and "data/raw  4 files, 4 chunks" in roots.stdout

    assert run_cli("index", "data/raw", "--no-vectors", "--db", "rag.db", cwd=project
                   ).returncode == 0
    os.chdir(project)
    with RagDB(pg_url) as pg, RagDB(project / "rag.db") as lite:
        assert _rows_pg(pg_url) == _rows_sqlite(lite)
        assert _ranked(pg) == _ranked(lite)
        assert _ranked(pg) == _ranked(pg)  # the cached results are the same
        status = pg.status()
        shown = pg_url.replace("postgres:@", "postgres@")
        assert status["files"] == 4 and status["db_path"] == shown
        assert not status["index_running"]


def test_the_walk_judges_links_and_names_skips_once_over_postgresql(project: Path,
                                                                    pg_url: str) -> None:
    """Issue 37 over PostgreSQL, which shares the walk: a link with a harmless name to a
    credential is left out, the models folder inside a root is not read, and a second run
    names no skip the first one named (the recorded root's last run is read back)."""
    proj = project / "data" / "raw" / "proj"
    (proj / ".env").write_text("API_KEY=supersecretvalue123\n", "utf-8")
    (proj / "settings.txt").symlink_to(".env")
    write_corpus(proj, {"models/README.md": "# Model\n\nsupersecretvalue123 weights\n"})
    (proj / "bad.txt").write_bytes(b"\xff\xfe")
    time.sleep(1.1)  # runs are recorded to the second: the files are older than the first
    env = {"RAGDB_MODELS_DIR": str(proj / "models")}
    first = run_cli("index", "data/raw", "--no-vectors", "--db", pg_url, cwd=project, env=env)
    assert first.returncode == 0, first.stderr
    assert "4 indexed" in first.stdout and "2 may hold secrets, 1 not UTF-8" in first.stdout
    assert "skipped data/raw/proj/bad.txt: not UTF-8" in first.stderr, first.stderr
    found = run_cli("search", "supersecretvalue123", "--db", pg_url, "--mode", "lexical",
                    cwd=project)
    assert found.returncode == 0 and "supersecretvalue123" not in found.stdout, found.stdout
    again = run_cli("index", "data/raw", "--no-vectors", "--db", pg_url, cwd=project, env=env)
    assert again.returncode == 0 and "4 unchanged" in again.stdout, again.stderr
    assert again.stderr == "", again.stderr


def test_incremental_reindex_by_sha256(project: Path, pg_url: str) -> None:
    """Changed, removed and added files are brought in step; unchanged ones keep their rows
    (the same chunk ids); both engines hold the same rows and rank alike afterwards."""
    os.chdir(project)
    root = project / "data" / "raw" / "proj"
    with RagDB(pg_url) as pg, RagDB(project / "rag.db") as lite:
        for rag in (pg, lite):
            assert rag.index(["data/raw"], vectors=False).stats.files_indexed == 4
        kept = pg.conn.execute(
            "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.path = 'data/raw/proj/pkg/layers.py' ORDER BY c.id").fetchall()
        (root / "notes.txt").write_text("Release notes\n\nSpeculative decoding with a draft "
                                        "model is now on by default.\n", encoding="utf-8")
        (root / "docs" / "usage" / "quickstart.md").unlink()
        write_corpus(root, {"docs/features/quantization.md":
                            "# Quantization\n\nAWQ and GPTQ checkpoints load with "
                            "--quantization.\n"})
        for rag in (pg, lite):
            stats = rag.index(["data/raw"], vectors=False).stats
            assert (stats.files_indexed, stats.files_removed, stats.files_unchanged) == (2, 1, 2)
        assert pg.conn.execute(
            "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.path = 'data/raw/proj/pkg/layers.py' ORDER BY c.id").fetchall() == kept
        assert _rows_pg(pg_url) == _rows_sqlite(lite)
        assert _ranked(pg) == _ranked(lite)
        hits = pg.search("speculative decoding draft model", 3, "lexical")
        assert hits[0].file_path == "data/raw/proj/notes.txt"
        assert all("quickstart" not in h.file_path
                   for h in pg.search("vllm serve quickstart pip", 5, "lexical"))

        assert run_cli("roots", "--remove", "data/raw", "--db", pg_url, cwd=project
                       ).returncode == 0
        lite.remove_root("data/raw")
        assert _rows_pg(pg_url) == _rows_sqlite(lite) == {"files": [], "chunks": []}


def test_vectors_are_the_same_int8_values_as_in_rag_db(project: Path, pg_url: str) -> None:
    """With vectors: every window's int8 vector is stored exactly (halfvec) and dense search
    ranks as sqlite-vec does."""
    for db in (pg_url, "rag.db"):
        done = run_cli("index", "data/raw", "--db", db, cwd=project, timeout=300)
        assert done.returncode == 0, done.stderr
    with psycopg.connect(pg_url) as conn:
        pg = {(path, first, vid % WINDOWS_PER_CHUNK): json.loads(vector)
              for path, first, vid, vector in conn.execute(
                  "SELECT f.path, c.first_char, v.vector_id, CAST(v.embedding AS text) "
                  "FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id "
                  "JOIN files f ON f.id = c.file_id")}
    lite_rag = RagDB(project / "rag.db")
    lite = {(path, first, vid % WINDOWS_PER_CHUNK): json.loads(vector)
            for path, first, vid, vector in lite_rag.conn.execute(
                "SELECT f.path, c.first_char, v.vector_id, vec_to_json(v.embedding) "
                "FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id "
                "JOIN files f ON f.id = c.file_id")}
    lite_rag.close()
    assert pg and pg == {key: [float(x) for x in vector] for key, vector in lite.items()}
    question = "How do I load a LoRA adapter at run time?"
    dense = [run_cli("search", question, "--mode", "dense", "--json", "--db", db, cwd=project)
             for db in (pg_url, "rag.db")]
    assert all(d.returncode == 0 for d in dense), dense[0].stderr
    tops = [[(s["file_path"], s["first_character_index"]) for s in json.loads(d.stdout)]
            for d in dense]
    assert tops[0] == tops[1] and tops[0][0][0] == "data/raw/proj/docs/features/lora.md"


def test_a_small_corpus_index_is_the_same_on_both_engines(tmp_path: Path, pg_url: str) -> None:
    """More than one flush of full-text rows and every file kind of the small corpus twice
    over: the same rows on both engines."""
    files = {f"data/raw/docs/page{i:02}.md": f"# Page {i}\n\n" + "\n\n".join(
        f"## Part {j}\n\n" + f"Widgets and gadgets, part {j} of page {i}. " * 12
        for j in range(6)) for i in range(30)}
    files.update({f"data/raw/src/mod{i}.py": f"def function_{i}(x):\n    return x * {i}\n"
                  for i in range(30)})
    write_corpus(tmp_path, {**files, **{f"data/raw/{k}": v for k, v in SMALL_CORPUS.items()}})
    os.chdir(tmp_path)
    with RagDB(pg_url) as pg, RagDB(tmp_path / "rag.db") as lite:
        for rag in (pg, lite):
            rag.index(["data/raw"], vectors=False, max_chunk_size=400)
        assert _rows_pg(pg_url) == _rows_sqlite(lite)
        common = [sorted(str(t) for (t,) in rag.conn.execute("SELECT term FROM fts_common_terms"))
                  for rag in (pg, lite)]
        assert common[0] == common[1] and "widget" in common[0]
        assert _ranked(pg) == _ranked(lite)
        question = "function_7 widgets page 7"
        assert ([(h.file_path, round(h.score, 9)) for h in pg.search(question, 10, "lexical")]
                == [(h.file_path, round(h.score, 9))
                    for h in lite.search(question, 10, "lexical")])


@pytest.mark.parametrize("url", ["postgresql://ragdb@127.0.0.1:5432/x"])
def test_a_url_is_not_a_path(url: str) -> None:
    """A postgresql:// --db is never taken for a file name (a Path would fold its //)."""
    rag = RagDB(url)
    assert rag.path == url and not isinstance(rag.path, Path) and rag.shown == url
    assert isinstance(RagDB("rag.db").path, Path)
