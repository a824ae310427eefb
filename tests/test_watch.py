"""`ragdb index --watch`: a change is indexed within a second or two; Ctrl-C stops cleanly."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest

from ragdb import RagDB
from ragdb.database import IndexResult
from tests.polyglot import write_repo


def _lines(stream: IO[str]) -> "queue.Queue[str]":
    """Lines of a pipe as they come, read on a thread so that a test never blocks on it."""
    lines: "queue.Queue[str]" = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_watch_indexes_changes_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    """And a batch names no skipped file again (issue 37: every batch repeated the generated
    and other skipped files the first run had named): it counts them."""
    write_repo(tmp_path / "repo")
    time.sleep(1.1)  # runs are recorded to the second: the files are older than the first
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragdb", "index", "repo", "--no-vectors", "--watch",
         "--db", "rag.db"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _lines(proc.stdout), _lines(proc.stderr)
    try:
        assert "6 indexed" in out.get(timeout=60)
        said = ""
        while "watching repo" not in said:  # skipped files are named first, one per line
            said += err.get(timeout=30)
        time.sleep(1.5)  # the watcher starts just after it says so
        (tmp_path / "repo" / "server" / "metrics.go").write_text(
            "package server\n// ExportPrometheusMetrics serves the scrape endpoint.\n"
            "func ExportPrometheusMetrics() {}\n")
        (tmp_path / "repo" / "native" / "ring.c").unlink()
        summary = ""
        deadline = time.monotonic() + 30
        while "1 removed" not in summary:
            summary += out.get(timeout=max(0.1, deadline - time.monotonic()))
        assert "1 indexed" in summary and "1 removed" in summary, summary
        assert "1 generated" in summary, summary
        time.sleep(0.5)  # what the batch said on stderr has come through the pipe
        said = ""
        while not err.empty():
            said += err.get()
        assert "skipped" not in said, said
        paths = {str(r[0]) for r in RagDB(tmp_path / "rag.db").conn.execute(
            "SELECT path FROM files")}
        assert "repo/server/metrics.go" in paths and "repo/native/ring.c" not in paths
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=20)
    assert code in (0, 130)
    rest = []
    while not err.empty():
        rest.append(err.get())
    assert "Traceback" not in "".join(rest)


def test_watch_of_the_recorded_roots_keeps_each_roots_own_walk_options(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ragdb index --watch` with no folder: a root indexed with `--exclude '*' --include
    '*.go'` stays Go-only while watched (each run re-walks it with its recorded options, not
    the defaults)."""
    from ragdb.watch import watch_roots

    write_repo(tmp_path / "repo")
    monkeypatch.chdir(tmp_path)
    rag = RagDB(tmp_path / "rag.db")
    rag.index(["repo"], include=["*.go"], exclude=["*"], vectors=False)
    stop = threading.Event()
    reports: "queue.Queue[str]" = queue.Queue()

    def report(result: IndexResult) -> str:
        reports.put(str(result.stats))
        return ""

    watcher = threading.Thread(target=watch_roots, args=(
        RagDB(tmp_path / "rag.db"), [Path("repo")], {"include": (), "vectors": False},
        report),
        kwargs={"recorded": True, "stop": stop, "debounce_ms": 100}, daemon=True)
    watcher.start()
    try:
        time.sleep(1.0)
        (tmp_path / "repo" / "server" / "metrics.go").write_text(
            "package server\nfunc ExportPrometheusMetrics() {}\n")
        (tmp_path / "repo" / "native" / "ring.c").write_text("int ring_size(void) { return 8; }\n")
        reports.get(timeout=30)
    finally:
        stop.set()
        watcher.join(timeout=20)
    paths = {str(r[0]) for r in rag.conn.execute("SELECT path FROM files")}
    assert "repo/server/metrics.go" in paths
    assert all(p.endswith(".go") for p in paths), paths
