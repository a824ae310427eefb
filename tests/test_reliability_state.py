"""Issue 17, state that must stay consistent: the query cache's key, an embedder switch that is
interrupted or searched during, two index runs at once (every door), and what a search says
about incomplete vectors. Real files, the real small embedder (and a second real one built
from it), real `python -m ragdb` processes and a real `ragdb serve` on 127.0.0.1.

Every case ends with `PRAGMA integrity_check` ok, rows and search results equal to a clean run
over the same files, and no process of the test left behind.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import numpy as np
import pytest

from ragdb.database import RagDB
from ragdb.embedder import _import_openvino, _resolve, embedder_identity
from tests.conftest import (
    REPO,
    SMALL_CORPUS,
    free_port,
    one_line_error,
    run_cli,
    wait_until_serving,
    write_corpus,
)

ENV = {"RAGDB_MODELS_DIR": str(REPO / "data" / "models"), "HF_HUB_OFFLINE": "1"}


def pages(plant: str) -> dict[str, str]:
    """40 doc chunks (two vector batches of 32), worded apart from any other plant's. The
    volcano page is the shortest, so it is in the first batch (batches go shortest first): a
    dense search finds it once that batch commits."""
    found = {f"docs/page{i:02}.md": f"# Page {i}\n\nTopic {i}: widgets, gadgets and the "
             f"assembly line number {i} of the {plant} factory.\n" for i in range(39)}
    found["docs/lava.md"] = f"# Lava\n\nMagma rises and lava erupts from the {plant} volcano.\n"
    return found


VOLCANO = "molten rock coming out of an erupting mountain"
QUERIES = [(VOLCANO, "dense"), ("widgets on assembly line 7", "hybrid"),
           ("Gemma2DecoderLayer", "lexical"), ("load a LoRA adapter", "hybrid")]


# -- helpers ---------------------------------------------------------------------------------

def integrity_ok(db: Path) -> None:
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def rows(db: Path) -> dict[str, Any]:
    """Files, chunks, and vectors per chunk window, read through stock sqlite3."""
    integrity_ok(db)
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        files = conn.execute("SELECT path, sha256, size FROM files ORDER BY path").fetchall()
        chunks = conn.execute(
            "SELECT f.path, c.first_char, c.last_char, c.text FROM chunks c "
            "JOIN files f ON f.id = c.file_id ORDER BY f.path, c.first_char").fetchall()
        settings = dict(conn.execute(
            "SELECT key, value FROM settings WHERE key IN ('embedder', 'embedder_name', "
            "'embed_policy')").fetchall())
    vec = RagDB(db).conn  # vec0 needs sqlite-vec
    try:
        windows = vec.execute(
            "SELECT f.path, c.first_char, v.vector_id - c.id * 1000 FROM chunk_vectors v "
            "JOIN chunks c ON c.id = v.chunk_id JOIN files f ON f.id = c.file_id "
            "ORDER BY 1, 2, 3").fetchall()
    finally:
        vec.close()
    return {"files": files, "chunks": chunks, "settings": settings, "windows": windows}


def results(db: Path) -> list[list[tuple[str, int, int]]]:
    """The hits of QUERIES, uncached: what a clean run must also answer."""
    with RagDB(db, use_cache=False) as rag:
        return [[(h.file_path, h.first, h.last) for h in rag.search(q, 5, mode)]
                for q, mode in QUERIES]


def clean_run(root: Path, name: str, embedder: str | None = None) -> Path:
    """A fresh index beside rag.db over the same roots, run from the same folder (so the
    stored paths are the same); in this process, which has the embedder loaded already."""
    with closing(sqlite3.connect(f"file:{root / 'rag.db'}?mode=ro", uri=True)) as conn:
        roots = [r[0] for r in conn.execute("SELECT path FROM roots ORDER BY path")]
    here = os.getcwd()
    os.chdir(root)
    try:
        with RagDB(name) as rag:
            rag.index(roots, embedder_name=embedder)
    finally:
        os.chdir(here)
    return root / name


def assert_like_a_clean_run(root: Path, embedder: str | None = None) -> None:
    clean = clean_run(root, f"clean-{time.monotonic_ns()}.db", embedder)
    assert rows(root / "rag.db") == rows(clean)
    assert results(root / "rag.db") == results(clean)


def processes_in(root: Path) -> list[int]:
    """Processes whose working folder lies in the test's folder (servers, workers, runs)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if cwd == str(root) or cwd.startswith(f"{root}/"):
                found.append(int(entry.name))
    return found


