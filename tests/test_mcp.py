"""`ragdb mcp`: the real server over stdio, driven by the official SDK's client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import models_dir_without_writer, run_cli
from tests.polyglot import DESCRIBED, write_repo


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working folder with the polyglot repository indexed lexical-only into rag.db."""
    work = tmp_path_factory.mktemp("mcp")
    write_repo(work / "repo")
    done = run_cli("index", "repo", "--no-vectors", "--db", "rag.db", cwd=work)
    assert done.returncode == 0, done.stderr
    return work


def _params(work: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "VIRTUAL_ENV")}
    env["RAGDB_MODELS_DIR"] = str(models_dir_without_writer())
    return StdioServerParameters(command=sys.executable, args=["-m", "ragdb", "mcp", "--db",
                                                               "rag.db"], env=env, cwd=work)


async def _session_run(work: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    results: list[Any] = []
    async with stdio_client(_params(work)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            results.append(await session.list_tools())
            for name, args in calls:
                results.append(await session.call_tool(name, args))
    return results


def _call(work: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    return anyio.run(_session_run, work, calls)


def test_tools_search_status_index_and_errors(indexed: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": description, "k": 3, "mode": "lexical"})
        for description, _rel in DESCRIBED
    ]
    calls += [
        ("search", {"query": "buffer checksum header greeting", "k": 10, "mode": "lexical",
                    "lang": ["rust", "c"]}),
        ("search", {"query": "buffer checksum header greeting", "k": 10, "mode": "lexical",
                    "path": "server/*"}),
        ("search", {"query": "   ", "k": 3}),
        ("search", {"query": "ring buffer", "k": 0}),
        ("search", {"query": "ring buffer", "k": 101}),
        ("search", {"query": "ring buffer", "mode": "fuzzy"}),
        ("search", {"query": "ring buffer", "mode": "dense"}),
        ("status", {}),
        ("index", {}),
    ]
    tools, *results = _call(indexed, calls)
    assert {t.name for t in tools.tools} == {"search", "answer", "index", "status"}
    search_tool = next(t for t in tools.tools if t.name == "search")
    assert search_tool.output_schema and "sources" in search_tool.output_schema["properties"]

    for (description, rel), result in zip(DESCRIBED, results):
        assert not result.is_error
        top = result.structured_content["sources"][0]
        assert top["file_path"] == f"repo/{rel}", description
        assert {"start_line", "end_line", "text", "score", "language"} <= set(top)
        assert f"repo/{rel}:{top['start_line']}-{top['end_line']}" in result.content[0].text
    rest = results[len(DESCRIBED):]
    langs = {s["language"] for s in rest[0].structured_content["sources"]}
    assert langs == {"rust", "c"}
    paths = {s["file_path"] for s in rest[1].structured_content["sources"]}
    assert paths == {"repo/server/headers.go", "repo/server/secret_public.go"}
    for bad, needle in zip(rest[2:7], ["empty", "k must be", "k must be", "mode must be",
                                       "no vectors"]):
        assert bad.is_error, needle
        message = bad.content[0].text
        assert needle in message and "\n" not in message and "Traceback" not in message
    status = rest[7].structured_content
    assert status["files"] == 6 and status["languages"]["go"] == 2
    assert [r["path"] for r in status["roots"]] == ["repo"]
    index = rest[8].structured_content
    assert index["roots"] == ["repo"] and index["files_unchanged"] == 6


def test_index_takes_no_paths_from_the_client(indexed: Path) -> None:
    _tools, result = _call(indexed, [("index", {"roots": ["/etc"]})])
    # Unknown arguments are ignored by the schema: still only the recorded roots are indexed.
    assert result.is_error or result.structured_content["roots"] == ["repo"]


def test_a_client_that_disconnects_ends_the_server(indexed: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "ragdb", "mcp", "--db", "rag.db"],
                            cwd=indexed, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}
    proc.stdin.write((json.dumps(hello) + "\n").encode())
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline())
    assert reply["id"] == 1 and "serverInfo" in reply["result"]
    started = time.monotonic()
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0
    assert time.monotonic() - started < 20
    assert b"Traceback" not in proc.stderr.read()  # type: ignore[union-attr]


def test_answer_tool_cites_passages_of_the_filtered_sources(indexed: Path) -> None:
    """Only the small offline model exists here: the answer is passages of the sources."""
    description, rel = DESCRIBED[0]
    _tools, answer, bad = _call(indexed, [
        ("answer", {"query": description, "k": 3, "mode": "lexical",
                    "path": f"repo/{rel}"}),
        ("answer", {"query": description, "style": "poem"}),
    ])
    assert not answer.is_error, answer.content
    body = answer.structured_content
    assert body["style"] == "extractive" and body["cited"]
    assert {s["file_path"] for s in body["sources"]} == {f"repo/{rel}"}
    assert f"[{body['cited'][0]}]" in body["answer"]
    assert bad.is_error and "style must be one of" in bad.content[0].text
