"""The MCP tools for definitions and references (`ragdb mcp`): `definition`, `references`,
`callers`, `outline` and `map`, for coding agents. Each returns its places structured (an
output schema) and as compiler-style lines; bad arguments are tool errors of one line (the
server's `call`). Everything goes through the front door, `RagDB`."""

from __future__ import annotations

from typing import Annotated, Any, Callable

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from ragdb.database import RagDB
from ragdb.repo_map import empty_note
from ragdb.retrieve import Filters
from ragdb.schemas import FilterValue


class SymbolPlace(BaseModel):
    path: str
    line: int
    kind: str
    qualified: str = Field(description="the dot-separated qualified name (of the definition, "
                           "or of what a use names)")
    language: str = ""
    enclosing: str | None = Field(default=None, description="a use: the definition it is in")
    calls: int | None = Field(default=None, description="a caller: how many calls it makes")
    resolved: bool = True
    end_line: int | None = None


class SymbolListing(BaseModel):
    what: str
    name: str
    total: int = Field(description="how many places there are in all (this page: results)")
    offset: int
    limit: int
    note: str = ""
    results: list[SymbolPlace]


class MapEntryModel(BaseModel):
    path: str
    line: int
    kind: str
    qualified: str
    signature: str
    rank: float


class RepoMapResult(BaseModel):
    tokens: int
    map: str
    entries: list[MapEntryModel]


def _listing(listing: Any) -> CallToolResult:
    model = SymbolListing.model_validate(listing.to_json())
    lines = [p.text() for p in listing.places]
    if listing.note:
        lines.append(listing.note)
    if listing.shown:  # the next page as the tool's argument, not the CLI's --offset
        lines.append(listing.page_note("offset="))
    return CallToolResult(content=[TextContent(type="text", text="\n".join(lines) or
                                               "nothing found")],
                          structured_content=model.model_dump(mode="json"))


def add_symbol_tools(server: MCPServer, rag: RagDB, call: Callable[[Any], Any]) -> None:
    """Register the tools on `server`; `call` runs each under the server's lock, turning a
    RagdbError into a tool error."""

    def read(what: str, name: str, path: FilterValue, lang: FilterValue, kind: FilterValue,
             limit: Any, offset: Any) -> CallToolResult:
        return _listing(call(lambda: getattr(rag, what)(
            name, filters=Filters.of(path, lang), kinds=kind,
            limit=limit, offset=offset or 0)))

    @server.tool()
    def definition(name: str, path: FilterValue = None, lang: FilterValue = None,
                   kind: FilterValue = None, limit: Any = None, offset: Any = 0
                   ) -> Annotated[CallToolResult, SymbolListing]:
        """Where a name is defined (function, method, class, type, constant...): `LLM`,
        `LLM.generate` or `pkg.mod.LLM` (a qualified name by its tail). path: GLOB(s) on file
        paths; lang: language(s); kind: function, method, class, ...; limit/offset: a page."""
        return read("definition", name, path, lang, kind, limit, offset)

    @server.tool()
    def references(name: str, path: FilterValue = None, lang: FilterValue = None,
                   kind: FilterValue = None, limit: Any = None, offset: Any = 0
                   ) -> Annotated[CallToolResult, SymbolListing]:
        """Every use of a name: those that resolve to its definitions (through imports and
        re-exports) first, then uses on objects of unknown type (resolved: false). kind:
        call, import, type, attribute, inherit, decorator, macro, use."""
        return read("references", name, path, lang, kind, limit, offset)

    @server.tool()
    def callers(name: str, path: FilterValue = None, lang: FilterValue = None,
                kind: FilterValue = None, limit: Any = None, offset: Any = 0
                ) -> Annotated[CallToolResult, SymbolListing]:
        """The functions and methods that call a name, each at its first call (calls: how
        many): what breaks if it changes."""
        return read("callers", name, path, lang, kind, limit, offset)

    @server.tool()
    def outline(path: str, kind: FilterValue = None, limit: Any = None, offset: Any = 0
                ) -> Annotated[CallToolResult, SymbolListing]:
        """The definitions of a file (its path as indexed, or its tail), or of every file
        under a folder, in reading order."""
        return _listing(call(lambda: rag.outline(path, kinds=kind, limit=limit,
                                                 offset=offset or 0)))

    @server.tool(name="map")
    def repo_map(tokens: Any = 1024, path: FilterValue = None, lang: FilterValue = None
                 ) -> Annotated[CallToolResult, RepoMapResult]:
        """The codebase at a glance: its most referenced definitions (ranked over the
        reference graph) with their signatures, grouped by file, within `tokens`."""
        filters = call(lambda: Filters.of(path, lang))
        text, entries = call(lambda: rag.repo_map(tokens, filters))
        result = RepoMapResult(tokens=int(tokens), map=text,
                               entries=[MapEntryModel(**e.to_json()) for e in entries])
        return CallToolResult(content=[TextContent(type="text", text=text or
                                                   empty_note(filters))],
                              structured_content=result.model_dump(mode="json"))
