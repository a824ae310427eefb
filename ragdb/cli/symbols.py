"""Definitions and references from the command line: `ragdb definition`, `references`,
`callers`, `callees`, `outline` and `map`. Each prints `path:line: kind qualified_name`, one
place a line, as a compiler does (an editor's quickfix list reads it), or JSON with --json;
a page at a time (--limit, --offset), saying on stderr how many there are in all."""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

import typer

from ragdb.cli.shared import DbOption, ExcludeOption, LangOption, PathOption, err, open_rag

KindOption = typer.Option(
    None, "--kind",
    help="Only this kind (repeatable): function, method, class, struct, interface, trait, "
    "type, enum, constant, variable, macro, module, field, test; for references: call, "
    "import, type, attribute, inherit, decorator, macro, use.")
LimitOption = typer.Option(None, "--limit", help="How many places to show (1 to 10,000) "
                           "[default: 50; outline: all].", show_default=False)
OffsetOption = typer.Option(0, "--offset", help="Skip this many places (the next page).")
JsonOption = typer.Option(False, "--json", help="Print the places as JSON.")


def _show(listing: Any, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(listing.to_json(), indent=2, ensure_ascii=False))
        return
    for place in listing.places:
        typer.echo(place.text())
    if listing.note:
        err(listing.note)
    if listing.shown:
        err(listing.shown)


NameArgument = typer.Argument(..., help="The name: `LLM`, `LLM.generate`, "
                              "`clap::Command::new` (a qualified name by its tail).")


def _read(what: str, argument: Any = NameArgument) -> Callable[..., None]:
    """A command that reads one RagDB symbol listing (`what`: definition, references, ...,
    outline) of its argument, under the filters and the page its options give."""
    def command(
        name: str = argument,
        path: Optional[list[str]] = PathOption,
        lang: Optional[list[str]] = LangOption,
        exclude: Optional[list[str]] = ExcludeOption,
        kind: Optional[list[str]] = KindOption,
        limit: Optional[int] = LimitOption,
        offset: int = OffsetOption,
        as_json: bool = JsonOption,
        db: Optional[str] = DbOption,
    ) -> None:
        from ragdb.retrieve import Filters

        rag = open_rag(db)
        listing = getattr(rag, what)(name, filters=Filters.of(path, lang, exclude),
                                     kinds=kind, limit=limit, offset=offset)
        _show(listing, as_json)
    return command


definition_command = _read("definition")
definition_command.__doc__ = "Where a name is defined: `path:line: kind qualified_name`."
references_command = _read("references")
references_command.__doc__ = ("Every use of a name: those that resolve to its definitions "
                              "(through imports and re-exports), then those on objects of "
                              "unknown type (unresolved).")
callers_command = _read("callers")
callers_command.__doc__ = "The functions and methods that call a name, at their first call."
callees_command = _read("callees")
callees_command.__doc__ = "What a function or method calls, at the callees' definitions."

outline_command = _read("outline", typer.Argument(
    ..., metavar="PATH", help="A file (its stored path, or its tail), or a folder."))
outline_command.__doc__ = "A file's definitions in reading order: `path:line: kind qualified_name`."


def map_command(
    tokens: int = typer.Option(1024, "--tokens", help="The map's budget in tokens "
                               "(characters / 4)."),
    path: Optional[list[str]] = PathOption,
    lang: Optional[list[str]] = LangOption,
    exclude: Optional[list[str]] = ExcludeOption,
    as_json: bool = JsonOption,
    db: Optional[str] = DbOption,
) -> None:
    """The codebase at a glance: its most referenced definitions (PageRank over the
    reference graph) with their signatures, grouped by file, within --tokens."""
    from ragdb.retrieve import Filters

    from ragdb.repo_map import empty_note

    filters = Filters.of(path, lang, exclude)
    text, entries = open_rag(db).repo_map(tokens, filters)
    if as_json:
        typer.echo(json.dumps({"tokens": tokens, "entries": [e.to_json() for e in entries]},
                              indent=2, ensure_ascii=False))
        return
    if not entries:
        err(empty_note(filters))
        return
    typer.echo(text)