def no_process_left(root: Path) -> None:
    deadline = time.monotonic() + 15
    while processes_in(root) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_in(root)


class Lines:
    """The lines a process prints, as they come (a thread reads them: no read blocks a test)."""

    def __init__(self, pipe: Any) -> None:
        self.queue: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.thread.start()

    def _read(self, pipe: Any) -> None:
        for line in pipe:
            self.seen.append(line)
            self.queue.put(line)

    def get(self, timeout: float = 60) -> str:
        line = self.queue.get(timeout=timeout)
        assert "Traceback" not in line, "".join(self.seen)
        return line

    def until(self, text: str) -> None:
        while text not in self.get():
            pass

    def all(self) -> str:
        """Everything, once the process has ended."""
        self.thread.join(timeout=30)
        return "".join(self.seen)


HOLDER = """
import os, sys, time
from pathlib import Path
from ragdb import RagDB

db, hold, embedder, *roots = sys.argv[1:]

def on_embedded(done: int, total: int) -> None:
    # After the first batch commits: say so, and wait while the hold file exists.
    if done and os.path.exists(hold):
        Path(hold + ".ready").touch()
        while os.path.exists(hold):
            time.sleep(0.02)

result = RagDB(db).index(roots, embedder_name=embedder or None, on_embedded=on_embedded)
print(result.vectors.embedded, result.vectors.total)
"""


_HOLDERS: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _end_held_runs() -> Iterator[None]:
    """A failed test must not leave a held run behind."""
    yield
    while _HOLDERS:
        process = _HOLDERS.pop()
        if process.poll() is None:
            process.kill()
            process.communicate()


class Holder:
    """An index run in a process of its own, held in flight right after its first vector
    batch committed (rows and some vectors in, more to come): a deterministic moment."""

    def __init__(self, root: Path, roots: list[str], embedder: str = "") -> None:
        self.hold = root / f"hold-{time.monotonic_ns()}"
        self.hold.touch()
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, "rag.db", str(self.hold), embedder, *roots],
            cwd=root, env={**os.environ, **ENV}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        _HOLDERS.append(self.process)
        ready = Path(f"{self.hold}.ready")
        deadline = time.monotonic() + 120
        while not ready.exists():
            if self.process.poll() is not None:
                raise AssertionError(self.process.communicate())
            assert time.monotonic() < deadline, "the run never reached its first batch"
            time.sleep(0.05)

    def release(self) -> str:
        self.hold.unlink()
        out, err = self.process.communicate(timeout=120)
        assert self.process.returncode == 0, err
        return out

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.communicate(timeout=30)
        assert self.process.returncode == -signal.SIGKILL


def build_second_embedder(folder: Path) -> Path:
    """A second real embedder, from the installed packages: the default model's int8 ONNX with
    a fixed random rotation of its 384-d output, saved as an OpenVINO IR with the same
    tokenizer. It ranks exactly as the default does, yet its vectors and the default's have
    nothing in common (cosine about 0), so mixing the two finds nothing."""
    ov = _import_openvino()
    from openvino import opset13 as ops  # type: ignore[import-untyped,unused-ignore]

    onnx, tokenizer, _, _ = _resolve("all-MiniLM-L6-v2")
    model = ov.Core().read_model(str(onnx))
    hidden = model.get_results()[0].input_value(0)
    rotation, _ = np.linalg.qr(np.random.default_rng(17).standard_normal((384, 384)))
    rotated = ops.result(ops.matmul(hidden, ops.constant(rotation.astype(np.float32)),
                                    False, False))
    rotated.output(0).get_tensor().set_names({"last_hidden_state"})
    folder.mkdir(parents=True)
    ov.save_model(ov.Model([rotated], model.get_parameters(), "rotated-minilm"),
                  str(folder / "openvino_model.xml"), compress_to_fp16=False)
    shutil.copy(tokenizer, folder / "tokenizer.json")
    return folder


