"""Defects the fourth first-hour walkthrough found on the other doors (serve, MCP, watch,
the symbol commands), each on real things: a real rag.db (SQLite, sqlite-vec) held open by a
second connection as a server holds it, the CLI as a subprocess."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from ragdb import RagDB
from ragdb.errors import RagdbError
from tests.conftest import run_cli, write_corpus

MARK = "HUNTER2ZQXSECRET"


def test_removed_rows_leave_the_wal_while_a_server_holds_the_db_open(tmp_path: Path) -> None:
    """A file indexed, then deleted and re-indexed while `ragdb serve` held rag.db open: its
    rows were gone from every table, but rag.db-wal (which nothing checkpoints while a
    reader keeps the database open) still held the old page images with its text; a copy of
    the folder, or `grep` on it, read them. A run that changed rows now checkpoints
    (TRUNCATE): the WAL is emptied and secure_delete's zeroed pages reach rag.db."""
    proj = tmp_path / "proj"
    write_corpus(proj, {"app.py": "def run():\n    return 1\n",
                        "notes.txt": f"deploy note {MARK}\n"})
    db = tmp_path / "rag.db"
    with RagDB(db) as rag:
        rag.index([proj], vectors=False)
    server = apsw.Connection(str(db))  # the server's connection, open between requests
    assert int(server.execute("SELECT count(*) FROM chunks").fetchall()[0][0] or 0) >= 2
    with RagDB(db) as rag:  # indexed while the server holds it open: into the WAL
        (proj / "extra.txt").write_text(f"another {MARK} line\n")
        rag.index([proj], vectors=False)
    (proj / "notes.txt").unlink()
    (proj / "extra.txt").unlink()
    with RagDB(db) as rag:
        rag.index([proj], vectors=False)
    rows = int(server.execute("SELECT count(*) FROM chunks WHERE text LIKE ?",
                              (f"%{MARK}%",)).fetchall()[0][0] or 0)
    assert rows == 0
    wal = db.with_name("rag.db-wal")
    assert not wal.exists() or MARK.encode() not in wal.read_bytes()
    assert MARK.encode() not in db.read_bytes()
    server.close()


def test_outline_of_a_huge_path_is_one_short_line(tmp_path: Path) -> None:
    """`ragdb outline <10 KB path>` (and MCP's outline with a 1 MB path) answered "no
    definitions in xxxx..." echoing the whole path back, where definition/references refuse a
    name over 1,000 characters in one line. A path longer than any stored path is refused."""
    proj = tmp_path / "proj"
    write_corpus(proj, {"app.py": "def run():\n    return 1\n"})
    done = run_cli("index", "proj", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    huge = "x" * 10_000
    out = run_cli("outline", huge, cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip() == "ragdb: the path is over 4,096 characters"
    with RagDB(tmp_path / "data" / "processed" / "rag.db") as rag:
        with pytest.raises(RagdbError, match="over 4,096"):
            rag.outline("y" * 1_000_000)
        assert [p.path for p in rag.outline("proj/app.py").places] == ["proj/app.py"] * 2


def test_an_empty_map_under_filters_does_not_say_the_index_is_empty(tmp_path: Path) -> None:
    """`ragdb map --path 'nothere/*'` on an index full of definitions said "no definitions in
    the index: `ragdb index` reads them from the code", sending the user to re-index; it now
    says the filters kept none (and says the index has none only where that is so)."""
    proj = tmp_path / "proj"
    write_corpus(proj, {"app.py": "def run():\n    return helper()\n\n\ndef helper():\n"
                                  "    return 1\n"})
    assert run_cli("index", "proj", "--no-vectors", cwd=tmp_path).returncode == 0
    whole = run_cli("map", cwd=tmp_path)
    assert whole.returncode == 0 and "def run" in whole.stdout, whole.stderr
    for option in (["--path", "nothere/*"], ["--path", "src["], ["--exclude", "*.py"]):
        none = run_cli("map", *option, cwd=tmp_path)
        assert none.returncode == 0, none.stderr
        assert none.stderr.strip() == (
            "ragdb: no definitions in the files --path/--lang/--exclude keep"), option
