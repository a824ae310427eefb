"""`ragdb mcp`: rag.db as a Model Context Protocol server over stdio (the official `mcp` SDK).

Tools: `search`, `answer`, `index` (re-indexes the roots rag.db records, never paths from the
client) and `status`; `definition`, `references`, `callers`, `outline` and `map`
(ragdb/mcp_symbols.py). Each result is structured (`structuredContent`, with an output schema)
and readable as text. Bad arguments are tool errors of one line; the server ends when the
client closes its end of stdio. Everything goes through the front door, `RagDB`.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import IO, Annotated, Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.message import SessionMessage
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field, ValidationError, WithJsonSchema

from ragdb.answering import Answer, added_sources
from ragdb.database import RagDB
from ragdb.db import Setting, get_setting
from ragdb.errors import RagdbError
from ragdb.generate.style import Style
from ragdb.input_rules import MAX_K, check_k
from ragdb.mcp_symbols import add_symbol_tools
from ragdb.resources import package_version
from ragdb.retrieve import Filters, Hit, Mode
from ragdb.schemas import FilterValue, describe
from ragdb.file_types import language_of

INSTRUCTIONS = (
    "Search and answer questions over the code and docs indexed in a ragdb rag.db. "
    "`search` returns the places (file_path:start_line-end_line with their text), `answer` "
    "a cited answer: the deciding blocks of the sources, verbatim under their "
    "path:start-end (where a writer model is installed, or with style generate, a few "
    "checked sentences may come above them), `status` what is indexed, `index` re-indexes it. "
    "`definition`, `references`, `callers` and `outline` find where a name is defined and "
    "used (path:line), `map` lists the most referenced definitions with their signatures."
)
#: path, lang, exclude: a string or a list of strings, as on HTTP (schemas.filter_value).
FilterArg = FilterValue
#: k is checked by ragdb's one k rule (`check_k`), as HTTP checks it: pydantic would take
#: `true` as 1. The schema still tells clients it is an integer.
KArg = Annotated[Any, WithJsonSchema({"type": "integer", "minimum": 1, "maximum": MAX_K})]


class Source(BaseModel):
    rank: int
    file_path: str
    start_line: int
    end_line: int
    first_character_index: int
    last_character_index: int
    language: str
    kind: str
    score: float
    text: str
    duplicates: list[str] = Field(default_factory=list,
                                  description="other files with the same bytes as this one")


class SearchResult(BaseModel):
    query: str
    k: int
    mode: str
    generation: int
    sources: list[Source]
    warnings: list[str] = Field(default_factory=list,
                                description="what this mode cannot find in this index")
    reranker: str | None = Field(default=None, description="the cross-encoder that reordered "
                                 "the fused candidates (RAGDB_RERANKER); null: fused order")
    timings: dict[str, float] = Field(default_factory=dict,
                                      description="rerank_ms: the reranker's time")


class AnswerResult(BaseModel):
    query: str
    answer: str
    cited: list[int] = Field(description="numbers n of the sources the answer cites as [n]")
    model: str | None
    style: str | None = Field(description="extractive (whole blocks of the sources) or "
                              "generate (a model's checked sentences above those blocks)")
    check: dict[str, Any] | None = Field(
        default=None, description="a written answer's claim check: sentences kept and dropped "
        "(with the reason), and why the blocks alone were shown (fallback)")
    sources: list[Source]


class RootInfo(BaseModel):
    path: str
    files: int
    chunks: int
    last_indexed_at: str


class StatusResult(BaseModel):
    db_path: str
    generation: int
    files: int
    chunks: int
    vectors: int
    languages: dict[str, int]
    roots: list[RootInfo]


class IndexRunResult(BaseModel):
    roots: list[str]
    generation: int
    files_seen: int
    files_indexed: int
    files_unchanged: int
    files_removed: int
    files_skipped: int
    skipped: dict[str, int]  # reason -> files
    languages: dict[str, int]  # language -> files indexed or unchanged
    parse_fallbacks: int
    fallback_paths: list[str]  # the source files cut as text: their syntax tree was mostly errors
    chunks_total: int
    seconds: float


def _sources(hits: list[Hit]) -> list[Source]:
    return [Source(rank=n, file_path=h.file_path, start_line=h.start_line, end_line=h.end_line,
                   first_character_index=h.first, last_character_index=h.last,
                   language=h.language, kind=h.kind, score=h.score, text=h.text,
                   duplicates=list(h.duplicates))
            for n, h in enumerate(hits, 1)]


def _added(answer: Answer) -> list[Source]:
    """The sources an answer numbers after the hits (answering.added_sources: the definition
    the question names, not retrieved: score 0)."""
    return [Source(rank=n, file_path=s.file_path, start_line=s.start_line, end_line=s.end_line,
                   first_character_index=s.first, last_character_index=s.last,
                   language=language_of(s.file_path) or "", kind="", score=0.0, text=s.text)
            for n, s in added_sources(answer)]


def _sources_text(sources: list[Source]) -> str:
    if not sources:
        return "no sources found"
    parts = []
    for s in sources:
        parts.append(f"[{s.rank}] {s.file_path}:{s.start_line}-{s.end_line} "
                     f"({s.language or s.kind}, score {s.score:.4g})\n```\n{s.text}\n```")
    return "\n\n".join(parts)


def _result(model: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=model.model_dump(mode="json"))


def _k(k: object) -> int:
    try:
        return check_k(k)
    except RagdbError as exc:
        raise ToolError(str(exc)) from None


class _Server(MCPServer):
    """The SDK's server, with every tool error on one line: its argument errors are pydantic's
    multi-line dumps."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                text = f"Error executing tool {name}: invalid arguments ({describe(cause)})"
            else:
                text = str(exc)
            if text == str(exc) and "\n" not in text:
                raise
            raise type(exc)(" ".join(text.splitlines())) from cause


