"""rag.db itself: migrations, incremental indexing, and runs that die half-way."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragdb.chunking import chunk_cap
from ragdb.db import connect, scalar, schema_version, set_setting
from ragdb.indexing import index_paths
from ragdb.errors import MissingIndexError, RagdbError
from ragdb.retrieve import Searcher
from ragdb.tokenize import analyse_names, defined_names
from tests.conftest import SMALL_CORPUS, extract_slice, run_cli, write_corpus

QUESTIONS = [
    "How do I load a LoRA adapter at run time?",
    "Gemma2DecoderLayer forward",
    "sampling parameters for offline inference",
    "scheduler chunked prefill",
    "tensor parallel size of the model executor",
    "trust_remote_code",
]


def ranked(db: Path) -> list[list[tuple[str, int, int]]]:
    searcher = Searcher(connect(db))
    return [[(h.file_path, h.first, h.last) for h in searcher.search(q, 10)] for q in QUESTIONS]


def test_missing_database_is_not_created(tmp_path: Path) -> None:
    with pytest.raises(MissingIndexError):
        connect(tmp_path / "rag.db")
    assert not (tmp_path / "rag.db").exists()


def test_schema_from_a_newer_ragdb_is_refused(tmp_path: Path) -> None:
    conn = connect(tmp_path / "rag.db", create=True)
    conn.execute(f"PRAGMA user_version = {schema_version() + 1}")
    conn.close()
    with pytest.raises(RagdbError, match="newer ragdb"):
        connect(tmp_path / "rag.db")


def test_wal_and_stock_sqlite_can_read_everything_but_vectors(project: Path) -> None:
    os.chdir(project)
    conn = connect(project / "rag.db", create=True)
    index_paths(conn, [Path("data/raw")])
    assert conn.execute("PRAGMA journal_mode").fetchall()[0][0] == "wal"
    conn.close()
    stock = sqlite3.connect(project / "rag.db")
    tables = [r[0] for r in stock.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'chunk_vectors%'")]
    for table in tables:
        stock.execute(f'SELECT * FROM "{table}" LIMIT 5').fetchall()
    hits = stock.execute(
        "SELECT c.text FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
        "WHERE chunks_fts MATCH 'lora'").fetchall()
    assert hits and all("LoRA" in text for (text,) in hits)
    # the identifier was split at index time, so a plain word finds it
    assert stock.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'decoder'"
                         ).fetchone()[0] >= 1


def test_incremental_runs_equal_a_full_rebuild(tmp_path: Path) -> None:
    extract_slice(tmp_path, every=25)
    os.chdir(tmp_path)
    raw = Path("data/raw")
    write_corpus(raw / "proj")
    incremental = tmp_path / "incremental.db"
    conn = connect(incremental, create=True)
    first = index_paths(conn, [raw])
    assert first.files_indexed == first.files_seen

    # change one file, delete one, add one
    py_files = [p for p in sorted(raw.rglob("*.py")) if "/." not in p.as_posix()]
    changed, deleted = py_files[0], py_files[1]
    changed.write_text(changed.read_text() + "\n\ndef brand_new_helper():\n    return 42\n")
    deleted.unlink()
    write_corpus(raw / "extra", {"added.md": "# Added\n\nA new page about speculative decoding.\n"})
    second = index_paths(conn, [raw])
    assert (second.files_indexed, second.files_removed) == (2, 1)
    assert second.files_unchanged == second.files_seen - 2
    assert not second.full_rebuild
    conn.close()

    full = tmp_path / "full.db"
    index_paths(connect(full, create=True), [raw])
    assert ranked(incremental) == ranked(full)
    counts = [connect(db).execute("SELECT count(*), sum(last_char - first_char) FROM chunks")
              .fetchall() for db in (incremental, full)]
    assert counts[0] == counts[1]


def test_changed_chunk_size_forces_full_rebuild(project: Path) -> None:
    os.chdir(project)
    conn = connect(project / "rag.db", create=True)
    index_paths(conn, [Path("data/raw")], max_chunk_size=2000)
    stats = index_paths(conn, [Path("data/raw")], max_chunk_size=100)
    assert stats.full_rebuild and stats.files_indexed == len(SMALL_CORPUS)
    longest = scalar(conn, "SELECT max(last_char - first_char) FROM chunks")
    assert longest <= 100
    prose = scalar(conn, "SELECT max(c.last_char - c.first_char) FROM chunks c "
                         "JOIN files f ON f.id = c.file_id WHERE f.kind != 'python'")
    assert prose <= chunk_cap("markdown", 100) == 50


def test_new_chunker_version_forces_full_rebuild(project: Path) -> None:
    os.chdir(project)
    conn = connect(project / "rag.db", create=True)
    index_paths(conn, [Path("data/raw")])
    with conn:
        set_setting(conn, "chunker", "0")
    assert index_paths(conn, [Path("data/raw")]).full_rebuild


def test_other_roots_are_kept(project: Path) -> None:
    os.chdir(project)
    write_corpus(project / "other", {"a.md": "# Other\n\nSomething else entirely.\n"})
    conn = connect(project / "rag.db", create=True)
    index_paths(conn, [Path("data/raw")])
    stats = index_paths(conn, [Path("other")])
    assert stats.files_removed == 0
    paths = {r[0] for r in conn.execute("SELECT path FROM files")}
    assert "other/a.md" in paths and "data/raw/proj/notes.txt" in paths


def _wait_for_writes(db: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Until the run has started writing its transaction (the WAL grows past one page)."""
    wal = Path(f"{db}-wal")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail("the index run ended before it could be interrupted")
        if wal.exists() and wal.stat().st_size > 512 * 1024:
            return
        time.sleep(0.02)
    pytest.fail("the index run never started writing")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_killed_index_run_keeps_the_previous_index(tmp_path: Path, sig: signal.Signals) -> None:
    project = extract_slice(tmp_path, every=4)
    os.chdir(project)
    small = Path("data/raw/proj")
    write_corpus(small)
    db = project / "rag.db"
    # Rows only: this is about the rows transaction, and embedding a corpus slice would make
    # the test measure the host's speed (minutes on a 2-core host without VNNI).
    first = run_cli("index", str(small), "--db", str(db), "--no-vectors", cwd=project)
    assert first.returncode == 0, first.stderr
    before = ranked(db)

    proc = subprocess.Popen(
        [sys.executable, "-m", "ragdb", "index", "data/raw", "--db", str(db), "--no-vectors"],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    _wait_for_writes(db, proc)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0
    if sig == signal.SIGINT:
        lines = stderr.decode().strip().splitlines()
        assert len(lines) == 1 and "interrupted" in lines[0], stderr

    conn = connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert conn.execute("SELECT count(*) FROM files").fetchall()[0][0] == len(SMALL_CORPUS)
    conn.close()
    assert ranked(db) == before
    # and the next run completes
    again = run_cli("index", "data/raw", "--db", str(db), "--no-vectors", cwd=project)
    assert again.returncode == 0, again.stderr


def test_ctrl_c_while_embedding_keeps_the_rows_and_says_so(tmp_path: Path) -> None:
    """Stopped once its files and chunks are committed (the vectors then come batch by batch),
    a run said "rag.db keeps its last complete index" while its new rows were kept (issue 37).
    The line says what is kept, and the next run finishes the vectors."""
    project = extract_slice(tmp_path, every=6)
    db = project / "rag.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragdb", "index", "data/raw", "--db", str(db)],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    files = 0
    while time.monotonic() < deadline and proc.poll() is None and not files:
        time.sleep(0.05)
        try:
            probe = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1)
            try:
                files = probe.execute("SELECT count(*) FROM files").fetchone()[0]
            finally:
                probe.close()
        except sqlite3.Error:
            continue  # not created yet, or its schema not yet committed
    if proc.poll() is not None:
        pytest.fail("the index run ended before its vectors could be interrupted")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    lines = stderr.decode().strip().splitlines()
    assert proc.returncode == 130, stderr
    assert "interrupted" in lines[-1] and "files and chunks" in lines[-1], lines
    assert "the same `ragdb index` again" in lines[-1], lines  # a plain one may find no root
    assert "last complete index" not in lines[-1]
    conn = connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert scalar(conn, "SELECT count(*) FROM files") == files
    conn.close()
    again = run_cli("index", "data/raw", "--db", str(db), cwd=project)
    assert again.returncode == 0, again.stderr
    assert "0 indexed" in again.stdout, again.stdout


