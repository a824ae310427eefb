"""The question page in a real headless Chromium, and the load test, against a real server.

The server is `ragdb.datasette_plugin.serve` in a subprocess on a loopback port, over an index
the real CLI built. Chromium is driven through the DevTools protocol over
`--remote-debugging-pipe` (NUL-separated JSON on file descriptors 3 and 4), so neither
selenium nor a websocket client is needed.
"""

from __future__ import annotations

import base64
import fcntl
import html
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.error import URLError
from urllib.request import urlopen

import pytest

from benchmarks.loadtest import load_test
from tests.conftest import free_port, run_cli, write_corpus

QUESTION = "How do I load a LoRA adapter at run time?"
PHONE_WIDTH = 390


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


def _get(url: str, timeout: float = 30) -> tuple[int, str]:
    with urlopen(url, timeout=timeout) as response:
        return response.status, response.read().decode("utf-8")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(base URL, project folder) of a real server over a freshly indexed small corpus."""
    root = tmp_path_factory.mktemp("served")
    write_corpus(root / "data" / "raw" / "proj")
    env = {
        "HOME": str(root / "home"),
        "HF_HUB_OFFLINE": "1",  # the default model falls back to the offline SmolLM2
        "RAGDB_MODELS_DIR": str(root / "models"),
        "OPENVINO_TELEMETRY_DISABLE": "1",
    }
    built = run_cli("index", "data/raw", "--db", "rag.db", cwd=root, env=env)
    assert built.returncode == 0, built.stderr
    port = free_port()
    code = (
        "from pathlib import Path\n"
        "from ragdb.datasette_plugin.serve import serve\n"
        f"serve(Path('rag.db'), host='127.0.0.1', port={port}, corpus_roots=[Path('data/raw')])\n"
    )
    log_path = root / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, "-c", code], cwd=root,
                                   env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                pytest.fail(f"the server exited: {log_path.read_text(errors='replace')}")
            try:
                if _get(base + "/-/ragdb/status", timeout=5)[0] == 200:
                    break
            except (URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not start: {log_path.read_text(errors='replace')}")
            time.sleep(0.2)
        yield base, root
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class DevTools:
    """Chromium's DevTools protocol over --remote-debugging-pipe: we write fd 3, it writes fd 4."""

    def __init__(self, binary: str, profile: Path, log: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_pipes() -> None:  # in the child: put our pipe ends on fds 3 and 4
            read_end = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            write_end = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        flags = [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--no-default-browser-check", "--mute-audio",
            f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank",
        ]
        with log.open("wb") as out:
            self.process = subprocess.Popen(  # noqa: S603 - a fixed local binary
                [binary, *flags], preexec_fn=wire_pipes, close_fds=False,
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None, timeout: float = 30) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method,
                                   "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return dict(reply.get("result", {}))
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{method}: no reply from Chromium in {timeout} s")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                piece = os.read(self._from_browser, 1 << 20)
                if not piece:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self._buffer += piece

    def evaluate(self, session: str, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, session: str, expression: str, timeout: float,
                 done: Callable[[Any], bool] = bool) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(session, expression)
            if done(value):
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout} s for {expression!r} (last: {value!r})")
            time.sleep(0.2)

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


def _click(tools: DevTools, session: str, selector: str) -> None:
    """A real mouse click in the middle of the element."""
    box = tools.evaluate(session, f"""(() => {{
        const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();
        return {{x: r.left + r.width / 2, y: r.top + r.height / 2}};
    }})()""")
    for kind in ("mousePressed", "mouseReleased"):
        tools.call("Input.dispatchMouseEvent", {"type": kind, "x": box["x"], "y": box["y"],
                                                "button": "left", "clickCount": 1}, session)


PAGE_STATE = """JSON.stringify({
    state: document.getElementById('ragdb-answer').getAttribute('data-state'),
    status: document.getElementById('ragdb-status').textContent,
    answer: document.getElementById('ragdb-answer').textContent,
    citations: Array.from(document.querySelectorAll('#ragdb-answer a.ragdb-citation')).map(
        a => ({label: a.textContent, href: a.href})),
    sources: Array.from(document.querySelectorAll('#ragdb-sources li')).map(li => ({
        label: li.querySelector('.ragdb-source-link').textContent,
        href: li.querySelector('a.ragdb-source-link') && li.querySelector('a').href,
        text: li.querySelector('code').textContent})),
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
})"""


def test_question_page_streams_an_answer_with_working_citations(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    binary = _chromium()
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    base, _root = served
    tools = DevTools(binary, tmp_path / "profile", tmp_path / "chromium.log")
    try:
        target = tools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = tools.call("Target.attachToTarget",
                             {"targetId": target, "flatten": True})["sessionId"]
        tools.call("Emulation.setDeviceMetricsOverride",
                   {"width": PHONE_WIDTH, "height": 844, "deviceScaleFactor": 2, "mobile": True},
                   session)
        tools.call("Page.navigate", {"url": base + "/-/ragdb/ask"}, session)
        tools.wait_for(session, "document.readyState === 'complete' && "
                                "!!document.getElementById('ragdb-form')", timeout=30)
        tools.evaluate(session, "document.getElementById('ragdb-q').focus()")
        tools.call("Input.insertText", {"text": QUESTION}, session)
        _click(tools, session, "#ragdb-submit")
        tools.wait_for(session, "document.getElementById('ragdb-answer').getAttribute("
                                "'data-state')", timeout=120,
                       done=lambda state: state in ("done", "error"))
        page = json.loads(tools.evaluate(session, PAGE_STATE))
        shot = tools.call("Page.captureScreenshot",
                          {"format": "png", "captureBeyondViewport": True}, session)
        (tmp_path / "ask.png").write_bytes(base64.b64decode(shot["data"]))
    finally:
        tools.close()

    assert (tmp_path / "ask.png").stat().st_size > 1000
    assert page["state"] == "done", page["status"]
    assert page["answer"].strip()
    assert page["citations"], page["answer"]
    assert page["scrollWidth"] <= page["innerWidth"], "the page scrolls sideways on a phone"
    citation = page["citations"][0]
    number = int(citation["label"].strip("[]"))
    source = page["sources"][number - 1]
    assert source["href"] == citation["href"]
    assert re.search(r"/rag/chunks/\d+$", citation["href"])
    status, chunk_page = _get(citation["href"])
    assert status == 200
    cited_line = next(line for line in source["text"].splitlines() if line.strip())
    assert cited_line in html.unescape(chunk_page)
    lines = re.search(r":(\d+)-(\d+)$", source["label"])
    assert lines is not None and int(lines.group(1)) <= int(lines.group(2))


def test_load_test_during_an_index_run_has_no_errors(served: tuple[str, Path]) -> None:
    base, root = served
    extra = root / "data" / "raw" / "proj" / "more"
    extra.mkdir(exist_ok=True)
    for i in range(40):  # real work for the index run that overlaps the searches
        (extra / f"notes_{i}.md").write_text(f"# Note {i}\n\nScheduling detail {i}.\n", "utf-8")
    report = load_test(base, n=48, concurrency=8, during_index=True)
    assert report["errors"] == 0, report["error_samples"]
    assert report["index"]["status"] == 200, report["index"]
    assert report["index"]["result"]["stats"]["files_indexed"] == 40
    assert 0 < report["p50_ms"] <= report["p95_ms"] <= report["max_ms"]
    after = json.loads(_get(base + "/-/ragdb/search?q=scheduling+detail+7&mode=lexical")[1])
    assert any(s["file_path"].endswith("notes_7.md") for s in after["sources"])