def build_server(db: Path | str, *, model: str | None = None) -> MCPServer:
    """The MCP server for one rag.db (one RagDB, used by one tool call at a time)."""
    rag = RagDB(db, model=model, warn=lambda message: None)
    lock = threading.Lock()
    server = _Server("ragdb", instructions=INSTRUCTIONS, log_level="WARNING",
                     version=package_version())

    def call(fn: Any) -> Any:
        with lock:
            try:
                return fn()
            except RagdbError as exc:
                raise ToolError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)

    @server.tool()
    def search(query: str, k: KArg = 5, path: FilterArg = None, lang: FilterArg = None,
               mode: str = "hybrid",
               exclude: FilterArg = None) -> Annotated[CallToolResult, SearchResult]:
        """The k places in the indexed code and docs most relevant to a query.

        path: GLOB pattern(s) on file paths (e.g. "*.go", "src/*"); lang: language(s), e.g.
        "python", "go", "rust", "typescript", "markdown"; exclude: GLOB pattern(s) of files
        to leave out (e.g. "tests/*"); mode: hybrid, lexical or dense.
        """
        k = _k(k)

        def run() -> SearchResult:
            filters = Filters.of(path, lang, exclude)
            hits = rag.search(query, k, mode, filters)
            warning = rag.mode_warning(mode)
            rerank = rag.last_rerank or {}
            why = None if hits else rag.why_nothing_found(query, filters)
            return SearchResult(query=query, k=k, mode=Mode(mode).value,
                                generation=rag.generation, sources=_sources(hits),
                                warnings=([warning] if warning else [])
                                + rerank.get("rerank_notes", [])
                                + ([f"no sources found: {why}"] if why else []),
                                reranker=rerank.get("reranker"),
                                timings={"rerank_ms": rerank["rerank_ms"]} if rerank else {})

        result: SearchResult = call(run)
        text = _sources_text(result.sources)
        return _result(result, "".join(f"warning: {w}\n\n" for w in result.warnings) + text)

    @server.tool()
    def answer(query: str, k: KArg = 10, path: FilterArg = None, lang: FilterArg = None,
               mode: str = "hybrid", style: str = "auto",
               exclude: FilterArg = None) -> Annotated[CallToolResult, AnswerResult]:
        """Answer a question from the k most relevant sources, citing them as [n]: whole
        blocks of the sources, verbatim with path:start-end (style extractive, the default
        where only the small offline model exists), or a model's checked sentences above them
        (generate). Same filters as search."""
        k = _k(k)

        def run() -> AnswerResult:
            try:
                chosen = Style(style)
            except ValueError:
                raise RagdbError(f"style must be one of auto, extractive, generate, "
                                 f"got {style!r}") from None
            found = rag.answer(query, k, mode, filters=Filters.of(path, lang, exclude),
                               style=chosen)
            return AnswerResult(query=query, answer=found.text, cited=list(found.cited),
                                model=found.model, style=found.style, check=found.check,
                                sources=_sources(found.hits) + _added(found))

        result: AnswerResult = call(run)
        return _result(result, result.answer + "\n\nSources:\n" + _sources_text(result.sources))

    @server.tool()
    def index() -> Annotated[CallToolResult, IndexRunResult]:
        """Re-index the roots recorded in rag.db: only changed files are re-chunked."""

        def run() -> IndexRunResult:
            vectors = get_setting(rag.conn, Setting.EMBEDDER) is not None
            done = rag.index(vectors=vectors)
            s = done.stats
            return IndexRunResult(
                roots=done.roots, generation=done.generation, files_seen=s.files_seen,
                files_indexed=s.files_indexed, files_unchanged=s.files_unchanged,
                files_removed=s.files_removed, files_skipped=s.files_skipped,
                skipped=s.skipped, languages=s.languages, parse_fallbacks=s.parse_fallbacks,
                fallback_paths=s.fallback_paths, chunks_total=s.chunks_total,
                seconds=round(s.seconds, 3))

        result: IndexRunResult = call(run)
        text = (f"indexed {', '.join(result.roots)}: {result.files_indexed} files re-chunked, "
                f"{result.files_removed} removed, {result.files_unchanged} unchanged; "
                f"{result.chunks_total} chunks in the index ({result.seconds:.1f} s)")
        return _result(result, text)

    @server.tool()
    def status() -> Annotated[CallToolResult, StatusResult]:
        """What rag.db holds: roots, files per language, chunks, vectors, index generation."""

        def run() -> StatusResult:
            info = rag.status()
            roots = [RootInfo(path=r.path, files=r.files, chunks=r.chunks,
                              last_indexed_at=r.last_indexed_at) for r in rag.roots()]
            return StatusResult(db_path=info["db_path"], generation=info["generation"],
                                files=info["files"], chunks=info["chunks"],
                                vectors=info["vectors"], languages=info["languages"],
                                roots=roots)

        result: StatusResult = call(run)
        lines = [f"{result.db_path}: {result.files} files, {result.chunks} chunks, "
                 f"{result.vectors} vectors (generation {result.generation})"]
        lines += [f"root {r.path}: {r.files} files, {r.chunks} chunks" for r in result.roots]
        lines.append("languages: " + ", ".join(f"{k} {v}" for k, v in result.languages.items()))
        return _result(result, "\n".join(lines))

    add_symbol_tools(server, rag, call)
    return server


