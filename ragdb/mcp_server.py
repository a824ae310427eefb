"""`ragdb mcp`: rag.db as a Model Context Protocol server over stdio (the official `mcp` SDK).

Tools: `search`, `answer`, `index` (re-indexes the roots rag.db records, never paths from the
client) and `status`. Each result is structured (`structuredContent`, with an output schema)
and readable as text. Bad arguments are tool errors of one line; the server ends when the
client closes its end of stdio. Everything goes through the front door, `RagDB`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from ragdb.database import RagDB
from ragdb.db import Setting, get_setting
from ragdb.errors import RagdbError
from ragdb.generate.styles import Style
from ragdb.retrieve import MAX_K, Filters, Hit, Mode

INSTRUCTIONS = (
    "Search and answer questions over the code and docs indexed in a ragdb rag.db. "
    "`search` returns the places (file_path:start_line-end_line with their text), `answer` "
    "a cited answer from a local model, `status` what is indexed, `index` re-indexes it."
)
FilterArg = list[str] | str | None


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


class SearchResult(BaseModel):
    query: str
    k: int
    mode: str
    generation: int
    sources: list[Source]


class AnswerResult(BaseModel):
    query: str
    answer: str
    cited: list[int] = Field(description="numbers n of the sources the answer cites as [n]")
    model: str | None
    style: str | None = Field(description="extractive (passages of the sources) or generate")
    check: dict[str, Any] | None = Field(
        default=None, description="a written answer's claim check: sentences kept and dropped "
        "(with the reason), code replaced by the source's lines, extractive fallback")
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
    parse_fallbacks: int
    chunks_total: int
    seconds: float


def _sources(hits: list[Hit]) -> list[Source]:
    return [Source(rank=n, file_path=h.file_path, start_line=h.start_line, end_line=h.end_line,
                   first_character_index=h.first, last_character_index=h.last,
                   language=h.language, kind=h.kind, score=h.score, text=h.text)
            for n, h in enumerate(hits, 1)]


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


def _k(k: int) -> int:
    if not 1 <= k <= MAX_K:
        raise ToolError(f"k must be a whole number from 1 to {MAX_K}, got {k}")
    return k


def build_server(db: Path, *, model: str | None = None) -> MCPServer:
    """The MCP server for one rag.db (one RagDB, used by one tool call at a time)."""
    rag = RagDB(db, model=model, warn=lambda message: None)
    lock = threading.Lock()
    server = MCPServer("ragdb", instructions=INSTRUCTIONS, log_level="WARNING")

    def call(fn: Any) -> Any:
        with lock:
            try:
                return fn()
            except RagdbError as exc:
                raise ToolError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)

    @server.tool()
    def search(query: str, k: int = 5, path: FilterArg = None, lang: FilterArg = None,
               mode: str = "hybrid") -> Annotated[CallToolResult, SearchResult]:
        """The k places in the indexed code and docs most relevant to a query.

        path: GLOB pattern(s) on file paths (e.g. "*.go", "src/*"); lang: language(s), e.g.
        "python", "go", "rust", "typescript", "markdown"; mode: hybrid, lexical or dense.
        """
        _k(k)

        def run() -> SearchResult:
            hits = rag.search(query, k, mode, Filters.of(path, lang))
            return SearchResult(query=query, k=k, mode=Mode(mode).value,
                                generation=rag.generation, sources=_sources(hits))

        result: SearchResult = call(run)
        return _result(result, _sources_text(result.sources))

    @server.tool()
    def answer(query: str, k: int = 5, path: FilterArg = None, lang: FilterArg = None,
               mode: str = "hybrid",
               style: str = "auto") -> Annotated[CallToolResult, AnswerResult]:
        """Answer a question from the k most relevant sources, citing them as [n]: passages
        of the sources (style extractive, the default where only the small offline model
        exists) or written by the local model (generate). Same filters as search."""
        _k(k)

        def run() -> AnswerResult:
            try:
                chosen = Style(style)
            except ValueError:
                raise RagdbError(f"style must be one of auto, extractive, generate, "
                                 f"got {style!r}") from None
            found = rag.answer(query, k, mode, filters=Filters.of(path, lang), style=chosen)
            return AnswerResult(query=query, answer=found.text, cited=list(found.cited),
                                model=found.model, style=found.style, check=found.check,
                                sources=_sources(found.hits))

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
                parse_fallbacks=s.parse_fallbacks, chunks_total=s.chunks_total,
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

    return server


def run_stdio(db: Path, *, model: str | None = None) -> None:
    """Serve until the client closes stdin (or Ctrl-C)."""
    import anyio

    server = build_server(db, model=model)
    try:
        anyio.run(server.run_stdio_async)
    except KeyboardInterrupt:
        pass