def test_defined_names_are_one_joined_term_each() -> None:
    text = ("class FlashInferBuilder(Base):\n    async def prepare_inputs(self):\n"
            '        """def not_a_name is prose."""\n    def prepare_inputs(self):\n        pass\n')
    assert defined_names(text, "python") == ["FlashInferBuilder", "prepare_inputs"]
    assert defined_names(text, "markdown") == []
    assert analyse_names(["FlashInferBuilder", "_private", "prepare_inputs"]) == (
        "flashinferbuilder private prepareinputs")


def test_the_definition_of_a_named_identifier_ranks_above_its_uses(tmp_path: Path) -> None:
    """Two chunks with the same words; the one defining `scale_weights` comes first, and the
    context column holds the definition's joined name (what any SQLite client sees)."""
    filler = "\n".join(f"    value_{i} = value_{i - 1} + {i}" for i in range(1, 60))
    write_corpus(tmp_path / "src", {
        "a_user.py": f"def run(layer):\n{filler}\n    return scale_weights(layer)\n",
        "b_owner.py": f"def scale_weights(layer):\n{filler}\n    return layer\n",
    })
    conn = connect(tmp_path / "rag.db", create=True)
    index_paths(conn, [tmp_path / "src"])
    context = scalar(conn, "SELECT context FROM chunks_fts WHERE path MATCH 'owner'")
    assert context == "scaleweights"
    hits = Searcher(conn, use_cache=False).search("Where is scale_weights?", 2, "lexical")
    assert [Path(h.file_path).name for h in hits] == ["b_owner.py", "a_user.py"]


