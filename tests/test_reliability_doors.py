"""Issue 17, the doors: a real `ragdb serve` on a loopback port, the real `ragdb mcp` spoken to
line by line over its stdio, and the real CLI, all over one small index with vectors."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import queue
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import IO, Any
from urllib.error import URLError
from urllib.request import urlopen

import pytest

from tests.conftest import REPO, free_port, run_cli, write_corpus

DATASET_BATCH = 16  # ragdb.datasette_plugin.service.DATASET_BATCH
MAX_DATASET_QUESTIONS = 1000


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(root / "home"), "HF_HUB_OFFLINE": "1",
            "RAGDB_MODELS_DIR": str(REPO / "data" / "models")}


def _children() -> dict[int, list[int]]:
    """Every live process's children, from /proc (zombies count as gone)."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if fields[0] != "Z":
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def descendants(pid: int) -> set[int]:
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _end(pids: set[int]) -> None:
    """Kill what a test started and left (by pid), so no process outlives the module."""
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Served:
    def __init__(self, root: Path, port: int, process: subprocess.Popen[bytes]) -> None:
        self.root, self.port, self.process = root, port, process
        self.base = f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`ragdb serve` over a small index with vectors (the killing test ends it last)."""
    root = tmp_path_factory.mktemp("doors")
    write_corpus(root / "data" / "raw" / "proj")
    built = run_cli("index", "data/raw", "--db", "rag.db", cwd=root, env=_env(root))
    assert built.returncode == 0, built.stderr
    port = free_port()
    log_path = root / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragdb", "serve", "--db", "rag.db", "--port", str(port)],
            cwd=root, stdout=log, stderr=subprocess.STDOUT, env=_env(root))
    spawned: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log_path.read_text(errors="replace")
            try:
                with urlopen(f"http://127.0.0.1:{port}/-/ragdb/status", timeout=5):
                    break
            except (URLError, OSError):
                assert time.monotonic() < deadline, log_path.read_text(errors="replace")
                time.sleep(0.2)
        yield Served(root, port, process)
    finally:
        if process.poll() is None:
            spawned = descendants(process.pid)
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        _end(spawned)
        # The only traceback: sqlite3's report (Datasette turns them on) of the SQL
        # function's refusal, whose message the client cannot be given.
        output = log_path.read_text(errors="replace")
        refusals = output.count("ValueError: ragdb_fts_query: the question is too long")
        assert output.count("Traceback") == refusals, output[-3000:]


def call(served: Served, path: str, body: bytes | None = None, method: str = "GET",
         headers: dict[str, str] | None = None,
         raw_target: bool = False) -> tuple[int, Any, dict[str, str]]:
    """One request as sent; `raw_target` sends the path as the request target unchanged."""
    if raw_target:
        with socket.create_connection(("127.0.0.1", served.port), timeout=30) as sock:
            sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: localhost:{served.port}\r\n"
                         "Connection: close\r\n\r\n".encode())
            reply = b""
            while piece := sock.recv(65536):
                reply += piece
        head, _, payload = reply.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        got = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
        if got.get("transfer-encoding") == "chunked":
            payload = _unchunk(payload)
    else:
        conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=60)
        try:
            conn.putrequest(method, path)
            for key, value in (headers or {}).items():
                conn.putheader(key, value)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            response = conn.getresponse()
            payload = response.read()
            status, got = response.status, {k.lower(): v for k, v in response.getheaders()}
        finally:
            conn.close()
    text = payload.decode("utf-8", "replace")
    assert "Traceback" not in text
    try:
        return status, json.loads(text) if text else None, got
    except json.JSONDecodeError:
        return status, text, got


def _unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size, _, rest = data.partition(b"\r\n")
        n = int(size, 16)
        if not n:
            break
        out, data = out + rest[:n], rest[n + 2:]
    return out


JSON = {"Content-Type": "application/json"}


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragdb: "), done.stderr
    return lines[0]


def cached(root: Path) -> int:
    """Rows of the query cache: each question a search ran (and cached) adds one."""
    with closing(sqlite3.connect(f"file:{root / 'rag.db'}?mode=ro", uri=True)) as conn:
        return int(conn.execute("SELECT count(*) FROM query_cache").fetchone()[0])


def dataset(n: int, words: int = 1, seed: int = 0) -> bytes:
    """n distinct questions (never cached before) of `words` made-up words each."""
    rnd = random.Random(f"{seed}-{time.time_ns()}")
    return json.dumps({"rag_questions": [
        {"question_id": f"q{i}", "question": " ".join(
            f"zq{rnd.randrange(10**9)}" for _ in range(words)) + " lora adapter"}
        for i in range(n)]}).encode()


# -- 10. one rule for question text, on every door -------------------------------------------

SURROGATE = "lora \udcff"  # what `ragdb search $'lora \xff'` gets in argv


def test_undecodable_question_is_one_line_on_the_cli(served: Served) -> None:
    root, env = served.root, _env(served.root)
    for args in (["search", SURROGATE], ["search", SURROGATE, "--mode", "dense"],
                 ["search", SURROGATE, "--mode", "lexical"],
                 ["answer", SURROGATE, "--save-directory", "answers"]):
        line = one_line(run_cli(*args, "--db", "rag.db", cwd=root, env=env))
        assert "not valid Unicode" in line, args
    assert not (root / "answers").exists()
    (root / "bad.json").write_text(
        '{"rag_questions": [{"question_id": "a", "question": "lora"}, '
        '{"question_id": "b", "question": "lora \\ud800"}]}', "utf-8")
    (root / "bad_id.json").write_text(
        '{"rag_questions": [{"question_id": "\\ud800", "question": "lora"}]}', "utf-8")
    for name, needle in (("bad.json", "question 2 is not valid Unicode"),
                         ("bad_id.json", "question_id of question 1 is not valid Unicode")):
        line = one_line(run_cli("search-dataset", "--dataset-path", name, "--save-directory",
                                "out", "--db", "rag.db", cwd=root, env=env))
        assert needle in line
    assert not (root / "out").exists()
    too_long = one_line(run_cli("search", "lora " * 801, "--db", "rag.db", cwd=root, env=env))
    assert "too long (4005 characters, at most 4000)" in too_long


def test_undecodable_question_is_400_on_http(served: Served) -> None:
    body = b'{"rag_questions": [{"question_id": "a", "question": "lora \\ud800"}]}'
    status, answer, _ = call(served, "/-/ragdb/search-dataset", body, "POST", JSON)
    assert status == 400 and "question 1 is not valid Unicode" in answer["error"], answer
    status, answer, _ = call(served, "/-/ragdb/search?q=lora%ED%A0%80&mode=lexical")
    assert status == 400 and "not valid UTF-8" in answer["error"], answer
    status, answer, _ = call(served, "/-/ragdb/search", b'{"q": "lora \\ud800"}', "POST", JSON)
    assert status == 400 and "q is not valid Unicode" in answer["error"], answer


# -- 14 (and 10). MCP: caps, one-line errors, a reply to every line ---------------------------

class RawMcp:
    """`ragdb mcp` as a client process sees it: lines in, lines out."""

    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragdb", "mcp", "--db", "rag.db"], cwd=cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=_env(cwd))
        self.lines: queue.Queue[bytes] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            self.lines.put(line)

    def send(self, raw: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(raw + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=60)  # guards a hang: a line never answered
        except queue.Empty:
            raise AssertionError("the MCP server never answered") from None
        answer: dict[str, Any] = json.loads(line)
        return answer

    def tool(self, request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                              "params": {"name": name, "arguments": arguments}}).encode())
        answer = self.reply()
        assert answer["id"] == request_id, answer
        return answer

    def close(self) -> tuple[int, bytes]:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        return code, self.process.stderr.read()


def _tool_error(answer: dict[str, Any]) -> str:
    result = answer["result"]
    assert result["isError"], answer
    text: str = result["content"][0]["text"]
    assert "\n" not in text and "Traceback" not in text, text
    return text


def test_mcp_caps_types_and_malformed_lines(served: Served) -> None:
    mcp = RawMcp(served.root)
    try:
        mcp.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}).encode())
        assert "serverInfo" in mcp.reply()["result"]
        mcp.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        huge = " ".join(f"w{i}" for i in range(150_000))  # about 1 MB of distinct words
        refused = mcp.tool(2, "search", {"query": huge, "mode": "lexical"})
        assert "too long" in _tool_error(refused)
        for n, k in enumerate([True, "abc", 2.5, 0, 101], 3):
            text = _tool_error(mcp.tool(n, "search", {"query": "lora", "k": k}))
            assert "k must be a whole number from 1 to 100" in text, text
        assert "query" in _tool_error(mcp.tool(8, "search", {"query": 5}))
        assert "path" in _tool_error(mcp.tool(9, "search", {"query": "lora", "path": [1]}))
        for n, tool, query in ((10, b"search", b"lora \\ud800"), (11, b"answer", b"lora \\ud800"),
                               (14, b"search", b"lora \xff")):  # an escape, a raw byte
            mcp.send(b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": '
                     b'{"name": "%s", "arguments": {"query": "%s"}}}' % (n, tool, query))
            answer = mcp.reply()
            assert answer["id"] == n and "not valid Unicode" in _tool_error(answer)
        for raw, code in ((b"{not json", -32700), (b"\xff\xfe", -32700),
                          (b"[1, 2]", -32600), (b'{"jsonrpc": "2.0", "id": 12}', -32600)):
            mcp.send(raw)
            answer = mcp.reply()
            assert answer["error"]["code"] == code, (raw, answer)
            assert answer["id"] == (12 if b'"id": 12' in raw else None), answer
        found = mcp.tool(13, "search", {"query": "Gemma2DecoderLayer", "k": "2",
                                        "mode": "lexical"})["result"]
        assert not found["isError"] and found["structuredContent"]["k"] == 2
        assert found["structuredContent"]["sources"][0]["file_path"].endswith("layers.py")
    finally:
        code, stderr = mcp.close()
    assert code == 0 and b"Traceback" not in stderr, stderr[-2000:]


# -- 13. a big dataset holds the search worker one batch at a time ----------------------------

def test_a_dataset_over_the_cap_is_413(served: Served) -> None:
    before = cached(served.root)
    status, answer, _ = call(served, "/-/ragdb/search-dataset?mode=lexical",
                             dataset(MAX_DATASET_QUESTIONS + 1), "POST", JSON)
    assert status == 413 and "at most 1000" in answer["error"], answer
    assert cached(served.root) == before  # refused before any search


def test_short_searches_get_through_a_big_dataset(served: Served) -> None:
    total = 3 * DATASET_BATCH
    body = dataset(total, words=30, seed=1)  # hybrid: every question is embedded (slow)
    result: dict[str, Any] = {}

    def run() -> None:
        result["reply"] = call(served, "/-/ragdb/search-dataset?k=3&mode=hybrid", body,
                               "POST", JSON)

    before = cached(served.root)
    runner = threading.Thread(target=run)
    runner.start()
    try:
        deadline = time.monotonic() + 120  # guards a hang
        while cached(served.root) == before:  # until the first batch is under way
            assert runner.is_alive() and time.monotonic() < deadline, result
            time.sleep(0.005)
        status, answer, _ = call(served, "/-/ragdb/search?q=Gemma2DecoderLayer+zz{}&k=1&"
                                 "mode=lexical".format(random.randrange(10**9)))
        assert status == 200 and answer["sources"], answer
        done_then = cached(served.root) - before - 1  # dataset questions searched so far
        assert done_then <= 2 * DATASET_BATCH < total, done_then
    finally:
        runner.join(timeout=300)
    status, answer, _ = result["reply"]
    assert status == 200 and len(answer["search_results"]) == total


def test_a_client_that_leaves_stops_its_dataset(served: Served) -> None:
    total = 3 * DATASET_BATCH
    body = dataset(total, words=30, seed=2)
    before = cached(served.root)
    with socket.create_connection(("127.0.0.1", served.port), timeout=30) as sock:
        sock.sendall(b"POST /-/ragdb/search-dataset?k=3&mode=hybrid HTTP/1.1\r\n"
                     b"Host: localhost\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
    # The short search queues behind whatever batch is running, then runs.
    status, answer, _ = call(served, "/-/ragdb/search?q=trust_remote_code+zz{}&k=1&"
                             "mode=lexical".format(random.randrange(10**9)))
    assert status == 200 and answer["sources"], answer
    time.sleep(1.0)  # any batch still to come would be under way by now
    done = cached(served.root) - before - 1
    assert done <= DATASET_BATCH, done


# -- 15, 16d, 16e. request targets, the SQL function, framing -------------------------------

@pytest.mark.parametrize("target, status", [
    ("nope", 400), ("*", 400), ("//x", 404), ("//evil.example/", 404), ("/rag//x", 404),
    ("/rag/nope.json", 404), ("/nope", 404),
])
def test_odd_request_targets_are_4xx(served: Served, target: str, status: int) -> None:
    got, answer, headers = call(served, target, raw_target=True)
    assert got == status, (target, got, answer)
    assert "location" not in headers  # `//evil.example/` is no redirect to another site
    if not target.startswith("/") or target.startswith("//") or target.endswith(".json"):
        assert headers["content-type"].startswith("application/json") and answer["error"]


def test_fts_query_function_refuses_an_over_long_question(served: Served) -> None:
    long_text = "replace(hex(zeroblob(200000)),'00','lora+')"  # 1,000,000 characters
    status, answer, _ = call(served, f"/rag.json?sql=select+ragdb_fts_query({long_text})")
    assert status == 400, answer
    status, answer, _ = call(served, "/rag.json?sql=select+ragdb_fts_query('lora')&_shape=array")
    assert status == 200 and list(answer[0].values()) == ['"lora"'], answer


def test_the_question_page_cannot_be_framed(served: Served) -> None:
    status, _page, headers = call(served, "/-/ragdb/ask?q=lora")
    assert status == 200
    assert headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


# -- 16f. answer --k 0 refuses another application's database ------------------------------

def test_answer_with_k_zero_refuses_a_foreign_database(tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    with closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.commit()
    before = hashlib.sha256(other.read_bytes()).hexdigest()
    done = run_cli("answer", "lora", "--k", "0", "--db", str(other), "--save-directory",
                   "answers", cwd=tmp_path)
    assert "is not a ragdb index" in one_line(done)
    assert hashlib.sha256(other.read_bytes()).hexdigest() == before
    assert not (tmp_path / "answers").exists()


# -- 16g. a no-op index run loads only what it uses ------------------------------------------

def test_a_no_op_index_run_imports_no_numpy_pydantic_or_openvino(served: Served) -> None:
    """The start-up cost of `ragdb index` with nothing to do was mostly imports (numpy by
    sqlite_vec and the vector code, pydantic by the schemas): half of its 0.6 s. No timing
    here (hosts differ): what it imports."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ragdb", "index", "--db", "rag.db"],
        cwd=served.root, env=_env(served.root), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "0 indexed, 4 unchanged" in done.stdout
    imported = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}
    assert "ragdb.indexing" in imported
    assert not {"numpy", "pydantic", "openvino", "sqlite_vec"} & imported


# -- 12. kill -9 of the server takes its workers with it (last: it ends the server) ----------

def test_killed_server_takes_its_workers_with_it(served: Served) -> None:
    status, answer, _ = call(served, "/-/ragdb/answer", b'{"q": "How do I load a LoRA '
                             b'adapter?", "k": 2, "mode": "lexical"}', "POST", JSON)
    assert status == 200 and answer["cited"], answer  # the answer worker and its manager
    status, answer, _ = call(served, "/-/ragdb/index", b"{}", "POST", JSON)
    assert status == 200, answer  # the index worker
    workers = descendants(served.process.pid)
    assert len(workers) >= 4, workers  # search, answer, manager, index (and a tracker)
    try:
        served.process.kill()
        served.process.wait()
        deadline = time.monotonic() + 20  # guards a hang; they went on for 35 s and more
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in workers if alive(pid)]
    finally:
        _end(workers)
