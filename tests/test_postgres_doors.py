"""Every door on a PostgreSQL index: `ragdb serve --db postgresql://...` (the HTTP API and the
question page; Datasette itself serves SQLite files only), `ragdb mcp` and `ragdb index
--watch`, each as a real process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import anyio
import psycopg
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ragdb import RagDB
from ragdb.postgres import INDEX_LOCK_KEY
from tests.conftest import (
    free_port,
    models_dir_without_writer,
    run_cli,
    wait_until_serving,
    write_corpus,
)
from tests.test_watch import _lines

LORA = "data/raw/proj/docs/features/lora.md"


def _get(url: str) -> tuple[int, Any]:
    try:
        with urlopen(url, timeout=60) as response:
            body = response.read().decode()
            kind = response.headers.get("content-type", "")
            return response.status, json.loads(body) if "json" in kind else body
    except HTTPError as exc:
        return exc.code, json.loads(exc.read().decode())


def _post(url: str, body: bytes = b"{}") -> tuple[int, Any]:
    request = Request(url, data=body, headers={"content-type": "application/json"},
                      method="POST")
    try:
        with urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read().decode())
    except HTTPError as exc:
        return exc.code, json.loads(exc.read().decode())


def test_serve_answers_the_api_and_the_question_page(project: Path, pg_url: str) -> None:
    assert run_cli("index", "data/raw", "--no-vectors", "--db", pg_url, cwd=project
                   ).returncode == 0
    port = free_port()
    log = project / "serve.log"
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "ragdb", "serve", "--db", pg_url, "--port", str(port)],
            cwd=project, stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "RAGDB_MODELS_DIR": str(models_dir_without_writer())})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(server, base, log)
        status, found = _get(base + "/-/ragdb/search?q=How+do+I+load+a+LoRA+adapter&mode="
                             "lexical&k=3")
        assert status == 200 and found["sources"][0]["file_path"] == LORA, found
        status, info = _get(base + "/-/ragdb/status")
        assert status == 200 and info["has_chunks"] and info["db_path"].startswith(
            "postgresql://postgres@/"), info
        status, typo = _get(base + "/-/ragdb/search?q=lora&lang=pyhton")  # issue 37, item 15
        assert status == 400 and typo["error"] == (
            "language 'pyhton' not in this index; its languages: markdown, python, text"), typo
        for route in ("search", "answer"):  # issue 37, item 8
            status, bad = _post(f"{base}/-/ragdb/{route}", b'{"q": "lora", "path": 5}')
            assert status == 400 and bad["error"] == (
                "path must be a string or a list of strings, got 5"), bad
        status, page = _get(base + "/-/ragdb/ask")
        assert status == 200 and "<form" in page
        with psycopg.connect(pg_url, autocommit=True) as holder:  # a run elsewhere
            holder.execute("SELECT pg_advisory_lock(%s)", [INDEX_LOCK_KEY])
            status, refused = _post(base + "/-/ragdb/index")
            assert status == 409 and "another index run is in progress" in refused["error"]
        write_corpus(project / "data" / "raw" / "proj",
                     {"docs/new.md": "# Prefix caching\n\nAutomatic prefix caching reuses "
                                     "the KV cache.\n"})
        status, ran = _post(base + "/-/ragdb/index")
        assert status == 200 and ran["stats"]["files_indexed"] == 1, ran
        status, found = _get(base + "/-/ragdb/search?q=automatic+prefix+caching&mode=lexical")
        assert found["sources"][0]["file_path"] == "data/raw/proj/docs/new.md", found
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    assert "Traceback" not in log.read_text(errors="replace")


async def _mcp(project: Path, url: str) -> list[Any]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "VIRTUAL_ENV")}
    env["RAGDB_MODELS_DIR"] = str(models_dir_without_writer())
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "ragdb", "mcp", "--db", url], env=env,
                                   cwd=project)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return [await session.call_tool("search", {"query": "load a LoRA adapter",
                                                       "k": 3, "mode": "lexical"}),
                    await session.call_tool("status", {}),
                    await session.call_tool("index", {})]


def test_mcp_searches_and_indexes_postgresql(project: Path, pg_url: str) -> None:
    assert run_cli("index", "data/raw", "--no-vectors", "--db", pg_url, cwd=project
                   ).returncode == 0
    search, status, index = anyio.run(_mcp, project, pg_url)
    assert not search.is_error and search.structured_content["sources"][0]["file_path"] == LORA
    assert not status.is_error and status.structured_content["files"] == 4
    assert "postgres:@" not in json.dumps(status.structured_content)
    assert not index.is_error, index.content


def test_watch_reindexes_postgresql_on_a_change(project: Path, pg_url: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragdb", "index", "data/raw", "--no-vectors", "--watch",
         "--db", pg_url], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _lines(proc.stdout), _lines(proc.stderr)
    try:
        assert "4 indexed" in out.get(timeout=60)
        said = ""
        while "watching data/raw" not in said:
            said += err.get(timeout=30)
        time.sleep(1.5)  # the watcher starts just after it says so
        write_corpus(project / "data" / "raw" / "proj",
                     {"docs/spec.md": "# Speculative decoding\n\nA draft model proposes "
                                      "tokens that the target model verifies.\n"})
        summary = ""
        deadline = time.monotonic() + 30
        while "1 indexed" not in summary:
            summary += out.get(timeout=max(0.1, deadline - time.monotonic()))
        os.chdir(project)
        with RagDB(pg_url) as rag:
            hits = rag.search("draft model proposes tokens", 3, "lexical")
        assert hits[0].file_path == "data/raw/proj/docs/spec.md"
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=20)
    assert code in (0, 130)
    rest = []
    while not err.empty():
        rest.append(err.get())
    assert "Traceback" not in "".join(rest)
