"""Every command, option, HTTP route and plugin setting a user can reach is in the README."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import click
import pytest
import typer

from ragdb.cli import app
from ragdb.datasette_plugin.api import ROUTES
from ragdb.datasette_plugin.service import PluginConfig

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _commands() -> list[tuple[str, click.Command]]:
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    return sorted(group.commands.items())


@pytest.mark.parametrize("name", [name for name, command in _commands() if not command.hidden])
def test_every_command_is_documented(name: str) -> None:
    assert f"`ragdb {name}" in README, f"README does not document `ragdb {name}`"


@pytest.mark.parametrize("name", [name for name, command in _commands() if command.hidden])
def test_every_spelling_is_documented(name: str) -> None:
    """The course assignment's underscore spellings are hidden from --help, not from users."""
    assert f"`{name}`" in README, f"README does not mention the spelling {name}"


@pytest.mark.parametrize(
    "command,option",
    [
        (name, option)
        for name, command in _commands()
        for param in command.params
        if isinstance(param, click.Option)
        for option in param.opts + param.secondary_opts
    ],
)
def test_every_option_is_documented(command: str, option: str) -> None:
    """Each option appears in the README under one of its spellings."""
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    param = next(p for p in group.commands[command].params if option in p.opts + p.secondary_opts)
    assert isinstance(param, click.Option)
    spellings = param.opts + param.secondary_opts
    if option in ("-k",):
        return  # the short form of --k, documented with it
    assert any(re.search(re.escape(s) + r"\b", README) for s in spellings), (
        f"README does not mention {'/'.join(spellings)} of `ragdb {command}`"
    )


@pytest.mark.parametrize("pattern", [pattern for pattern, _view in ROUTES])
def test_every_route_is_documented(pattern: str) -> None:
    path = pattern.strip("^$").split("(")[0].rstrip("/")
    if path.endswith("/static"):
        return  # the question page's own script, not an API
    if pattern.endswith("(?:/.*)?$"):
        return  # the catch-all that answers 404
    assert f"/-/ragdb/{path.removeprefix('/-/ragdb/')}" in README, f"README lacks {path}"


@pytest.mark.parametrize("setting", [f.name for f in dataclasses.fields(PluginConfig)])
def test_every_plugin_setting_is_documented(setting: str) -> None:
    assert f'"{setting}"' in README, f"README's plugin settings lack {setting}"