def _claim(fd: int, mode: str, divert_to: int) -> IO[bytes]:
    """The wire as a private copy of a standard descriptor, which is pointed at `divert_to`:
    a library's stray print (or a child reading stdin) never touches the JSON-RPC stream, as
    the SDK's own stdio transport does."""
    wire = os.dup(fd)
    os.dup2(divert_to, fd)
    os.close(divert_to)
    return os.fdopen(wire, mode)


def _error(request_id: Any, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id,
                              error=types.ErrorData(code=code, message=message))


def _encodable(value: object) -> bool:
    """Whether a value is text that can be written as UTF-8 (no lone surrogate)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_line(line: bytes) -> types.JSONRPCMessage | types.JSONRPCError | None:
    """One line from the client: a message for the server, or the JSON-RPC error to answer it
    with (the SDK drops a line it cannot parse without a word, and cannot parse a lone
    surrogate, so such a call was never answered); None for a blank line.

    A lone surrogate, or bytes that are not UTF-8, reach the tool as they are (Python's JSON
    reads the escape, undecodable bytes become surrogates, as in argv): the question rule
    then refuses them in one line, as on every other door.
    """
    if not line.strip():
        return None
    try:
        data = json.loads(line.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return _error(None, types.PARSE_ERROR, "Parse error: the line is not a JSON text")
    if isinstance(data, dict) and "method" in data and "id" in data:
        # The SDK reads a request whose id it cannot take (an array, an object, a float,
        # null) as a notification, which is never answered (the client waited for ever), and
        # takes 2.0 as 2: the JSON text says what was sent.
        if isinstance(data["id"], bool) or not isinstance(data["id"], (int, str)):
            return _error(None, types.INVALID_REQUEST,
                          "Invalid Request: the id must be a string or an integer")
    try:
        message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_json(
            line, by_name=False)
        return message
    except ValidationError:
        pass
    request_id = data.get("id") if isinstance(data, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        request_id = None
    if isinstance(request_id, str) and not _encodable(request_id):
        return _error(None, types.INVALID_REQUEST, "Invalid Request: the id is not valid Unicode")
    try:
        message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
        return message
    except ValidationError:
        return _error(request_id, types.INVALID_REQUEST,
                      "Invalid Request: not a JSON-RPC 2.0 request, notification or response")


def _encoded(message: types.JSONRPCMessage | types.JSONRPCError) -> bytes:
    """A message as one line of JSON; one that cannot be encoded is an error for its id."""
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        request_id = getattr(message, "id", None)
        if not (isinstance(request_id, int) or _encodable(request_id)):
            request_id = None
        fallback = _error(request_id, types.INTERNAL_ERROR, "the reply could not be encoded")
        return fallback.model_dump_json(by_alias=True).encode("utf-8")


#: Seconds the server still answers the requests in flight after the client closed stdin
#: (a generated answer takes up to 25 s after a model load of about 20 s).
DRAIN_S = 120.0


def _track(pending: set[Any], message: types.JSONRPCMessage) -> None:
    """A request is owed a reply; one the client cancels is not (the SDK sends none)."""
    if isinstance(message, types.JSONRPCRequest):
        pending.add(message.id)
    elif (isinstance(message, types.JSONRPCNotification)
          and message.method == "notifications/cancelled"
          and isinstance(message.params, dict)):
        pending.discard(message.params.get("requestId"))


async def serve_stdio(server: MCPServer) -> None:
    """The server over stdin/stdout, one JSON-RPC message per line, until stdin closes.

    The SDK's own transport (`run_stdio_async`) drops malformed lines without a reply; this
    one answers each with a JSON-RPC error (`parse_line`). It drives the SDK's server on
    memory streams exactly as `run_stdio_async` does.
    """
    wire_in = _claim(0, "rb", os.open(os.devnull, os.O_RDONLY))
    wire_out = _claim(1, "wb", os.dup(2))
    to_server, server_in = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    server_out, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    replies = server_out.clone()
    lines, out = anyio.wrap_file(wire_in), anyio.wrap_file(wire_out)
    # Requests read and not yet answered: a client that writes its requests and closes stdin
    # (`printf ... | ragdb mcp`) gets their replies before the server ends (the SDK's loop
    # cancelled the tool calls still running when its input closed).
    pending: set[Any] = set()

    async def read() -> None:
        async with to_server, replies:
            async for line in lines:
                parsed = parse_line(line)
                try:
                    if isinstance(parsed, types.JSONRPCError):
                        await replies.send(SessionMessage(parsed))
                    elif parsed is not None:
                        _track(pending, parsed)
                        await to_server.send(SessionMessage(parsed))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
            with anyio.move_on_after(DRAIN_S):
                while pending:
                    await anyio.sleep(0.05)

    async def write() -> None:
        async with from_server:
            async for message in from_server:
                await out.write(_encoded(message.message) + b"\n")
                await out.flush()
                if isinstance(message.message, (types.JSONRPCResponse, types.JSONRPCError)):
                    pending.discard(message.message.id)

    lowlevel = server._lowlevel_server  # what run_stdio_async drives (SDK 2.3)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        async with server_out:
            await lowlevel.run(server_in, server_out, lowlevel.create_initialization_options())


def run_stdio(db: Path | str, *, model: str | None = None) -> None:
    """Serve until the client closes stdin (or Ctrl-C). An existing rag.db that holds files
    today's rules leave out as secrets (an older ragdb indexed them) is refused at the start,
    as `ragdb serve` refuses it (worker.check), and so is such a PostgreSQL index; a missing
    rag.db is each tool's error (a PostgreSQL server that does not answer is refused at the
    start in one line, as before)."""
    from ragdb.worker import check

    if isinstance(db, str) or db.exists():
        check(str(db))
    server = build_server(db, model=model)
    try:
        anyio.run(serve_stdio, server)
    except KeyboardInterrupt:
        pass