@pytest.fixture(scope="module")
def second_embedder(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_second_embedder(tmp_path_factory.mktemp("embedders") / "rotated-minilm"))


def http(base: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = Request(base + path, data=data, method="POST" if data is not None else "GET",
                      headers={"Content-Type": "application/json"} if data else {})
    try:
        with urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A project indexed with vectors, served by a real `ragdb serve` (its search worker
    warmed up: the query embedder is loaded before any test runs)."""
    root = tmp_path_factory.mktemp("served")
    write_corpus(root / "data" / "raw" / "proj", {
        **SMALL_CORPUS,
        "docs/kernels.md": "# Kernels\n\nThe attention kernel launcher picks a kernel for "
                           "each batch of requests.\n",
    })
    built = run_cli("index", "data/raw", "--db", "rag.db", cwd=root, env=ENV)
    assert built.returncode == 0, built.stderr
    port = free_port()
    log_path = root / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragdb", "serve", "--db", "rag.db", "--port", str(port)],
            cwd=root, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, **ENV, "HOME": str(root / "home")})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, base, log_path, 60, 0.2)
        yield base, root
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: the server ends its workers
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert "Traceback" not in log_path.read_text(errors="replace")
    no_process_left(root)


# -- 2. the query cache keys exactly what the search depends on ------------------------------

def test_questions_that_differ_only_in_case_are_not_one_cache_entry(
        served: tuple[str, Path]) -> None:
    """Identifier splitting is case-sensitive, the cache key was not: `attentionkernellauncher`
    (one word, no match) cached an empty result that `attentionKernelLauncher` (three words
    that match) was then answered with, over the CLI and HTTP alike (the cache is in rag.db)."""
    base, root = served
    lower = run_cli("search", "attentionkernellauncher", "--mode", "lexical", "--json",
                    "--db", "rag.db", cwd=root, env=ENV)
    assert lower.returncode == 0, lower.stderr
    assert json.loads(lower.stdout) == []
    camel = run_cli("search", "attentionKernelLauncher", "--mode", "lexical", "--json",
                    "--db", "rag.db", cwd=root, env=ENV)
    assert camel.returncode == 0, camel.stderr
    found = json.loads(camel.stdout)
    assert found and found[0]["file_path"].endswith("docs/kernels.md")

    status, body = http(base, "/-/ragdb/search?q=kernellauncher&mode=lexical")
    assert status == 200 and body["sources"] == []
    status, body = http(base, "/-/ragdb/search?q=kernelLauncher&mode=lexical")
    assert status == 200 and body["sources"], body
    assert body["sources"][0]["file_path"].endswith("docs/kernels.md")
    # The same question again is a cache hit with the same hits (and the CLI's entry is the
    # server's: one cache in rag.db).
    again = run_cli("search", "kernelLauncher", "--mode", "lexical", "--json", "--db",
                    "rag.db", cwd=root, env=ENV)
    assert [s["file_path"] for s in json.loads(again.stdout)] == [
        s["file_path"] for s in body["sources"]]
    with RagDB(root / "rag.db", use_cache=False) as rag:
        assert rag.search("attentionkernellauncher", 5, "lexical") == []
    integrity_ok(root / "rag.db")


# -- 3. an embedder switch: never two models at once -----------------------------------------

def test_an_embedder_switch_searched_during_and_killed_resumes_with_its_model(
        tmp_path: Path, second_embedder: str) -> None:
    """The new embedder's identity was committed before its vectors and its name after all of
    them: a searcher that had loaded the old model kept embedding queries with it against the
    new vectors (dense found nothing), and after a kill the next plain `ragdb index` went
    back to the old model, dropping the switch."""
    write_corpus(tmp_path / "data" / "raw" / "proj", {**SMALL_CORPUS, **pages("Lyon")})
    first = run_cli("index", "data/raw", "--db", "rag.db", cwd=tmp_path, env=ENV)
    assert first.returncode == 0, first.stderr
    searcher = RagDB(tmp_path / "rag.db", use_cache=False)  # long-lived, like a server's
    assert searcher.search(VOLCANO, 1, "dense")[0].file_path.endswith("lava.md")

    switch = Holder(tmp_path, ["data/raw"], second_embedder)  # held after its first batch
    during = searcher.search(VOLCANO, 1, "dense")
    assert during and during[0].file_path.endswith("lava.md")
    assert searcher.searcher.loaded_embedder == embedder_identity(second_embedder)
    switch.kill()
    searcher.close()

    with closing(sqlite3.connect(tmp_path / "rag.db")) as conn:
        settings = dict(conn.execute("SELECT key, value FROM settings"))
    assert settings["embedder"] == embedder_identity(second_embedder)
    assert settings["embedder_name"] == second_embedder  # the switch survives the kill
    after = run_cli("search", VOLCANO, "--mode", "dense", "--k", "1", "--json", "--db",
                    "rag.db", cwd=tmp_path, env=ENV)
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)[0]["file_path"].endswith("lava.md")

    resumed = run_cli("index", "--db", "rag.db", cwd=tmp_path, env=ENV)  # a plain run
    assert resumed.returncode == 0, resumed.stderr
    assert "0 indexed" in resumed.stdout, resumed.stdout
    said = re.search(r"; (\d+) chunks embedded", resumed.stdout)
    assert said is not None, resumed.stdout
    embedded = int(said.group(1))
    assert_like_a_clean_run(tmp_path, second_embedder)
    with_vectors = len({(path, first) for path, first, _n in rows(tmp_path / "rag.db")["windows"]})
    assert embedded == with_vectors - 32  # it went on from the first batch, with the new model
    no_process_left(tmp_path)


# -- 9. one index run at a time, on every door -----------------------------------------------

async def _mcp_index(root: Path) -> Any:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "VIRTUAL_ENV")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "ragdb", "mcp", "--db",
                                   "rag.db"], env={**env, **ENV}, cwd=root)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("index", {})


def test_a_second_index_run_is_refused_on_every_door(served: tuple[str, Path]) -> None:
    """Two runs embedding at once collided ("UNIQUE constraint failed" on chunk_vectors'
    primary key; HTTP 500 beside a CLI run). While a run is in flight, a second one is refused
    in one line: the CLI, `--watch`, the HTTP API (409) and the MCP index tool. A watch that
    is already running waits for the run instead, then indexes its change."""
    import anyio

    base, root = served
    watcher = subprocess.Popen(
        [sys.executable, "-m", "ragdb", "index", "--db", "rag.db", "--watch"], cwd=root,
        env={**os.environ, **ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines, said = Lines(watcher.stdout), Lines(watcher.stderr)
        assert " indexed" in lines.get(timeout=60)  # its first run is done
        write_corpus(root / "extra9", pages("Turin"))  # not watched: only the held run sees it
        run = Holder(root, ["extra9"])

        message = "another index run is in progress"
        cli = run_cli("index", "--db", "rag.db", cwd=root, env=ENV)
        assert message in one_line_error(cli)
        watch = run_cli("index", "data/raw", "--db", "rag.db", "--watch", cwd=root, env=ENV)
        assert message in one_line_error(watch)
        status, body = http(base, "/-/ragdb/index", {})
        assert status == 409 and message in body["error"], body
        tool = anyio.run(_mcp_index, root)
        assert tool.is_error and message in tool.content[0].text
        assert len(tool.content[0].text.splitlines()) == 1
        removal = run_cli("roots", "--remove", "data/raw", "--db", "rag.db", cwd=root, env=ENV)
        assert message in one_line_error(removal)  # it would leave the run orphan vectors

        (root / "data" / "raw" / "proj" / "notes.txt").write_text(
            "Release notes\n\nThe scheduler now supports chunked prefill by default.\n\n"
            "Quokkas hop.\n", "utf-8")
        said.until("waiting for it to end")  # the watch saw the change, waits for the run
        assert run.release().split()[0] == "40"  # the held run embedded all it had to
        line = lines.get()
        assert "1 indexed" in line, line
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=30)
    err = said.all()
    assert "Traceback" not in err and "UNIQUE" not in err, err
    status, body = http(base, "/-/ragdb/search?q=quokkas+hop&mode=lexical&k=1")
    assert status == 200 and body["sources"][0]["file_path"].endswith("notes.txt")
    assert_like_a_clean_run(root)


# -- 16c. "still being computed" only while a run computes them -------------------------------

def test_index_wait_waits_for_the_run_in_flight_then_indexes(served: tuple[str, Path]) -> None:
    """`ragdb index --wait` (a CI job beside another) says once that it waits, then indexes
    what changed once the run in flight has committed, instead of refusing."""
    _, root = served
    write_corpus(root / "extra10", pages("Lisbon"))
    run = Holder(root, ["extra10"])
    waiter = subprocess.Popen(
        [sys.executable, "-m", "ragdb", "index", "extra10", "--db", "rag.db", "--wait"],
        cwd=root, env={**os.environ, **ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    said = Lines(waiter.stderr)
    line = said.get()
    assert line.startswith("ragdb: another index run is in progress on "), line
    assert "waiting for it to end" in line, line
    time.sleep(1.0)
    assert waiter.poll() is None  # still waiting while the run is held
    run.release()
    out = waiter.stdout.read() if waiter.stdout else ""
    waiter.wait(timeout=120)
    assert waiter.returncode == 0, said.all()
    # It ran after the held run committed: every file it walks is that run's, unchanged.
    assert " 0 indexed, " in out and " unchanged, 0 removed" in out, out
    assert " 0 unchanged" not in out, out
    assert "Traceback" not in said.all()


def test_incomplete_vectors_are_named_for_what_they_are(served: tuple[str, Path]) -> None:
    """After a killed run nothing computes vectors, yet search said they were "still being
    computed"; it says so only while an index run runs, and otherwise how to complete them."""
    base, root = served
    write_corpus(root / "extra16", pages("Porto"))
    run = Holder(root, ["extra16"])
    during = run_cli("search", "widgets on assembly line 7", "--db", "rag.db", cwd=root,
                     env=ENV)
    assert during.returncode == 0, during.stderr
    assert "still being computed" in during.stderr, during.stderr
    status, body = http(base, "/-/ragdb/status")
    assert status == 200 and body["indexing"] is True and body["dense_coverage"] < 1
    run.kill()

    after = run_cli("search", "widgets on assembly line 7", "--db", "rag.db", cwd=root,
                    env=ENV)
    assert after.returncode == 0, after.stderr
    assert "still being computed" not in after.stderr, after.stderr
    assert "incomplete" in after.stderr and "`ragdb index`" in after.stderr, after.stderr
    status, body = http(base, "/-/ragdb/status")
    assert status == 200 and body["indexing"] is False and body["dense_coverage"] < 1

    completed = run_cli("index", "--db", "rag.db", cwd=root, env=ENV)
    assert completed.returncode == 0, completed.stderr
    status, body = http(base, "/-/ragdb/status")
    assert status == 200 and body["indexing"] is False and body["dense_coverage"] == 1.0
    assert_like_a_clean_run(root)
