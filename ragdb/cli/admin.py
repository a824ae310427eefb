"""The index's administration: `ragdb roots` (list, remove), `ragdb copy` (rag.db <-> PostgreSQL)
and `ragdb legs` (how a PostgreSQL index ranks). None of them searches or answers."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Optional

import typer

from ragdb.cli.shared import DbOption, err, open_rag
from ragdb.input_rules import one_line


def roots_command(
    remove: Optional[str] = typer.Option(
        None, "--remove", help="Delete this root's files, chunks and vectors from rag.db.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the roots as JSON."),
    db: Optional[str] = DbOption,
) -> None:
    """List the indexed roots with their file and chunk counts, or remove one."""
    rag = open_rag(db)
    if remove is not None:
        removed = rag.remove_root(remove)
        typer.echo(f"removed {remove}: {removed} files")
        return
    roots = rag.roots()
    if as_json:
        typer.echo(json.dumps([dataclasses.asdict(r) for r in roots], indent=2))
        return
    if not roots:
        typer.echo("no roots indexed", err=True)
    for root in roots:
        typer.echo(f"{one_line(root.path)}  {root.files} files, {root.chunks} chunks, "
                   f"last indexed {root.last_indexed_at}")


def copy_command(
    source: str = typer.Argument(..., help="The index to copy: a rag.db or a PostgreSQL URL."),
    target: str = typer.Argument(
        ..., help="Where to copy it: a PostgreSQL URL (postgresql://...) or a new rag.db."),
    replace: bool = typer.Option(
        False, "--replace", help="Replace the index the target already holds."),
    lexical: str = typer.Option(
        "postings", "--lexical",
        help="PostgreSQL's lexical leg: postings (exact BM25, as rag.db) or pg_textsearch."),
    vectors: str = typer.Option(
        "exact", "--vectors", help="PostgreSQL's vector leg: exact (as rag.db) or hnsw."),
    ef_search: int = typer.Option(
        400, "--ef-search", help="With --vectors hnsw: the HNSW scan's candidates (1-1000)."),
) -> None:
    """Copy a whole index from a rag.db to a PostgreSQL database, or back into a rag.db."""
    from ragdb.copying import copy_index, masked
    from ragdb.pg_search import PgRanking

    ranking = PgRanking(lexical, vectors, ef_search)
    quiet = not sys.stderr.isatty()
    stats = copy_index(source, target, replace=replace, ranking=ranking,
                       progress=(lambda _m: None) if quiet else (lambda m: err(m)))
    typer.echo(f"copied {masked(source)} -> {masked(target)}: {stats.files} files, "
               f"{stats.chunks} chunks, {stats.vectors} vectors"
               + (f", {stats.postings} postings" if stats.postings else "")
               + (f" ({stats.rebuilt_fts} chunks' analysed text made again)"
                  if stats.rebuilt_fts else "")
               + f"; {stats.seconds:.1f} s")


def legs_command(
    lexical: Optional[str] = typer.Option(
        None, "--lexical",
        help="The lexical leg: postings (exact BM25, as rag.db) or pg_textsearch "
        "[default: the one it has]."),
    vectors: Optional[str] = typer.Option(
        None, "--vectors",
        help="The vector leg: exact (as rag.db) or hnsw [default: the one it has]."),
    ef_search: Optional[int] = typer.Option(
        None, "--ef-search", help="With --vectors hnsw: the HNSW scan's candidates (1-1000) "
        "[default: the one it has]."),
    db: Optional[str] = DbOption,
) -> None:
    """Show or choose the legs a PostgreSQL index ranks with (builds or drops their indexes)."""
    rag = open_rag(db)
    if lexical is None and vectors is None and ef_search is None:
        legs = rag.legs()
        if legs is None:
            typer.echo("rag.db ranks with FTS5 (exact BM25) and sqlite-vec (exact vectors)")
            return
    else:
        legs = rag.set_legs(lexical, vectors, ef_search)
    typer.echo(f"lexical {legs.lexical}, vectors {legs.vectors}"
               + (f" (ef_search {legs.ef_search})" if legs.vectors == "hnsw" else ""))
