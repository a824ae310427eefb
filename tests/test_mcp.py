"""`ragdb mcp`: the real server over stdio, driven by the official SDK's client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.conftest import REPO, models_dir_without_writer, run_cli
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
    assert {t.name for t in tools.tools} == {"search", "answer", "index", "status", "definition",
                                             "references", "callers", "outline", "map"}
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


def test_answer_tool_shows_blocks_of_the_filtered_sources(indexed: Path) -> None:
    """Only the small offline model exists here: the answer is whole blocks of the sources."""
    description, rel = DESCRIBED[0]
    _tools, answer, bad = _call(indexed, [
        ("answer", {"query": description, "k": 3, "mode": "lexical",
                    "path": f"repo/{rel}"}),
        ("answer", {"query": description, "style": "poem"}),
    ])
    assert not answer.is_error, answer.content
    body = answer.structured_content
    assert body["style"] == "extractive" and body["cited"]
    assert body["model"].startswith("blocks")
    assert {s["file_path"] for s in body["sources"]} == {f"repo/{rel}"}
    assert body["answer"].startswith(f"[{body['cited'][0]}] `repo/{rel}:")
    assert bad.is_error and "style must be one of" in bad.content[0].text


def test_filters_that_are_not_text_are_tool_errors_naming_the_field(indexed: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "ring buffer", "mode": "lexical", "path": 5}),
        ("search", {"query": "ring buffer", "mode": "lexical", "lang": True}),
        ("search", {"query": "ring buffer", "mode": "lexical", "exclude": {"a": 1}}),
        ("answer", {"query": "ring buffer", "mode": "lexical", "path": ["repo/*", 2]}),
        ("search", {"query": "ring buffer", "mode": "lexical", "path": ["repo/*"],
                    "exclude": "repo/server/*"}),
    ]
    _tools, *results = _call(indexed, calls)
    for result, field in zip(results[:4], ["path", "lang", "exclude", "path"]):
        assert result.is_error, field
        message = result.content[0].text
        assert f"{field}: must be a string or a list of strings, got " in message, message
        assert "\n" not in message
    assert not results[4].is_error, results[4].content


def _replies(work: Path, lines: list[bytes]) -> list[dict[str, Any] | None]:
    """Each line sent to a real `ragdb mcp` after initializing, and the reply it got within
    10 s (None: no reply)."""
    import select

    proc = subprocess.Popen([sys.executable, "-m", "ragdb", "mcp", "--db", "rag.db"],
                            cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}
    replies: list[dict[str, Any] | None] = []
    try:
        for line in [json.dumps(hello).encode(), *lines]:
            proc.stdin.write(line + b"\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 10)
            replies.append(json.loads(proc.stdout.readline()) if ready else None)
    finally:
        proc.stdin.close()
        proc.wait(timeout=20)
    assert replies[0] is not None and replies[0]["id"] == 0
    return replies[1:]


def test_requests_whose_id_is_not_a_string_or_an_integer_are_invalid(indexed: Path) -> None:
    """JSON-RPC ids are strings or integers (MCP: never null): any other id used to make the
    request a notification, which gets no reply, and the client waited for ever."""
    ids: list[Any] = [[1], {"a": 1}, 1.5, 2.0, None, True]
    lines = [json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/list"}).encode()
             for i in ids]
    lines.append(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}')
    replies = _replies(indexed, lines)
    for sent, reply in zip(ids, replies):
        assert reply is not None, f"no reply to id {sent!r}"
        assert reply["id"] is None and reply["error"]["code"] == -32600, (sent, reply)
    assert replies[-1] is not None and replies[-1]["id"] == 7 and "tools" in replies[-1]["result"]


#: An MCP client in a process of its own, as an agent is: it starts the server with the command
#: and arguments given (from its own folder), calls three tools and prints what they gave.
_CLIENT = """
import json, os, sys, anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for name, args in [("search", {"query": "ring buffer", "mode": "lexical"}),
                               ("index", {}), ("status", {})]:
                got = await session.call_tool(name, args)
                print(json.dumps([got.is_error, got.structured_content, got.content[0].text]))

anyio.run(main)
"""


def _documented(how: str, db: Path) -> list[str]:
    """The client configurations the docs give, with their placeholders filled in."""
    if how == "uv":  # Claude Code's .mcp.json, Claude Desktop, Cursor
        uv = shutil.which("uv")
        if uv is None:
            pytest.skip("uv is not on PATH")
        return [uv, "run", "--frozen", "--project", str(REPO), "ragdb", "mcp", "--db", str(db)]
    # VS Code's .vscode/mcp.json: the ragdb executable of ragdb's environment
    return [str(Path(sys.executable).parent / "ragdb"), "mcp", "--db", str(db)]


@pytest.mark.parametrize("how", ["uv", "executable"])
def test_the_documented_client_configuration_works_from_any_folder(
        tmp_path: Path, how: str) -> None:
    """An agent starts the server in a folder of its own choosing: search, index and status
    work there, and nothing is written in that folder or the project's (no .venv, no
    uv.lock: `uv run --directory <project>` made both, and then found no ragdb to run)."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    write_repo(project / "repo")
    done = run_cli("index", "repo", "--no-vectors", cwd=project)
    assert done.returncode == 0, done.stderr
    db = project / "data" / "processed" / "rag.db"
    elsewhere.mkdir()
    before = sorted(p.name for p in project.iterdir())
    env = {**os.environ, "RAGDB_MODELS_DIR": str(models_dir_without_writer())}
    client = subprocess.run([sys.executable, "-c", _CLIENT, *_documented(how, db)],
                            cwd=elsewhere, env=env, capture_output=True, text=True,
                            timeout=180)
    assert client.returncode == 0, client.stderr
    (search_error, search, _), (index_error, index, text), (status_error, status, _) = [
        json.loads(line) for line in client.stdout.splitlines()]
    assert not search_error and search["sources"][0]["file_path"].startswith("repo/")
    assert not index_error and index["roots"] == ["repo"] and index["files_unchanged"] == 6, text
    assert not status_error and status["db_path"] == str(db) and status["files"] == 6
    assert not any(elsewhere.iterdir())
    assert sorted(p.name for p in project.iterdir()) == before == ["data", "repo"]
