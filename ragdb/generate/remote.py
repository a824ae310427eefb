"""The writer behind an OpenAI-compatible endpoint (`--model NAME@URL`): Ollama, llama.cpp's
server, vLLM, LM Studio or a hosted API write the answer; ragdb gives them the local writer's
prompt, streams their tokens as they come, and checks and cites what they wrote as it does the
local writer's (styles.CheckedAnswerer).

Only the standard library speaks HTTP here (http.client: no proxy from the environment, since
the endpoints users run are mostly on their own host). Every way an endpoint can fail (down,
slow, an HTML page, an error status, a stream of garbage or without end, nothing at all) ends
in ModelUnavailable, one line; the answerer then shows the blocks alone and says why.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

from ragdb.errors import RagdbError
from ragdb.generate.generator import TokenStream, Writer, seconds_from_env
from ragdb.generate.models import ResolvedModel
from ragdb.generate.prompt import (
    DEFAULT_MAX_NEW_TOKENS,
    DEFAULT_QUESTION_CAP,
    DEFAULT_TIME_LIMIT_S,
    WRITER_EXAMPLES,
    WRITER_SYSTEM_PROMPT,
    PromptSource,
    build_prompt,
)

#: Where the API key is read from, first set first; it never appears on a command line.
API_KEY_ENVS = ("RAGDB_API_KEY", "OPENAI_API_KEY")
CONNECT_TIMEOUT_S = 5.0
#: Seconds from the call to the first written text (capped by the writing limit): the issue's
#: target is 10 s on a small host; a server that accepts and never writes fails here rather
#: than at the writing limit. $RAGDB_FIRST_TOKEN_SECONDS sets another (0: only the writing
#: limit), e.g. for a server that loads its model on the first request (Ollama).
FIRST_TOKEN_LIMIT_S = 15.0
FIRST_TOKEN_ENV = "RAGDB_FIRST_TOKEN_SECONDS"
#: The prompt's size, counted as characters / CHARS_PER_TOKEN (no tokenizer of the remote
#: model here; 3 over-counts English and most code, so the prompt fits a 4k window).
CONTEXT_TOKENS = 4096
CHARS_PER_TOKEN = 3
#: Bytes read from one response at most: a stream without end or sense stops here.
MAX_RESPONSE_BYTES = 4 << 20
_ERROR_BODY_BYTES = 64 << 10


class ModelUnavailable(RagdbError):
    """The endpoint gave no answer to show: why, in one line."""


def first_token_limit_from_env() -> float | None:
    """The first-token limit $RAGDB_FIRST_TOKEN_SECONDS sets (None: none), else the default."""
    return seconds_from_env(FIRST_TOKEN_ENV, FIRST_TOKEN_LIMIT_S)


def _key_env() -> str | None:
    """Where the API key is: RAGDB_API_KEY, else OPENAI_API_KEY; None where neither is set."""
    return next((name for name in API_KEY_ENVS if os.environ.get(name, "").strip()), None)


def _count_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


class RemoteGenerator(Writer):
    """A Writer over an endpoint: nothing to load, so a run of questions pays no load at
    all; one request at a time per instance."""

    def __init__(self, resolved: ResolvedModel, *,
                 time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
                 first_token_limit_s: float | None = FIRST_TOKEN_LIMIT_S) -> None:
        if resolved.endpoint is None:
            raise RagdbError(f"{resolved.name} is not an endpoint")
        super().__init__()
        self.base = resolved.endpoint
        self.served_model = resolved.served_model
        self.model = resolved.name
        self.time_limit_s = time_limit_s  # None: no limit (RAGDB_WRITE_SECONDS=0)
        limits = [s for s in (first_token_limit_s, time_limit_s) if s is not None]
        self.first_token_limit_s = min(limits) if limits else None  # None: no limit

    def prompt_for(self, question: str, sources: list[PromptSource]
                   ) -> tuple[list[dict[str, str]], list[PromptSource]]:
        """The local writer's messages (system prompt, worked example, numbered sources)."""
        return build_prompt(question, sources, _count_tokens,
                            CONTEXT_TOKENS - DEFAULT_MAX_NEW_TOKENS, DEFAULT_QUESTION_CAP,
                            WRITER_SYSTEM_PROMPT, WRITER_EXAMPLES)

    def write(self, prompt: list[dict[str, str]], stream: TokenStream, started: float) -> None:
        """Stream the chat completion into `stream`; ModelUnavailable when the endpoint gives
        nothing usable. Past the writing limit the stream is cut and what was written stands."""
        if not self.served_model:
            self.served_model = self._first_model(started)
            self.model = f"{self.served_model} at {self.base} (OpenAI-compatible)"
        _Events(self, started, stream).run(prompt)
        stream.prompt_tokens = stream.prompt_tokens or sum(_count_tokens(m["content"])
                                                           for m in prompt)

    def _first_model(self, started: float) -> str:
        """The model a bare URL names: the first of GET /models (llama.cpp's server has one)."""
        reply = self.request("GET", "/models", None, started)
        try:
            body = reply.read_all(self.first_by(started))
        finally:
            reply.close()
        try:
            data = json.loads(body).get("data")
            name = data[0]["id"] if isinstance(data, list) and data else None
        except (ValueError, AttributeError, KeyError, TypeError, IndexError):
            name = None
        if not isinstance(name, str) or not name.strip():
            raise ModelUnavailable(f"{self.base}/models names no model: give one, as "
                                   f"--model NAME@{self.base}")
        return name.strip()

    def first_by(self, started: float) -> float | None:
        """When the first text must have come, for a call made at `started` (None: never)."""
        limit = self.first_token_limit_s
        return started + limit if limit is not None else None

    def request(self, method: str, path: str, body: dict[str, Any] | None, started: float
                ) -> _Reply:
        """Send one request; the reply once its status is in (a status other than 200 is
        ModelUnavailable, with the server's own message)."""
        parts = urlsplit(self.base)
        https = parts.scheme.lower() == "https"
        kind = http.client.HTTPSConnection if https else http.client.HTTPConnection
        kwargs: dict[str, Any] = {"context": ssl.create_default_context()} if https else {}
        connection = kind(parts.hostname or "", parts.port, timeout=CONNECT_TIMEOUT_S, **kwargs)
        headers = {"Accept": "text/event-stream, application/json", "User-Agent": "ragdb"}
        key = _key_env()
        if key:
            headers["Authorization"] = f"Bearer {os.environ[key].strip()}"
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        first_by = self.first_by(started)
        try:
            try:
                connection.request(method, parts.path.rstrip("/") + path, body=data,
                                   headers=headers)
            except (socket.timeout, TimeoutError):
                raise ModelUnavailable(f"cannot connect to {self.base}: no answer within "
                                       f"{CONNECT_TIMEOUT_S:g} s") from None
            except OSError as exc:
                raise ModelUnavailable(f"cannot connect to {self.base}: "
                                       f"{_os_reason(exc)}") from None
            reply = _Reply(self.base, connection, connection.sock)
            try:
                reply.wait_until(first_by)
                reply.response = connection.getresponse()
            except (_Late, socket.timeout, TimeoutError):
                raise ModelUnavailable(f"{self.base} gave no answer within "
                                       f"{self.first_token_limit_s or 0:g} s") from None
            except (OSError, http.client.HTTPException) as exc:
                raise ModelUnavailable(f"{self.base} broke off: {_os_reason(exc)}") from None
            if reply.response.status != 200:
                raise ModelUnavailable(self._status_reason(reply, path, first_by))
            return reply
        except BaseException:
            connection.close()
            raise

    def _status_reason(self, reply: _Reply, path: str, deadline: float | None) -> str:
        """An error status in one line: the server's own message, and what to do for a key."""
        response = reply.response
        body = reply.read_all(deadline, limit=_ERROR_BODY_BYTES, partial=True)
        line = f"{self.base}{path} answered HTTP {response.status} {response.reason}".rstrip()
        message = _error_message(body, response.getheader("Content-Type") or "")
        if message:
            line += f": {message}"
        if response.status in (401, 403):
            used = _key_env()
            line += (f"; the key in {used} was refused" if used
                     else "; set RAGDB_API_KEY (or OPENAI_API_KEY) to its API key")
        elif response.status == 404:
            line += f"; is {self.base} the API's base URL (it usually ends in /v1)?"
        return line


