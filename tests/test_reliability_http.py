"""Issue 12, the server half: a real `ragdb serve` process on a loopback port over a lexical
index, spoken to over raw sockets and urllib (what a browser or attacker would send)."""

from __future__ import annotations

import http.client
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port, run_cli, wait_until_serving, write_corpus

TIMEOUT_S = 1.5  # header and body timeouts of the server under test (shortened for speed)
BODY_DEADLINE_S = 3.0  # the whole body's deadline there (serve.BODY_DEADLINE_S, shortened)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, Path]]:
    root = tmp_path_factory.mktemp("http")
    write_corpus(root / "data" / "raw" / "proj")
    built = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=root)
    assert built.returncode == 0, built.stderr
    port = free_port()
    code = (
        "from pathlib import Path\n"
        "import ragdb.datasette_plugin.api as api, ragdb.datasette_plugin.serve as serve\n"
        f"api.BODY_TIMEOUT_S = serve.HEADER_TIMEOUT_S = {TIMEOUT_S}\n"
        f"serve.BODY_DEADLINE_S = {BODY_DEADLINE_S}\n"
        f"serve.serve(Path('rag.db'), host='127.0.0.1', port={port}, "
        "corpus_roots=[Path('data/raw')])\n"
    )
    log_path = root / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", code], cwd=root, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "HOME": str(root / "home"), "HF_HUB_OFFLINE": "1"})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, base, log_path, 60, 0.2)
        yield base, port, root
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def call(base: str, path: str, body: bytes | None = None, method: str = "GET",
         headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
    """One request as sent (http.client adds no Content-Type of its own, unlike urllib)."""
    port = int(base.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        sent = dict(headers or {})
        if "Host" in sent:
            conn.putrequest(method, path, skip_host=True)
        else:
            conn.putrequest(method, path)
        for key, value in sent.items():
            conn.putheader(key, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        raw = response.read()
        status, got = response.status, {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    text = raw.decode("utf-8", "replace")
    assert "Traceback" not in text
    try:
        return status, json.loads(text) if text else None, got
    except json.JSONDecodeError:
        return status, text, got


def generation(root: Path) -> int:
    with closing(sqlite3.connect(f"file:{root / 'rag.db'}?mode=ro", uri=True)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        row = conn.execute("SELECT value FROM settings WHERE key = 'generation'").fetchone()
        return int(row[0])


JSON = {"Content-Type": "application/json"}


# -- 12. bad input is 400, HEAD mirrors GET -------------------------------------------------

@pytest.mark.parametrize("body", [
    b'{"q": "lora", "k": ' + b"9" * 5000 + b"}",
    b'{"q": "lora \\ud800"}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"q": ' * 50_000 + b"1" + b"}" * 50_000,
])
def test_hostile_json_is_400(server: tuple[str, int, Path], body: bytes) -> None:
    base, _port, _root = server
    status, answer, _ = call(base, "/-/ragdb/search", body, "POST", JSON)
    assert status == 400 and set(answer) == {"error"}, answer


def test_huge_k_in_the_query_string_and_a_surrogate_are_400(
        server: tuple[str, int, Path]) -> None:
    base, _port, _root = server
    status, answer, _ = call(base, "/-/ragdb/search?q=lora&k=" + "9" * 5000)
    assert status == 400 and "k must be" in answer["error"]
    status, answer, _ = call(base, "/-/ragdb/search?q=lora%ED%A0%80")
    assert status in (200, 400), answer  # undecodable bytes are replaced, never a 500


def test_head_mirrors_get(server: tuple[str, int, Path]) -> None:
    base, _port, _root = server
    status, body, headers = call(base, "/-/ragdb/search?q=lora&mode=lexical", method="HEAD")
    assert status == 200 and not body
    assert headers["content-type"].startswith("application/json")
    status, _body, _headers = call(base, "/-/ragdb/status", method="HEAD")
    assert status == 200


# -- 8. cross-site requests -----------------------------------------------------------------

@pytest.mark.parametrize("route", ["/-/ragdb/index", "/-/ragdb/answer", "/-/ragdb/search"])
@pytest.mark.parametrize("body, headers, status", [
    (b'{"q": "lora"}', {"Content-Type": "text/plain"}, 415),
    (b'{"q": "lora"}', {"Origin": "http://evil.example"}, 415),  # a page's POST, no type
    (b"q=lora", {"Content-Type": "application/x-www-form-urlencoded"}, 403),
    (b"q=lora", {"Content-Type": "multipart/form-data; boundary=x"}, 415),
])
def test_cross_site_posts_are_refused(server: tuple[str, int, Path], route: str, body: bytes,
                                      headers: dict[str, str], status: int) -> None:
    """What any web page can send without a CORS preflight starts nothing."""
    base, _port, root = server
    before = generation(root)
    got, answer, _ = call(base, route, body, "POST", headers)
    assert got == status and set(answer) == {"error"}, answer
    assert generation(root) == before


def test_json_posts_still_work(server: tuple[str, int, Path]) -> None:
    base, _port, _root = server
    status, answer, _ = call(base, "/-/ragdb/search", b'{"q": "Gemma2DecoderLayer", "k": 1, '
                             b'"mode": "lexical"}', "POST", JSON)
    assert status == 200 and answer["sources"][0]["file_path"].endswith("layers.py")


def test_index_takes_a_post_without_content_type_from_a_client_that_is_no_browser(
        server: tuple[str, int, Path]) -> None:
    """`curl -s -X POST .../-/ragdb/index` sends no Content-Type: a run, not 415. A browser
    names its page's Origin (the case above), and search and answer still want JSON."""
    base, _port, _root = server
    for body in (b"", b"{}"):
        status, answer, _ = call(base, "/-/ragdb/index", body, "POST")
        assert status == 200 and answer["roots"] == ["data/raw"], answer
    status, answer, _ = call(base, "/-/ragdb/index", b"roots=/etc", "POST")
    assert status == 400 and "not valid JSON" in answer["error"], answer
    for route in ("/-/ragdb/search", "/-/ragdb/answer"):
        status, answer, _ = call(base, route, b'{"q": "lora"}', "POST")
        assert status == 415 and "no Content-Type" in answer["error"], answer


@pytest.mark.parametrize("route", ["/-/ragdb/search", "/-/ragdb/answer"])
@pytest.mark.parametrize("field, value", [
    ("path", 5), ("lang", True), ("exclude", 1.5), ("path", {"a": 1}), ("lang", ["go", 3]),
])
def test_a_filter_that_is_not_text_is_400_naming_it(
        server: tuple[str, int, Path], route: str, field: str, value: Any) -> None:
    """A number or a boolean was a 500 (TypeError); an object was read as its keys."""
    base, _port, _root = server
    body = json.dumps({"q": "lora", "mode": "lexical", field: value}).encode()
    status, answer, _ = call(base, route, body, "POST", JSON)
    assert status == 400, answer
    assert answer["error"].startswith(f"{field} must be a string or a list of strings, got "
                                      f"{json.dumps(value)}"), answer


def test_filters_as_strings_lists_and_repeats_still_work(server: tuple[str, int, Path]) -> None:
    base, _port, _root = server
    body = b'{"q": "lora", "mode": "lexical", "path": ["docs/*", "*.md"], "lang": "markdown"}'
    status, answer, _ = call(base, "/-/ragdb/search", body, "POST", JSON)
    assert status == 200 and answer["path"] == ["*.md", "docs/*"], answer
    status, answer, _ = call(base, "/-/ragdb/search?q=lora&mode=lexical&lang=markdown&lang=text")
    assert status == 200 and answer["lang"] == ["markdown", "text"], answer


# -- 9. the Host header ---------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/-/ragdb/search?q=lora&mode=lexical", "/rag/chunks.json",
                                  "/"])
def test_foreign_host_names_are_400(server: tuple[str, int, Path], path: str) -> None:
    """DNS rebinding: the attacker's name resolves to 127.0.0.1, the Host header keeps it."""
    base, port, _root = server
    for host in (f"evil.example:{port}", "evil.example", f"localhost:{port + 1}"):
        status, answer, _ = call(base, path, headers={"Host": host})
        assert status == 400 and "allowed_hosts" in answer["error"], (host, answer)
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
        status, _answer, _ = call(base, path, headers={"Host": host})
        assert status == 200, host


# -- 10. stalled connections ----------------------------------------------------------------

def test_stalled_headers_and_bodies_are_timed_out(server: tuple[str, int, Path]) -> None:
    _base, port, _root = server
    with socket.create_connection(("127.0.0.1", port), timeout=20) as stalled:
        stalled.sendall(b"GET /-/ragdb/status HTTP/1.1\r\nHost: localhost\r\n")  # never ends
        started = time.monotonic()
        assert stalled.recv(1024) == b""  # closed by the server
        assert time.monotonic() - started < TIMEOUT_S + 5
    with socket.create_connection(("127.0.0.1", port), timeout=20) as slow:
        slow.sendall(b"POST /-/ragdb/search HTTP/1.1\r\nHost: localhost\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"q\":")
        started = time.monotonic()
        reply = b""
        while b"\r\n\r\n" not in reply:
            piece = slow.recv(4096)
            if not piece:
                break
            reply += piece
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert time.monotonic() - started < TIMEOUT_S + 5


def _reply_complete(reply: bytes) -> bool:
    """Whether an HTTP reply holds its headers and the whole body its Content-Length names."""
    head, found, body = reply.partition(b"\r\n\r\n")
    if not found:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def test_a_body_trickled_a_byte_at_a_time_is_timed_out(server: tuple[str, int, Path]) -> None:
    """Each byte comes well within the pause allowed (TIMEOUT_S), so only a deadline for the
    whole body ends it: three such clients each get a 408 once it has passed."""
    _base, port, _root = server
    clients = []
    for _ in range(3):
        sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        sock.sendall(b"POST /-/ragdb/search HTTP/1.1\r\nHost: localhost\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
        sock.setblocking(False)
        clients.append(sock)
    started = time.monotonic()
    replies = [b""] * len(clients)
    closed = [False] * len(clients)
    took = 0.0
    try:
        # A reply is read whole (its Content-Length, or until the server closes): headers and
        # body can arrive in separate segments (CI once saw the headers without the body).
        while not all(closed) and time.monotonic() - started < BODY_DEADLINE_S + 10:
            for n, sock in enumerate(clients):
                if closed[n]:
                    continue
                try:
                    piece = sock.recv(4096)
                except BlockingIOError:
                    piece = None
                except OSError:
                    piece = b""
                if piece == b"":
                    closed[n] = True
                elif piece:
                    if not replies[n]:
                        took = time.monotonic() - started
                    replies[n] += piece
                    closed[n] = _reply_complete(replies[n])
                if not replies[n] and not closed[n]:
                    try:
                        sock.send(b" ")
                    except OSError:
                        pass
            time.sleep(TIMEOUT_S / 3)
    finally:
        for sock in clients:
            sock.close()
    for reply in replies:
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert b"did not arrive within" in reply and b"connection: close" in reply.lower()
    assert BODY_DEADLINE_S - 0.5 < took < BODY_DEADLINE_S + 5


def test_an_unknown_sort_column_is_400_and_one_log_line(server: tuple[str, int, Path]) -> None:
    """Datasette's 500 printed a traceback with local variables per request: any client could
    fill the server's log."""
    base, _port, root = server
    log = root / "server.log"
    for path, message in [
        ("/rag/files.json?_sort=nosuch", "Cannot sort table by nosuch"),
        ("/rag/files.json?_sort_desc=nosuch", "Cannot sort table by nosuch"),
        ("/rag/files.json?_sort=path&_sort_desc=path", "Cannot use _sort and _sort_desc"),
        ("/rag/files?_sort=nosuch", "Cannot sort table by nosuch"),
    ]:
        before = log.stat().st_size
        status, answer, _ = call(base, path)
        assert status == 400, answer
        if path.split("?")[0].endswith(".json"):
            assert answer["error"].startswith(message) and answer["status"] == 400, answer
        else:
            assert message in answer, answer
        time.sleep(0.2)  # the access log line
        with log.open("rb") as written:
            written.seek(before)
            added = written.read().decode("utf-8", "replace").splitlines()
        assert len(added) == 1 and " 400" in added[0], added


# -- 1. (part) Datasette's SQL cannot damage the index --------------------------------------

def test_pages_keep_working_after_a_with_delete_request(server: tuple[str, int, Path]) -> None:
    base, _port, root = server
    before = generation(root)
    status, _answer, _ = call(
        base, "/rag.json?sql=with+x+as+(select+1)+delete+from+files")
    assert status in (400, 403), _answer
    for path in ("/rag/files.json", "/rag/chunks.json?_size=5",
                 "/-/ragdb/search?q=lora&mode=lexical"):
        status, answer, _ = call(base, path)
        assert status == 200, answer
    assert generation(root) == before
    with closing(sqlite3.connect(f"file:{root / 'rag.db'}?mode=ro", uri=True)) as conn:
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 4


# -- 1. one SQLite library per process: no torn reads during an index run -------------------

def test_reads_during_an_index_run_see_before_or_after_never_a_mix(
    server: tuple[str, int, Path]
) -> None:
    """Datasette's reader pages `chunks` while ragdb's index run (in its worker process)
    rewrites it: every count is the one before the run or the one after, never in between."""
    import threading

    base, _port, root = server
    count_sql = "/rag.json?sql=select+count(*)+as+n+from+chunks&_shape=array"

    def chunks() -> int:
        status, rows, _ = call(base, count_sql)
        assert status == 200, rows
        return int(rows[0]["n"])

    before = chunks()
    bulk = root / "data" / "raw" / "proj" / "bulk"
    bulk.mkdir()
    for i in range(300):  # code: no vectors to compute, only rows
        (bulk / f"mod{i:03}.py").write_text(
            f'"""Module {i}."""\n\n\ndef function_{i}(x: int) -> int:\n    return x + {i}\n')
    result: dict[str, Any] = {}

    def run_index() -> None:
        result["reply"] = call(base, "/-/ragdb/index", b"{}", "POST", JSON)

    runner = threading.Thread(target=run_index)
    runner.start()
    seen = []
    while runner.is_alive():
        seen.append(chunks())
    runner.join()
    status, body, _ = result["reply"]
    assert status == 200, body
    after = chunks()
    assert after > before, body
    # Every connection of Datasette's pool sees the new index: none was left holding an old
    # snapshot (the `with ... delete` request above once left one in an open transaction).
    assert [chunks() for _ in range(12)] == [after] * 12
    assert len(seen) >= 3, "the run ended before the reader could page"
    assert set(seen) <= {before, after}, sorted(set(seen))
    status, answer, _ = call(base, "/rag/chunks.json?_size=5")
    assert status == 200, answer
    generation(root)  # integrity_check ok
