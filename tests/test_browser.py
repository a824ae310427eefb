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
    codeCut: Array.from(document.querySelectorAll('#ragdb-sources pre')).filter(
        p => p.scrollWidth > p.clientWidth).length,
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
    assert page["codeCut"] == 0, "a source's lines run past its box (they wrap)"
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


DESKTOP_WIDTH = 1024

LAYOUT = """JSON.stringify({
    scrollWidth: document.documentElement.scrollWidth,
    clientWidth: document.documentElement.clientWidth,
    height: window.innerHeight,
    wrappers: Array.from(document.querySelectorAll('.table-wrapper')).map(
        w => ({scrollWidth: w.scrollWidth, clientWidth: w.clientWidth})),
    code: Array.from(document.querySelectorAll('pre.ragdb-code')).map(p => ({
        right: p.getBoundingClientRect().right, scrollWidth: p.scrollWidth,
        clientWidth: p.clientWidth, text: p.textContent})),
    sqlShown: !!document.querySelector('#sql-query, #sql-editor'),
    hiddenShown: Array.from(document.querySelectorAll('[hidden]')).filter(
        e => e.getClientRects().length > 0).map(e => e.id || e.tagName),
    sqlEditor: document.querySelector('#sql-editor') && document.querySelector('#sql-editor').value,
    tableTop: document.querySelector('table.rows-and-columns') &&
        document.querySelector('table.rows-and-columns').getBoundingClientRect().top,
    fileCell: document.querySelector('td.col-file_id') &&
        document.querySelector('td.col-file_id').textContent.trim(),
    paths: Array.from(document.querySelectorAll('td.col-path')).map(td => td.textContent.trim()),
    links: Array.from(document.querySelectorAll('a')).map(a => ({
        text: a.textContent.trim(), href: a.href, className: a.className,
        top: a.getBoundingClientRect().top, width: a.getBoundingClientRect().width})),
})"""


def _visit(tools: DevTools, session: str, url: str) -> dict[str, Any]:
    """Open a page, wait until the new document has loaded, and read its layout."""
    tools.evaluate(session, "window.__ragdbLeaving = true")
    tools.call("Page.navigate", {"url": url}, session)
    tools.wait_for(session, "!window.__ragdbLeaving && document.readyState === 'complete'",
                   timeout=30)
    return dict(json.loads(tools.evaluate(session, LAYOUT)))


