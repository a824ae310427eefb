"""`ragdb index`: its options, one run (with progress bars on a terminal) and its summary line.

The summary says what the run did in one line on stdout; the files it skipped or cut as text
are named on stderr, at most MAX_SKIPPED_SHOWN of each (all with --verbose), so a log stays
readable. A skip an earlier run named already (the file unchanged since) is only counted, unless
--verbose.
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from ragdb.cli.shared import DbOption, Progress, err, from_project_folder, open_rag
from ragdb.db import found_in_parent, location
from ragdb.errors import RagdbError
from ragdb.indexing import MAX_CHUNK_SIZE, MIN_CHUNK_SIZE
from ragdb.input_rules import check_path, one_line
from ragdb.file_types import language_of
from ragdb.walking import DEFAULT_EXCLUDE, DEFAULT_INCLUDE

if TYPE_CHECKING:  # pragma: no cover
    from ragdb.database import RagDB

MAX_SKIPPED_SHOWN = 20


def index(
    paths: list[str] = typer.Argument(
        None, help="Files or folders to index [default: the roots rag.db records, else data/raw]."
    ),
    db: Optional[str] = DbOption,
    max_chunk_size: Optional[int] = typer.Option(
        None,
        "--max_chunk_size",
        "--max-chunk-size",
        help=f"Largest chunk in characters ({MIN_CHUNK_SIZE} to {MAX_CHUNK_SIZE}) [default: "
        f"the size rag.db was built with, else {MAX_CHUNK_SIZE}].",
        show_default=False,
    ),
    include: list[str] = typer.Option(
        list(DEFAULT_INCLUDE), "--include",
        help="Also index files this glob names, even those the default rule leaves out "
        "(lockfiles, generated, minified, .env and keys; repeatable). A glob with a '/' "
        "matches the path under the root, else the file name.",
    ),
    exclude: list[str] = typer.Option(
        list(DEFAULT_EXCLUDE), "--exclude",
        help="Leave out files this glob names, unless an --include names them too "
        "(repeatable; --exclude '*' --include '*.go': only Go).",
    ),
    no_ignore: bool = typer.Option(
        False, "--no-ignore", help="Index files that .gitignore or .git/info/exclude leave out."
    ),
    hidden: bool = typer.Option(
        False, "--hidden", help="Walk into folders whose name starts with a dot."
    ),
    watch: bool = typer.Option(
        False, "--watch", help="After indexing, re-index on every change until Ctrl-C."
    ),
    wait: bool = typer.Option(
        False, "--wait",
        help="If another index run is in progress on this index, wait for it to end, then "
        "index [default: refuse in one line].",
    ),
    vectors: bool = typer.Option(
        True, "--vectors/--no-vectors",
        help="Embed the docs' chunks (code gets no vectors) for dense and hybrid search."
    ),
    embedder: Optional[str] = typer.Option(
        None, "--embedder",
        help="Embedding model: a local OpenVINO IR or ONNX folder, or a hub id "
        "[default: all-MiniLM-L6-v2 from the installed package].",
    ),
    into_existing: bool = typer.Option(
        False, "--into-existing",
        help="Add ragdb's tables to an existing SQLite database that is not a ragdb index "
        "(refused otherwise, so another application's database is never changed).",
    ),
    follow_symlinks: bool = typer.Option(
        False, "--follow-symlinks",
        help="Follow symlinks (files and folders) whose target lies outside the indexed root "
        "[default: skip them and count them as skipped].",
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v",
        help="Name every skipped file [default: only those no earlier run of the same root "
        "named; the others are counted].",
    ),
) -> None:
    """Index files into rag.db: only new or changed files are re-chunked."""
    where = location(db)
    if found_in_parent(db, where):
        err(f"indexing into {one_line(str(where))}, the index of a parent folder")
    # Text, not Path: typer makes "" (an unset $DIR) the current folder before it is seen.
    where, given = from_project_folder(where, [Path(check_path(p)) for p in paths or []])
    rag = open_rag(where)
    roots: list[Path] = given
    walk_given = bool(include) or bool(exclude) or no_ignore or hidden or follow_symlinks
    recorded: list[Path] = []
    if not roots:
        try:
            recorded = [Path(r.path) for r in rag.roots()] if rag.exists() else []
        except RagdbError:  # not an index yet (or a foreign file: index() says so)
            recorded = []
        if not recorded and not Path("data/raw").exists():
            # The course layout's default: a new user who typed `ragdb index` in their
            # project would otherwise read "cannot index data/raw" and wonder what it is.
            raise RagdbError("nothing to index: no folder given, no root recorded in "
                             f"{rag.shown} and no data/raw here; name what to index, "
                             "e.g. `ragdb index .`")
        roots = recorded or [Path("data/raw")]
    options: dict[str, Any] = dict(
        max_chunk_size=max_chunk_size, include=include, exclude=exclude, ignore=not no_ignore,
        hidden=hidden,
        follow_symlinks=follow_symlinks, vectors=vectors, embedder_name=embedder,
        into_existing=into_existing,
    )
    # Every recorded root, each walked as its own last run was, unless told otherwise.
    own_options = bool(recorded) and not walk_given
    _index_once(rag, [] if own_options else roots, options, wait=wait, verbose=verbose)
    if watch:
        from ragdb.watch import watch_roots

        watch_roots(rag, roots, options, report=partial(_index_summary, verbose=verbose),
                    recorded=own_options)


def _index_once(rag: "RagDB", roots: list[Path], options: dict[str, Any],
                wait: bool = False, verbose: bool = False) -> None:
    show_bar = sys.stderr.isatty()

    def waiting() -> None:  # said once, before the bars: a CI job's log shows why it paused
        err(f"another index run is in progress on {rag.shown}; waiting for it to end")

    with Progress(show_bar, "indexing") as files_bar, \
            Progress(show_bar, "embedding", "chunks") as bar:

        def on_embedded(count: int, total: int) -> None:
            if bar.bar is None:
                bar.total(total)
            bar.step(count - bar.count)
            bar.count = count

        result = rag.index(
            roots, progress=files_bar.step, on_files=files_bar.total, on_embedded=on_embedded,
            wait=wait, on_wait=waiting, **options,
        )
    typer.echo(_index_summary(result, verbose=verbose))


def _fallback_reason(path: str) -> str:
    """Why a source file was cut as text, as far as its name tells: Python is cut along its
    own parser's tree, and a file that refuses (a syntax error, Python 2, a template's
    placeholder) along tree-sitter's, so it is cut as text only when that tree is mostly
    errors too; the tree-sitter languages fall back on a tree mostly errors
    (docs/indexing.md)."""
    if language_of(path) == "python":
        return "it does not parse as Python and its syntax tree was mostly errors"
    return "its syntax tree was mostly errors"


def _index_summary(result: Any, verbose: bool = False) -> str:
    """One line: what an index run did (and on stderr the files it skipped that no earlier run
    named, or with `verbose` every one: a no-op re-index or a --watch batch repeats none)."""
    stats, vstats = result.stats, result.vectors
    vector_note = ""
    if vstats is not None:
        vector_note = (
            f"; {vstats.embedded} chunks embedded, {vstats.total} vectors"
            f" ({vstats.seconds:.1f} s"
            + (f", {vstats.windows} windows, {vstats.windows_per_s:.0f}/s" if vstats.windows
               else "")
            + ")"
        )
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(stats.skipped.items()))
    before = set() if verbose else set(stats.skipped_before)
    named = [(path, why) for path, why in stats.skipped_paths if path not in before]
    shown = len(named) if verbose else MAX_SKIPPED_SHOWN  # --verbose: every one, no count
    for path, why in named[:shown]:
        err(f"skipped {one_line(path)}: {why}")
    if len(named) > shown:
        err(f"... and {len(named) - shown} more skipped")
    shown = len(stats.fallback_paths) if verbose else MAX_SKIPPED_SHOWN
    for path in stats.fallback_paths[:shown]:
        err(f"parse fallback {one_line(path)}: {_fallback_reason(path)}, cut as text")
    if len(stats.fallback_paths) > shown:
        err(f"... and {len(stats.fallback_paths) - shown} more parse fallbacks")
    fallbacks = (f"; {stats.parse_fallbacks} parse fallbacks (cut as text)"
                 if stats.parse_fallbacks else "")
    languages = ", ".join(f"{lang} {n}" for lang, n in sorted(
        stats.languages.items(), key=lambda item: (-item[1], item[0])))
    return (
        f"{stats.files_seen} files: {stats.files_indexed} indexed, {stats.files_unchanged} "
        f"unchanged, {stats.files_removed} removed, {stats.files_skipped} skipped"
        + (f" ({skipped})" if skipped else "")
        + (f"; by language: {languages}" if languages else "")
        + f"; {stats.chunks_written} chunks written, {stats.chunks_total} in the index"
        + (" (full rebuild)" if stats.full_rebuild else "")
        + fallbacks
        + (f"; symbols read for {stats.symbols_refreshed} unchanged files"
           if stats.symbols_refreshed else "")
        + f"; {stats.seconds:.1f} s"
        + vector_note
    )
