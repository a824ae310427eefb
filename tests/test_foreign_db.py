"""ragdb never writes a SQLite file that is not its own, and records the embedder it was told.

Each case runs the real CLI on another application's database, then checks the file byte for
byte where it matters: schema, rows, journal mode and user_version.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ragdb import worker
from ragdb.datasette_plugin.serve import make_datasette
from ragdb.datasette_plugin.service import service_for
from ragdb.db import APPLICATION_ID, Setting, connect, get_setting, scalar
from ragdb.embedder import _resolve
from ragdb.indexing import index_paths
from tests.conftest import run_cli, write_corpus


def _shop(path: Path, user_version: int = 2, application_id: int = 0) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
        conn.execute("INSERT INTO orders (item) VALUES ('tea'), ('cake')")
        conn.execute(f"PRAGMA user_version = {user_version}")
        conn.execute(f"PRAGMA application_id = {application_id}")
    conn.close()


def _state(path: Path) -> tuple[Any, ...]:
    conn = sqlite3.connect(path)
    try:
        return (
            conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall(),
            conn.execute("SELECT * FROM orders ORDER BY id").fetchall(),
            conn.execute("PRAGMA journal_mode").fetchone(),
            conn.execute("PRAGMA user_version").fetchone(),
            conn.execute("PRAGMA application_id").fetchone(),
        )
    finally:
        conn.close()


@pytest.mark.parametrize("command", [
    ["search", "tea"],
    ["answer", "what tea?", "--k", "1"],
    ["index", "data/raw"],
    ["index", "data/raw", "--into-existing"],  # it has a schema number of its own: refused
])
def test_another_applications_database_is_refused_and_untouched(
    project: Path, command: list[str]
) -> None:
    shop = project / "shop.sqlite"
    _shop(shop)
    before = _state(shop)
    result = run_cli(*command, "--db", str(shop), cwd=project)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not a ragdb index" in lines[0], result.stderr
    assert _state(shop) == before
    assert not Path(f"{shop}-wal").exists()


def test_a_database_marked_by_another_application_is_refused(project: Path) -> None:
    shop = project / "shop.sqlite"
    _shop(shop, user_version=0, application_id=0x1234)
    before = _state(shop)
    result = run_cli("index", "data/raw", "--into-existing", "--db", str(shop), cwd=project)
    assert result.returncode == 1 and "application_id 0x1234" in result.stderr
    assert _state(shop) == before


def test_into_existing_adds_ragdb_tables_only_when_asked(project: Path) -> None:
    shop = project / "shop.sqlite"
    _shop(shop, user_version=0)
    refused = run_cli("index", "data/raw", "--no-vectors", "--db", str(shop), cwd=project)
    assert refused.returncode == 1 and "--into-existing" in refused.stderr
    done = run_cli("index", "data/raw", "--no-vectors", "--into-existing", "--db", str(shop),
                   cwd=project)
    assert done.returncode == 0, done.stderr
    conn = sqlite3.connect(shop)
    assert conn.execute("SELECT * FROM orders ORDER BY id").fetchall() == [(1, "tea"),
                                                                           (2, "cake")]
    assert conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
    conn.close()
    found = run_cli("search", "LoRA adapters", "--mode", "lexical", "--db", str(shop),
                    cwd=project)
    assert found.returncode == 0 and "lora.md" in found.stdout


def test_a_newer_ragdb_index_is_refused_without_switching_to_wal(tmp_path: Path) -> None:
    db = tmp_path / "rag.db"
    write_corpus(tmp_path / "proj")
    index_paths(connect(db, create=True), [tmp_path / "proj"])
    raw = sqlite3.connect(db)
    raw.execute("PRAGMA journal_mode = DELETE")
    raw.execute("PRAGMA user_version = 999")
    raw.close()
    result = run_cli("search", "lora", "--db", str(db), cwd=tmp_path)
    assert result.returncode == 1 and "newer ragdb" in result.stderr
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    raw.close()


def test_an_index_from_before_the_mark_is_still_ours(tmp_path: Path) -> None:
    db = tmp_path / "rag.db"
    write_corpus(tmp_path / "proj")
    index_paths(connect(db, create=True), [tmp_path / "proj"])
    raw = sqlite3.connect(db)
    raw.execute("PRAGMA application_id = 0")  # as ragdb wrote it before the mark existed
    raw.close()
    conn = connect(db)
    assert scalar(conn, "PRAGMA application_id") == APPLICATION_ID
    assert scalar(conn, "SELECT count(*) FROM files") == 4


@pytest.mark.asyncio
async def test_server_index_run_records_the_configured_embedder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index run through the server with a configured embedder stores that embedder's
    name, so later queries are embedded by the model that made the vectors."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGDB_MODELS_DIR", str(tmp_path / "models"))
    write_corpus(tmp_path / "data" / "raw" / "proj")
    assert run_cli("index", "data/raw", "--db", "rag.db", cwd=tmp_path).returncode == 0
    model, tokenizer, _, _ = _resolve("all-MiniLM-L6-v2")
    other = tmp_path / "my-embedder"  # the same weights under another name: another identity
    other.mkdir()
    shutil.copy(model, other / "model.onnx")
    shutil.copy(tokenizer, other / "tokenizer.json")

    site = make_datasette(Path("rag.db"), corpus_roots=[Path("data/raw")],
                          extra={"embedder": str(other)})
    await site.invoke_startup()
    service = service_for(site)
    try:
        before = await site.client.get("/-/ragdb/search?q=load+a+LoRA+adapter&mode=dense")
        assert before.status_code == 200  # the search worker now holds the old embedder
        response = await site.client.post("/-/ragdb/index", json={})
        assert response.status_code == 200, response.text
        assert response.json()["vectors"]["reset"] is True
        conn = connect(Path("rag.db"))
        assert get_setting(conn, Setting.EMBEDDER_NAME) == str(other)
        stored_identity = get_setting(conn, Setting.EMBEDDER)
        assert stored_identity is not None and stored_identity.startswith("my-embedder@")
        search = await site.client.get("/-/ragdb/search?q=load+a+LoRA+adapter&mode=dense")
        assert search.status_code == 200 and search.json()["sources"]
        status = await service._call("search", worker.status)
        assert status["query_embedder"] == stored_identity
    finally:
        service.close()