class _Events:
    """One chat completion, read as server-sent events (or one JSON document, from a server
    that does not stream) into `out`, under the first-token and total time limits."""

    def __init__(self, owner: RemoteGenerator, started: float, out: TokenStream) -> None:
        self.owner = owner
        self.started = started
        self.out = out
        self.finished = False

    def run(self, messages: list[dict[str, str]]) -> None:
        owner = self.owner
        body = {"model": owner.served_model, "messages": messages, "stream": True,
                "temperature": 0, "max_tokens": DEFAULT_MAX_NEW_TOKENS}
        reply = owner.request("POST", "/chat/completions", body, self.started)
        try:
            kind = (reply.response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if kind == "text/html":
                raise ModelUnavailable(_not_the_api(owner.base))
            if kind == "application/json":  # a server that does not stream: the whole answer
                self.whole(reply.read_all(self.out.deadline))
            else:
                self.events(reply)
        finally:
            reply.close()
        if not self.out.raw.strip() and not self.out.timed_out:
            raise ModelUnavailable(f"{owner.base} returned no text")

    def next_deadline(self) -> float | None:
        """Before the first text: the first-token limit; after it, the writing limit."""
        if self.out.first_at is None:
            return self.owner.first_by(self.started)
        return self.out.deadline

    @property
    def done(self) -> bool:
        return self.finished or self.out.looping or self.out.timed_out

    def events(self, reply: _Reply) -> None:
        """Read `data:` lines until [DONE], the end of the stream, a loop or the limit."""
        buffer = b""
        total = 0
        while not self.done:
            try:
                chunk = reply.read_some(self.next_deadline())
            except _Late:
                if self.out.first_at is None:
                    raise ModelUnavailable(f"{self.owner.base} wrote nothing within "
                                           f"{self.owner.first_token_limit_s or 0:g} s") from None
                self.out.timed_out = True
                return
            if not chunk:
                if buffer.strip():
                    self.line(buffer)
                self.out.truncated = not self.finished  # broke off before [DONE]
                return
            total += len(chunk)
            if total > MAX_RESPONSE_BYTES:
                raise ModelUnavailable(f"{self.owner.base} streamed over "
                                       f"{MAX_RESPONSE_BYTES >> 20} MiB without finishing")
            buffer += chunk
            *lines, buffer = re.split(rb"\r\n|\r|\n", buffer)
            for line in lines:
                self.line(line)
                if self.done:
                    break

    def line(self, raw_line: bytes) -> None:
        """One line of server-sent events: comments, event names and ids pass; data is a
        chunk of the completion; anything else is not an OpenAI-compatible stream."""
        line = raw_line.decode("utf-8", errors="replace").strip()
        if not line or line.startswith(":") or re.match(r"(event|id|retry)\s*:", line):
            return
        if not line.startswith("data:"):
            if self.out.first_at is None and line.startswith("<"):
                raise ModelUnavailable(_not_the_api(self.owner.base))
            if line.startswith("{"):  # a JSON body sent as event-stream: read it whole
                self.whole(raw_line)
                return
            raise ModelUnavailable(f"{self.owner.base} streamed something else than "
                                   f"server-sent events: {_shown(line)}")
        payload = line[len("data:"):].strip()
        if payload == "[DONE]":
            self.finished = True
            return
        self.chunk(_json(payload, self.owner.base), streamed=True)

    def whole(self, body: bytes) -> None:
        """A whole completion in one JSON document (a server that ignores `stream`)."""
        self.chunk(_json(body.decode("utf-8", errors="replace"), self.owner.base),
                   streamed=False)
        self.finished = True

    def chunk(self, data: Any, *, streamed: bool) -> None:
        """Text from one completion object: choices[0].delta.content (streamed) or
        choices[0].message.content; an `error` object ends it with the server's message."""
        base = self.owner.base
        if not isinstance(data, dict):
            raise ModelUnavailable(f"{base} answered in another format than OpenAI's chat "
                                   f"completions: {_shown(json.dumps(data))}")
        if data.get("error"):
            message = _error_message(json.dumps(data).encode(), "application/json")
            raise ModelUnavailable(f"{base} failed: {message or 'an error without message'}")
        usage = data.get("usage")
        out = self.out
        if isinstance(usage, dict):
            out.prompt_tokens = _int(usage.get("prompt_tokens")) or out.prompt_tokens
            out.new_tokens = _int(usage.get("completion_tokens")) or out.new_tokens
        choices = data.get("choices")
        if not isinstance(choices, list):
            raise ModelUnavailable(f"{base} answered in another format than OpenAI's chat "
                                   f"completions (no choices): {_shown(json.dumps(data))}")
        if not choices:
            return  # the usage chunk some servers send last
        choice = choices[0] if isinstance(choices[0], dict) else {}
        part = choice.get("delta" if streamed else "message")
        piece = part.get("content") if isinstance(part, dict) else None
        if piece is not None and not isinstance(piece, str):
            raise ModelUnavailable(f"{base} sent content that is not text: "
                                   f"{_shown(json.dumps(piece))}")
        if choice.get("finish_reason") == "length":
            out.truncated = True
        if piece:
            out.piece(piece)


class _Late(Exception):
    """A time limit passed while waiting for the endpoint."""


class _Reply:
    """A response and the socket under it, read under deadlines (the socket's timeout is set
    to what is left before each read)."""

    response: http.client.HTTPResponse  # set once its status is in (request)

    def __init__(self, base: str, connection: http.client.HTTPConnection,
                 sock: socket.socket | None) -> None:
        self.base = base
        self.connection = connection
        self.sock = sock

    def wait_until(self, deadline: float | None) -> None:
        if self.sock is None:
            return
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0:
            raise _Late
        self.sock.settimeout(left)

    def read_some(self, deadline: float | None) -> bytes:
        """The next bytes of the body as they arrive (b"" at its end), by `deadline`."""
        self.wait_until(deadline)
        try:
            return self.response.read1(65536)
        except (socket.timeout, TimeoutError):
            raise _Late from None
        except (OSError, http.client.HTTPException) as exc:
            raise ModelUnavailable(f"{self.base} broke off: {_os_reason(exc)}") from None

    def read_all(self, deadline: float | None, *, limit: int = MAX_RESPONSE_BYTES,
                 partial: bool = False) -> bytes:
        """The whole (bounded) body by `deadline`; `partial`: what came, not an error."""
        body = b""
        while len(body) <= limit:
            try:
                chunk = self.read_some(deadline)
            except (_Late, ModelUnavailable) as exc:
                if partial:
                    return body
                if isinstance(exc, _Late):
                    raise ModelUnavailable(f"{self.base} did not finish its answer in "
                                           "time") from None
                raise
            if not chunk:
                return body
            body += chunk
        if partial:
            return body[:limit]
        raise ModelUnavailable(f"{self.base} sent over {limit >> 20} MiB")

    def close(self) -> None:
        self.connection.close()
        self.response.close()


def _json(text: str, base: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ModelUnavailable(f"{base} sent something that is not JSON: {_shown(text)}"
                               ) from None


def _error_message(body: bytes, content_type: str) -> str:
    """The server's own words on an error: OpenAI's {"error": {"message"}}, FastAPI's
    {"detail"}, or the first line of a text body; an HTML page is named, not shown."""
    text = body.decode("utf-8", errors="replace").strip()
    if not text:
        return ""
    if "html" in content_type.lower() or text.startswith("<"):
        return "an HTML page"
    try:
        data = json.loads(text)
    except ValueError:
        return _shown(text.splitlines()[0])
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message") or error.get("msg") or error
        if isinstance(error, list) and error and isinstance(error[0], dict):
            error = error[0].get("msg") or error[0]
        if error:
            return _shown(error if isinstance(error, str) else json.dumps(error))
    return _shown(text)


def _not_the_api(base: str) -> str:
    return (f"{base} answered with an HTML page, not an OpenAI-compatible API: give its base "
            "URL (it usually ends in /v1)")


def _shown(text: str) -> str:
    """Text for a one-line message: whitespace collapsed, control characters escaped, cut."""
    flat = " ".join(text.split())
    flat = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in flat)
    return flat if len(flat) <= 120 else flat[:117] + "..."


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower() if exc.strerror[:1].isupper() else exc.strerror
    return _shown(str(exc)) or type(exc).__name__


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
