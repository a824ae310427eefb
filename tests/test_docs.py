"""The docs a user reads: every command, option, HTTP route, MCP tool and plugin setting is in
README.md or docs/*.md, every module in development.md's Layout; `ragdb --help` gives each
command one whole line; the README stays a short front page that links every doc; links
resolve.

(Every example in them runs in tests/test_docs_examples.py.)"""

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

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
PAGES = {path: path.read_text(encoding="utf-8")
         for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]}
DOCS = "\n".join(PAGES.values())


def _commands() -> list[tuple[str, click.Command]]:
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    return sorted(group.commands.items())


@pytest.mark.parametrize("name", [name for name, command in _commands() if not command.hidden])
def test_every_command_is_in_the_readme_table(name: str) -> None:
    assert f"`ragdb {name}" in README, f"README's command table lacks `ragdb {name}`"


@pytest.mark.parametrize("name", [name for name, command in _commands() if command.hidden])
def test_every_spelling_is_documented(name: str) -> None:
    """The course assignment's underscore spellings are hidden from --help, not from users."""
    assert f"`{name}`" in DOCS, f"the docs do not mention the spelling {name}"


@pytest.mark.parametrize(
    "command,option",
    [
        (name, option)
        for name, command in _commands()
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden  # hidden: for benchmarks
        for option in param.opts + param.secondary_opts
    ],
)
def test_every_option_is_documented(command: str, option: str) -> None:
    """Each option appears in the docs under one of its spellings."""
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    param = next(p for p in group.commands[command].params if option in p.opts + p.secondary_opts)
    assert isinstance(param, click.Option)
    spellings = [s for s in param.opts + param.secondary_opts if len(s) > 2]  # not -k, -v
    assert any(re.search(re.escape(s) + r"\b", DOCS) for s in spellings), (
        f"the docs do not mention {'/'.join(spellings)} of `ragdb {command}`"
    )


@pytest.mark.parametrize("pattern", [pattern for pattern, _view in ROUTES])
def test_every_route_is_documented(pattern: str) -> None:
    path = pattern.strip("^$").split("(")[0].rstrip("/")
    if path.endswith("/static"):
        return  # the question page's own script, not an API
    if pattern.endswith("(?:/.*)?$"):
        return  # the catch-all that answers 404
    assert f"/-/ragdb/{path.removeprefix('/-/ragdb/')}" in DOCS, f"the docs lack {path}"


@pytest.mark.parametrize("setting", [f.name for f in dataclasses.fields(PluginConfig)])
def test_every_plugin_setting_is_documented(setting: str) -> None:
    assert f'"{setting}"' in DOCS, f"the docs' plugin settings lack {setting}"


def test_the_readme_is_a_short_front_page() -> None:
    """Issue 38: install, the main job and the tests first; no tuning history; one click to each
    doc; `make test` is the test command CI runs, and it runs pytest."""
    lines = README.splitlines()
    assert len(lines) <= 350, f"README.md has {len(lines)} lines"
    assert not re.search(r"\bround\b|\bnot kept\b", README, re.I), "tuning history in README"
    for heading in ("## Prerequisites", "## Install", "## Test"):
        assert heading in README
    assert README.index("## Install") < README.index("## Test") < README.index("## Commands")
    for page in PAGES:
        if page.parent.name == "docs":
            assert f"(docs/{page.name})" in README, f"README does not link docs/{page.name}"
    assert "make test" in README
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test:\n\t\$\(RUN\) pytest -q -n 2 --dist loadfile$", makefile, re.M)


def _anchors(text: str) -> set[str]:
    """GitHub's anchors for a page's headings, and explicit `<a id="...">` ones."""
    found = set(re.findall(r'<a id="([^"]+)">', text))
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", list(PAGES), ids=lambda p: p.name)
def test_links_between_pages_resolve(page: Path) -> None:
    targets = re.findall(r"\]\(([^)\s]+)\)", PAGES[page])
    assert len(targets) == PAGES[page].count("]("), (
        f"{page.name}: a link this test cannot read (a title, a space in its target)")
    for target in targets:
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        name, _, anchor = target.partition("#")
        linked = (page.parent / name).resolve() if name else page
        assert linked.exists(), f"{page.name}: link to missing {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked.read_text(encoding="utf-8")), (
                f"{page.name}: no heading for #{anchor} in {linked.name}")


def test_every_mcp_tool_is_documented(tmp_path: Path) -> None:
    """serving.md's MCP table and `ragdb mcp --help` name every tool the server lists (both
    named four while the server gave nine)."""
    import anyio

    from ragdb.mcp_server import build_server

    tools = [tool.name for tool in anyio.run(build_server(tmp_path / "rag.db").list_tools)]
    serving = PAGES[REPO / "docs" / "serving.md"]
    table = serving[serving.index("\n## MCP"):]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    helped = group.commands["mcp"].help or ""
    for name in tools:
        assert any(f"`{name}`" in row.split(" | ")[0] for row in rows), (
            f"serving.md's MCP table lacks the tool {name}")
        assert re.search(rf"\b{name}\b", helped), f"`ragdb mcp --help` does not name {name}"
    assert not list(tmp_path.iterdir()), "listing the tools wrote a file"


def test_every_command_has_one_whole_line_in_the_help() -> None:
    """`ragdb --help` lists each command on one line at 80 columns, not cut short ("List the
    indexed roots with their file and chunk...")."""
    groups = [("", dict(_commands()))]
    while groups:
        prefix, commands = groups.pop()
        width = 80 - 6 - max(len(name) for name in commands)  # click's own limit
        for name, command in commands.items():
            if isinstance(command, click.Group):
                groups.append((f"{prefix}{name} ", dict(command.commands)))
            if not command.hidden:
                line = command.get_short_help_str(limit=width)
                assert line and not line.endswith("...") and len(line) <= width, (
                    f"ragdb {prefix}{name}: {line!r}")


def test_every_command_that_reads_an_index_takes_db() -> None:
    """README: every command that reads an index takes --db; copy names both ends, evaluate
    and models read none (it said every command took --db)."""
    assert "`copy` names both ends, `evaluate` and `models` read none" in README
    for name, command in _commands():
        options = {o for p in command.params if isinstance(p, click.Option) for o in p.opts}
        assert ("--db" in options) == (name not in ("copy", "evaluate", "models")), name


def test_every_module_is_in_the_layout() -> None:
    """development.md's Layout names each module of ragdb/ (15 were missing: the symbol
    readers, the reranker, resources, ...)."""
    development = PAGES[REPO / "docs" / "development.md"]
    layout = development[development.index("## Layout"):development.index("## Tests")]
    for module in sorted((REPO / "ragdb").glob("[a-z]*.py")):
        assert f"`{module.stem}`" in layout, f"development.md's Layout lacks {module.stem}"


@pytest.mark.parametrize("name", [p.stem.removeprefix("canned_")
                                  for p in sorted((REPO / "sql").glob("canned_*.sql"))])
def test_every_canned_query_is_documented(name: str) -> None:
    """serving.md's Browsing lists each canned query's page (it lacked symbol and
    file_outline)."""
    assert f"/rag/{name}" in PAGES[REPO / "docs" / "serving.md"], f"serving.md lacks /rag/{name}"
