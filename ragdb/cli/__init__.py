"""The `ragdb` command: a thin layer over the library that turns every failure into one line.

This module is the command table (every name and spelling a user types, in --help's order) and
main(), which turns any error into one `ragdb: ...` line and an exit status. The commands live
in modules by what they do (indexing, admin, query, datasets, models); what they share (common
options, errors, progress bars) in shared.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, Callable, Optional

import apsw
import click
import typer

from ragdb.cli.admin import copy_command, legs_command, roots_command
from ragdb.cli.datasets import answer_dataset_command, evaluate_command, search_dataset_command
from ragdb.cli.indexing import index
from ragdb.cli.models import models_app
from ragdb.cli.query import answer_command, search_command
from ragdb.cli.shared import DbOption, ModelOption, err, from_project_folder
from ragdb.input_rules import one_line
from ragdb.cli.symbols import (
    callees_command, callers_command, definition_command, map_command, outline_command,
    references_command,
)
from ragdb.db import location
from ragdb.errors import RagdbError
from ragdb.resources import package_version

app = typer.Typer(
    help="Ask questions about a codebase: answers with the exact places they come from.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    suggest_commands=False,  # click suggests too: Typer's own made "Did you mean" say it twice
)


def _print_version(wanted: bool) -> None:
    """`ragdb --version`: the installed version, then exit (before any command runs)."""
    if wanted:
        typer.echo(f"ragdb {package_version()}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="Print ragdb's version and exit."),
) -> None:
    """Ask questions about a codebase: answers with the exact places they come from."""


# Accurate in every phase: an index run commits its files and chunks in one transaction, then
# its vectors batch by batch, so a stop while embedding keeps the rows and some vectors. The
# same command again, not a plain `ragdb index`: a stop before the first commit recorded no
# root, and a plain run then has nothing to index.
INTERRUPTED = ("interrupted; rag.db keeps what was committed: an index run's files and chunks "
               "whole or not at all, its vectors batch by batch (the same `ragdb index` again "
               "finishes them)")


def serve_command(
    port: int = typer.Option(8001, "--port", help="TCP port."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Interface to bind (loopback unless told otherwise)."
    ),
    model: Optional[str] = ModelOption,
    db: Optional[str] = DbOption,
) -> None:
    """Serve rag.db in Datasette with ragdb's HTTP API and question page (/-/ragdb/ask)."""
    from ragdb.datasette_plugin.serve import serve

    # From any folder, as `ragdb mcp`: the index's stored paths are relative to the folder it
    # was built from, where POST /-/ragdb/index must run (from elsewhere it was refused).
    serve(from_project_folder(location(db), anywhere=True)[0], host=host, port=port,
          model=model)


def mcp_command(
    model: Optional[str] = ModelOption,
    db: Optional[str] = DbOption,
) -> None:
    """Run a Model Context Protocol server over stdio for coding agents: tools search, answer,
    index, status, definition, references, callers, outline, map."""
    from ragdb.mcp_server import run_stdio

    run_stdio(from_project_folder(location(db), anywhere=True)[0], model=model)


#: Each command's line in `ragdb --help` (its docstring's first line, cut to the terminal's
#: width, read "List the indexed roots with their file and chunk...").
SHORT = {
    "index": "Index files and folders into rag.db (then what changed).",
    "roots": "The indexed roots with their counts; --remove one.",
    "copy": "Copy an index between rag.db and PostgreSQL.",
    "legs": "Show or choose the legs a PostgreSQL index ranks with.",
    "search": "The best places for a question, as path:start-end.",
    "search-dataset": "Search a dataset's questions; save the results.",
    "evaluate": "Recall@1/3/5/10 of a results file against a dataset.",
    "answer": "Answer a question, citing its sources as [n].",
    "definition": "Where a name is defined.",
    "references": "Every use of a name.",
    "callers": "The functions and methods that call a name.",
    "callees": "What a function or method calls.",
    "outline": "A file's definitions in reading order.",
    "map": "The most referenced definitions, within --tokens.",
    "answer-dataset": "Answer every question of a search-dataset output.",
    "serve": "Serve rag.db: web pages, question page, HTTP API.",
    "mcp": "A Model Context Protocol server for coding agents.",
    "models": "The answer models here; install the offline writer.",
}