@pytest.mark.parametrize("name, caller, owner", [
    ("go", "func run(l Layer) {\n{body}\n    ScaleWeights(l)\n}\n",
     "func (m *Model) ScaleWeights(l Layer) {\n{body}\n}\n"),
    ("rs", "fn run(l: &Layer) {\n{body}\n    scale_weights(l);\n}\n",
     "pub fn scale_weights(l: &Layer) {\n{body}\n}\n"),
    ("cu", "void run(Layer* l) {\n{body}\n    scale_weights(l);\n}\n",
     "__global__ void scale_weights(Layer* l) {\n{body}\n}\n"),
    ("ts", "function run(l: Layer) {\n{body}\n    scaleWeights(l);\n}\n",
     "export const scaleWeights = (l: Layer) => {\n{body}\n};\n"),
])
def test_the_syntax_tree_names_definitions_in_every_language(
        tmp_path: Path, name: str, caller: str, owner: str) -> None:
    """As for Python: the file defining the identifier a question writes comes first."""
    body = "\n".join(f"    total{i} = total{i - 1} + {i};" for i in range(1, 60))
    write_corpus(tmp_path / "src", {
        f"a_user.{name}": caller.replace("{body}", body),
        f"b_owner.{name}": owner.replace("{body}", body),
    })
    conn = connect(tmp_path / "rag.db", create=True)
    index_paths(conn, [tmp_path / "src"])
    context = str(scalar(conn, "SELECT context FROM chunks_fts WHERE path MATCH 'owner'"))
    assert context.endswith("scaleweights"), context
    identifier = "ScaleWeights" if name == "go" else "scaleWeights" if name == "ts" else (
        "scale_weights")
    hits = Searcher(conn, use_cache=False).search(f"Where is {identifier}?", 2, "lexical")
    assert [Path(h.file_path).name for h in hits] == [f"b_owner.{name}", f"a_user.{name}"]


def test_a_removed_files_text_is_gone_from_the_bytes_of_rag_db(tmp_path: Path) -> None:
    """A file indexed by mistake (a key, a password) and then removed or ignored must not stay
    readable in rag.db: not in its free pages (secure_delete), nor in the full-text index's
    segments (merged after a run that deleted rows), nor in the write-ahead log."""
    secret = "Hunter2PasswordXyzzy"
    project = tmp_path / "proj"
    write_corpus(project, {"src/app.py": "def main():\n    return 0\n",
                           "src/notes.md": f"# Notes\n\nThe admin password is {secret}.\n"
                           + "Some filler text about the deployment.\n" * 200})
    done = run_cli("index", "src", "--no-vectors", "--db", "rag.db", cwd=project)
    assert done.returncode == 0, done.stderr
    found = run_cli("search", secret, "--db", "rag.db", cwd=project)
    assert "notes.md" in found.stdout

    (project / "src" / "notes.md").unlink()
    done = run_cli("index", "src", "--no-vectors", "--db", "rag.db", cwd=project)
    assert done.returncode == 0 and "1 removed" in done.stdout, done.stdout + done.stderr
    stored = b"".join(p.read_bytes() for p in project.glob("rag.db*"))
    for form in (secret, secret.lower(), "hunter2 password xyzzy", "xyzzy"):
        assert form.encode() not in stored, form
    assert "notes.md" not in run_cli("search", secret, "--db", "rag.db", cwd=project).stdout
