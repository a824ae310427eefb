"""Where ragdb reads and writes (issue 37, item 4): without --db every door finds the index the
way git finds its repository (the nearest of the current folder and its parents holding
data/processed/rag.db), model caches go to the models folder (never the current folder) and
`ragdb answer` saves its record beside the index. Real processes, run from subfolders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.error import URLError
from urllib.request import Request, urlopen

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import (
    MODELS,
    free_port,
    models_dir_without_writer,
    one_line_error,
    run_cli,
    write_corpus,
)

DB = Path("data") / "processed" / "rag.db"
LORA = "How do I load a LoRA adapter at run time?"


@pytest.fixture
def built(tmp_path: Path) -> Path:
    """A project indexed lexical-only from its top folder without --db: data/processed/rag.db."""
    top = tmp_path / "top"
    write_corpus(top / "data" / "raw" / "proj")
    done = run_cli("index", "data/raw", "--no-vectors", cwd=top)
    assert done.returncode == 0, done.stderr
    assert (top / DB).is_file()
    return top


def test_commands_find_the_index_from_a_subfolder(built: Path, tmp_path: Path) -> None:
    sub = built / "data" / "raw" / "proj" / "docs"
    found = run_cli("search", LORA, "--mode", "lexical", "--json", cwd=sub)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["file_path"] == "data/raw/proj/docs/features/lora.md"
    listed = run_cli("roots", cwd=sub)
    assert listed.returncode == 0 and listed.stdout.startswith("data/raw  "), listed.stderr

    # Re-indexing from the subfolder works from the top folder: the same names, no doubles.
    (built / "data" / "raw" / "proj" / "docs" / "new.md").write_text(
        "# Volcanoes\n\nMagma rises through the crater.\n", "utf-8")
    again = run_cli("index", "--no-vectors", cwd=sub)
    assert again.returncode == 0, again.stderr
    assert "1 indexed" in again.stdout and "0 removed" in again.stdout, again.stdout
    assert f"indexing into {built / DB}, the index of a parent folder" in again.stderr
    here = run_cli("index", ".", "--no-vectors", cwd=sub)  # a root given from the subfolder
    assert here.returncode == 0, here.stderr
    roots = run_cli("roots", "--json", cwd=built)
    assert [r["path"] for r in json.loads(roots.stdout)] == ["data/raw", "data/raw/proj/docs"]

    answered = run_cli("answer", LORA, "--mode", "lexical", "--model", "offline", cwd=sub)
    assert answered.returncode == 0, answered.stderr
    saved = Path(answered.stderr.strip().splitlines()[-1].removeprefix("saved "))
    assert saved.parent == built / "data" / "processed" / "outputs" / "answers"
    assert json.loads(saved.read_text("utf-8"))["search_results"][0]["answer"]

    # RAGDB_DB wins over the search; a folder with no index above it has none.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    by_env = run_cli("search", "volcano magma", "--mode", "lexical", "--json", cwd=elsewhere,
                     env={"RAGDB_DB": str(built / DB)})
    assert json.loads(by_env.stdout)[0]["file_path"] == "data/raw/proj/docs/new.md"
    missing = run_cli("search", "lora", cwd=elsewhere)
    assert "no index at data/processed/rag.db" in one_line_error(missing)
    assert sorted(p.name for p in sub.iterdir()) == ["features", "new.md", "usage"]
    assert not any(elsewhere.iterdir())


def _mcp_calls(cwd: Path) -> list[Any]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "VIRTUAL_ENV")}
    env["RAGDB_MODELS_DIR"] = str(models_dir_without_writer())
    params = StdioServerParameters(command=sys.executable, args=["-m", "ragdb", "mcp"], env=env,
                                   cwd=cwd)

    async def run() -> list[Any]:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return [await session.call_tool("status", {}),
                        await session.call_tool("index", {}),
                        await session.call_tool("search", {"query": LORA, "mode": "lexical"})]

    return anyio.run(run)


@pytest.fixture
def serve_from(built: Path) -> Iterator[int]:
    """`ragdb serve` without --db, started in a subfolder of the indexed project."""
    port = free_port()
    log = built / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragdb", "serve", "--port", str(port)],
            cwd=built / "data" / "raw", stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "RAGDB_MODELS_DIR": str(models_dir_without_writer()),
                 "HF_HUB_OFFLINE": "1"})
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text(errors="replace")
            try:
                with urlopen(f"http://127.0.0.1:{port}/-/ragdb/status", timeout=5):
                    break
            except (URLError, OSError):
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_mcp_finds_the_index_from_a_subfolder_and_re_indexes_it(built: Path) -> None:
    status, index, search = _mcp_calls(built / "data" / "raw" / "proj")
    assert not status.is_error and status.structured_content["db_path"] == str(built / DB)
    assert not index.is_error, index.content[0].text
    assert index.structured_content["roots"] == ["data/raw"]
    assert index.structured_content["files_removed"] == 0
    assert not search.is_error
    assert search.structured_content["sources"][0]["file_path"].endswith("lora.md")


def test_serve_finds_the_index_from_a_subfolder_and_re_indexes_it(
        built: Path, serve_from: int) -> None:
    base = f"http://127.0.0.1:{serve_from}/-/ragdb"
    with urlopen(f"{base}/status", timeout=30) as reply:
        assert json.loads(reply.read())["db_path"] == str(built / DB)
    post = Request(f"{base}/index", data=b"{}", method="POST",
                   headers={"Content-Type": "application/json"})
    with urlopen(post, timeout=120) as reply:
        done = json.loads(reply.read())
    assert done["roots"] == ["data/raw"] and done["stats"]["files_removed"] == 0, done


def test_nothing_is_written_in_the_folder_ragdb_runs_from(tmp_path: Path) -> None:
    """Embedding wrote a compiled-model cache into ./data/models/cache and `ragdb answer` its
    record into ./data/outputs/answers of whatever folder it ran in (under MCP: the user's
    project). Now the cache goes to the models folder and the record beside the index."""
    project = tmp_path / "project"
    write_corpus(project / "proj")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {"RAGDB_MODELS_DIR": "", "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "HF_HUB_OFFLINE": "1"}
    db = str(project / "rag.db")
    done = run_cli("index", str(project / "proj"), "--db", db, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    assert "chunks embedded" in done.stdout
    found = run_cli("search", LORA, "--db", db, "--json", cwd=cwd, env=env)
    assert found.returncode == 0, found.stderr
    answered = run_cli("answer", LORA, "--db", db, "--model", "offline", cwd=cwd, env=env)
    assert answered.returncode == 0, answered.stderr
    assert list(cwd.iterdir()) == []
    saved = list((project / "outputs" / "answers").glob("answer-*.json"))
    assert len(saved) == 1 and answered.stderr.strip().endswith(str(saved[0]))
    models = MODELS if MODELS.is_dir() else tmp_path / "cache" / "ragdb" / "models"
    assert any((models / "cache").iterdir())  # the compiled embedder, in the models folder