def _command(name: str, function: Callable[..., Any], hidden: bool = False) -> None:
    app.command(name, hidden=hidden, short_help=SHORT.get(name))(function)


_command("index", index)
_command("roots", roots_command)
_command("copy", copy_command)
_command("legs", legs_command)
_command("search", search_command)
_command("search-dataset", search_dataset_command)
_command("search_dataset", search_dataset_command, hidden=True)
_command("evaluate", evaluate_command)
_command("answer", answer_command)
_command("definition", definition_command)
_command("references", references_command)
_command("callers", callers_command)
_command("callees", callees_command)
_command("outline", outline_command)
_command("map", map_command)
_command("answer-dataset", answer_dataset_command)
_command("answer_dataset", answer_dataset_command, hidden=True)
app.add_typer(models_app, name="models", short_help=SHORT["models"])
_command("serve", serve_command)
_command("mcp", mcp_command)


def _run(command: click.Command, argv: Optional[list[str]]) -> Any:
    """The command itself; with RAGDB_DEBUG set (`make debug`), an error's traceback goes to
    stderr before the one line `main` prints, for whoever is chasing it."""
    try:
        return command.main(args=argv, prog_name="ragdb", standalone_mode=False)
    except (click.exceptions.Exit, click.exceptions.NoArgsIsHelpError):
        raise
    except BaseException:
        if os.environ.get("RAGDB_DEBUG"):
            traceback.print_exc()
        raise


def _command_name(command: click.Command, argv: Optional[list[str]]) -> str | None:
    """The subcommand argv names (`index` in `ragdb --version index .`), as click resolves it;
    None where it names none."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not isinstance(command, click.Group):
        return None
    for arg in args:
        if not arg.startswith("-"):
            found = command.get_command(click.Context(command), arg)
            return found.name if found is not None else None
    return None


def main(argv: Optional[list[str]] = None) -> None:
    """Run the CLI; any RagdbError, bad option or interrupt ends in one line and a non-zero exit."""
    command = typer.main.get_command(app)
    try:
        status = _run(command, argv)
    except click.exceptions.NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(0)
    except click.UsageError as exc:
        err(exc.format_message().replace("\n", " "))
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        err("interrupted")
        sys.exit(130)
    except click.ClickException as exc:
        err(exc.format_message())
        sys.exit(exc.exit_code)
    except RagdbError as exc:
        err(str(exc))
        sys.exit(1)
    except KeyboardInterrupt:
        # The index run's account only where one ran: Ctrl-C on `ragdb answer -` waiting for
        # its next question spoke of files, chunks and vectors it never touches.
        err(INTERRUPTED if _command_name(command, argv) == "index" else "interrupted")
        sys.exit(130)
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        err(f"the database is corrupted ({exc}); delete it and run `ragdb index`")
        sys.exit(1)
    except apsw.FullError:
        err("the disk is full: free some space and try again")
        sys.exit(1)
    except apsw.Error as exc:
        err(f"database error: {exc}")
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(1)
    except MemoryError:
        err("out of memory")
        sys.exit(1)
    except OSError as exc:
        where = f": {one_line(str(exc.filename))}" if exc.filename else ""
        err(f"{exc.strerror or exc}{where}")
        sys.exit(1)
    # Typer turns Ctrl-C into an exit status of 130 that it returns in non-standalone mode.
    if status == 130:
        err(INTERRUPTED if _command_name(command, argv) == "index" else "interrupted")
        sys.exit(130)
    if isinstance(status, int) and status:
        sys.exit(status)