def test_browsing_pages_name_files_wrap_code_and_fold_sql(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    """The pages a user browses, on a laptop and a phone, in a real Chromium (screenshots in
    tmp_path): nothing runs off the right edge (chunk text wraps inside its box), a chunk's
    page names its file, canned queries start with their results, not their SQL, and the
    home page shows the question page."""
    binary = _chromium()
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    base, root = served
    found = json.loads(_get(base + "/rag/search_chunks.json?q=load_lora_adapter&_shape=array")[1])
    lora = "data/raw/proj/docs/features/lora.md"
    chunk_id, file_id = found[0]["chunk_id"], found[0]["file_id"]
    assert found[0]["path"] == lora
    longest = max((root / lora).read_text().splitlines(), key=len)
    assert len(longest) > 120  # wider than the text column: it must wrap, not run off
    pages = {
        "home": "/", "database": "/rag", "chunk": f"/rag/chunks/{chunk_id}",
        "file-chunks": f"/rag/chunks_of_file?file_id={file_id}",
        "canned-search": "/rag/search_chunks?q=load+lora+adapter", "chunks": "/rag/chunks",
        "question": "/-/ragdb/ask",
    }
    seen: dict[tuple[str, int], dict[str, Any]] = {}
    tools = DevTools(binary, tmp_path / "profile", tmp_path / "chromium.log")
    try:
        target = tools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = tools.call("Target.attachToTarget",
                             {"targetId": target, "flatten": True})["sessionId"]
        for width, height in ((DESKTOP_WIDTH, 768), (PHONE_WIDTH, 844)):
            tools.call("Emulation.setDeviceMetricsOverride",
                       {"width": width, "height": height, "deviceScaleFactor": 1,
                        "mobile": width < 600}, session)
            for name, path in pages.items():
                seen[name, width] = _visit(tools, session, base + path)
                shot = tools.call("Page.captureScreenshot",
                                  {"format": "png", "captureBeyondViewport": True}, session)
                (tmp_path / f"{name}-{width}.png").write_bytes(base64.b64decode(shot["data"]))
    finally:
        tools.close()

    for (name, width), page in seen.items():
        assert (tmp_path / f"{name}-{width}.png").stat().st_size > 1000
        where = f"{name} at {width} px"
        assert page["scrollWidth"] <= page["clientWidth"], f"{where} scrolls sideways"
        for wrapper in page["wrappers"]:
            assert wrapper["scrollWidth"] <= wrapper["clientWidth"], f"{where}: table clipped"
        for code in page["code"]:
            assert code["right"] <= page["clientWidth"], f"{where}: code runs off the page"
            assert code["scrollWidth"] <= code["clientWidth"], f"{where}: code lines cut"
    for width in (DESKTOP_WIDTH, PHONE_WIDTH):
        home = seen["home", width]
        ask = [a for a in home["links"] if a["href"] == base + "/-/ragdb/ask"
               and a["text"] == "Ask a question" and "ragdb-ask-link" in a["className"]]
        assert ask and 0 <= ask[0]["top"] < home["height"] and ask[0]["width"] > 0
        assert {base + p for p in ("/rag/search_chunks", "/rag/largest_files")} <= {
            a["href"] for a in home["links"]}
        assert seen["database", width]["sqlEditor"] == "select * from chunks"
        chunk = seen["chunk", width]
        assert chunk["fileCell"] == f"{lora} · all chunks"
        assert {"text": "all chunks", "href": f"{base}/rag/chunks_of_file?file_id={file_id}"} in [
            {"text": a["text"], "href": a["href"]} for a in chunk["links"]]
        assert any(longest in code["text"] for code in chunk["code"])
        for name in ("file-chunks", "canned-search"):
            page = seen[name, width]
            assert not page["sqlShown"], f"{name}: the SQL is not folded"
            assert page["paths"] and set(page["paths"]) == {lora}, name
        assert seen["question", width]["hiddenShown"] == []  # no empty Answer, Sources
        listing = seen["chunks", width]
        assert listing["fileCell"] and listing["fileCell"].endswith(" · all chunks")
    for name in ("file-chunks", "canned-search"):  # results in the first screen, not SQL
        page = seen[name, DESKTOP_WIDTH]
        assert page["tableTop"] is not None and page["tableTop"] < 0.7 * page["height"], name


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


ANSWER_VIEW = """JSON.stringify({
    state: document.getElementById('ragdb-answer').getAttribute('data-state'),
    text: document.getElementById('ragdb-answer').textContent,
    code: Array.from(document.querySelectorAll('#ragdb-answer pre.ragdb-code-block')).map(p => ({
        language: p.getAttribute('data-language'), text: p.querySelector('code').textContent,
        font: getComputedStyle(p.querySelector('code')).fontFamily})),
    places: Array.from(document.querySelectorAll('#ragdb-answer a.ragdb-place')).map(
        a => ({text: a.textContent, href: a.href})),
    citations: Array.from(document.querySelectorAll('#ragdb-answer a.ragdb-citation')).map(
        a => a.href),
    quotes: Array.from(document.querySelectorAll('#ragdb-answer blockquote')).map(
        q => q.textContent),
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
})"""


def _open_question_page(tools: DevTools, session: str, base: str) -> None:
    tools.evaluate(session, "window.__ragdbLeaving = true")
    tools.call("Page.navigate", {"url": base + "/-/ragdb/ask"}, session)
    tools.wait_for(session, "!window.__ragdbLeaving && document.readyState === 'complete' && "
                            "!!document.getElementById('ragdb-form')", timeout=30)


def test_question_page_renders_answers_as_markdown(served: tuple[str, Path],
                                                   tmp_path: Path) -> None:
    """Code in an answer is a monospace block labelled with its language (never raw ```
    fences), a block's `path:start-end` links to its chunk: the default answer as the server
    streams it, and a blocks answer (generate/blocks.py) on the same sources."""
    from urllib.request import Request

    from ragdb import RagDB
    from ragdb.generate.blocks import BlocksAnswerer
    from ragdb.generate.prompt import PromptSource
    from ragdb.source_files import SourceFiles

    binary = _chromium()
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    base, root = served
    question = "What does trust_remote_code_default return?"
    request = Request(base + "/-/ragdb/answer", method="POST",
                      data=json.dumps({"q": question, "k": 4}).encode(),
                      headers={"Content-Type": "application/json"})
    with urlopen(request, timeout=120) as response:
        served_answer = json.loads(response.read())
    sources = [PromptSource(s["file_path"], s["first_character_index"],
                            s["last_character_index"], s["start_line"], s["end_line"],
                            s["text"], s["score"]) for s in served_answer["sources"]]
    with RagDB(root / "rag.db", use_cache=False) as rag:
        answerer = BlocksAnswerer(SourceFiles(rag.conn))
        blocks = answerer.answer(question, sources)
    assert blocks.shown is not None and blocks.shown["blocks"][0]["language"] == "python"
    done = {**served_answer, "answer": blocks.text, "cited": blocks.cited}
    stream = (f"event: sources\ndata: {json.dumps(served_answer['sources'])}\n\n"
              f"event: done\ndata: {json.dumps(done)}\n\n")
    canned = ("window.fetch = async () => new Response(" + json.dumps(stream)
              + ", {status: 200, headers: {'Content-Type': 'text/event-stream'}});")
    views: dict[str, dict[str, Any]] = {}
    tools = DevTools(binary, tmp_path / "profile", tmp_path / "chromium.log")
    try:
        target = tools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = tools.call("Target.attachToTarget",
                             {"targetId": target, "flatten": True})["sessionId"]
        tools.call("Emulation.setDeviceMetricsOverride",
                   {"width": PHONE_WIDTH, "height": 844, "deviceScaleFactor": 1, "mobile": True},
                   session)
        for name, setup in (("served", ""), ("blocks", canned)):
            _open_question_page(tools, session, base)
            if setup:
                tools.evaluate(session, setup)
            tools.evaluate(session, "document.getElementById('ragdb-q').value = "
                           + json.dumps(question))
            _click(tools, session, "#ragdb-submit")
            tools.wait_for(session, "document.getElementById('ragdb-answer').getAttribute("
                                    "'data-state')", timeout=120,
                           done=lambda state: state in ("done", "error"))
            views[name] = json.loads(tools.evaluate(session, ANSWER_VIEW))
            shot = tools.call("Page.captureScreenshot",
                              {"format": "png", "captureBeyondViewport": True}, session)
            (tmp_path / f"answer-{name}.png").write_bytes(base64.b64decode(shot["data"]))
    finally:
        tools.close()

    for name, view in views.items():
        assert view["state"] == "done", name
        assert "```" not in view["text"], f"{name}: raw fences on the page"
        assert view["code"], f"{name}: no code block"
        assert all("monospace" in code["font"] for code in view["code"]), name
        assert view["scrollWidth"] <= view["innerWidth"], f"{name}: the page scrolls sideways"
    assert views["served"]["code"][0]["language"] == "python"  # from the label's path
    shown = views["blocks"]
    assert shown["code"][0]["language"] == "python"
    assert "return False" in shown["code"][0]["text"]
    first = blocks.shown["blocks"][0]
    place = f"{first['file_path']}:{first['start_line']}-{first['end_line']}"
    url = base + served_answer["sources"][first["n"] - 1]["url"]
    assert {"text": place, "href": url} in shown["places"]
    assert url in shown["citations"]
