"""MkDocs snippets (`--8<--`, ragdb/snippets.py): section markers are never headings, and a
docs answer block that only includes snippets shows the section it includes, from that file,
verbatim at its own lines; on a small MkDocs-style site indexed by the real `ragdb index`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragdb import RagDB
from ragdb.chunking import chunk_text
from ragdb.generate.cuts import headings
from ragdb.retrieve import Mode
from ragdb.snippets import includes, section, target
from tests.conftest import run_cli, write_corpus
from tests.test_chunking import PROPERTY, check_invariants


def _inc(system: str, tool: str) -> str:
    """An included file of three named sections, its markers written as Markdown H1 lines."""
    return (
        "# --8<-- [start:requirements]\n\n"
        f"A {system} host with {tool}.\n\n"
        "# --8<-- [end:requirements]\n"
        "# --8<-- [start:build-from-source]\n\n"
        f"## Compile the widget on {system}\n\n"
        f"Run `make widget` in the checkout; on {system} the build uses {tool}.\n\n"
        "```bash\nmake widget\n```\n\n"
        "# --8<-- [end:build-from-source]\n"
        "<!-- --8<-- [start:uninstall] -->\n"
        f"Remove the widget from {system} with `make uninstall`.\n"
        "<!-- --8<-- [end:uninstall] -->\n"
    )


LONG_INC = ("Intro to the long section.\n\n# --8<-- [start:long]\n\n"
            + "".join(f"Paragraph {i} on unrelated packaging matters.\n\n" for i in range(40))
            + "The frobnicator calibration needs the `--calibrate` flag.\n\n"
            + "".join(f"Closing paragraph {i} on other matters.\n\n" for i in range(40))
            + "# --8<-- [end:long]\n")

SITE = {
    "docs/build.md": (
        "# Build the widget from source\n\n"
        '=== "Linux"\n\n    --8<-- "docs/snippets/linux.inc.md:build-from-source"\n\n'
        '=== "macOS"\n\n    --8<-- "docs/snippets/macos.inc.md:build-from-source"\n'
    ),
    "docs/snippets/linux.inc.md": _inc("Linux", "gcc"),
    "docs/snippets/macos.inc.md": _inc("macOS", "Xcode"),
    "docs/missing.md": ("# Missing section\n\n"
                        '--8<-- "docs/snippets/linux.inc.md:no-such-section"\n'),
    "docs/nowhere.md": '# Nowhere\n\n--8<-- "docs/snippets/nowhere.md"\n',
    "docs/hidden.md": '# Hidden\n\n--8<-- ".hidden/secret.md"\n',
    ".hidden/secret.md": "A secret page ragdb does not index (hidden folders are skipped).\n",
    "docs/long.md": '# Calibration\n\n!!! note\n    --8<-- "docs/snippets/long.inc.md:long"\n',
    "docs/snippets/long.inc.md": LONG_INC,
    "docs/params.md": ('# Sampling parameters\n\n??? code\n\n    ```python\n'
                       '    --8<-- "src/params.py:sampling-params"\n    ```\n'),
    "src/params.py": ("import dataclasses\n\n\n@dataclasses.dataclass\nclass Params:\n"
                      "    # --8<-- [start:sampling-params]\n"
                      "    temperature: float = 1.0  # sampling temperature\n"
                      "    top_p: float = 1.0\n"
                      "    # --8<-- [end:sampling-params]\n"
                      "    seed: int = 0\n"),
    "docs/gpu.md": (
        "# Widget on GPUs\n\n## Set up\n\n### Requirements\n\n"
        '=== "Linux"\n\n    --8<-- "docs/snippets/linux.inc.md:requirements"\n\n'
        '=== "macOS"\n\n    --8<-- "docs/snippets/macos.inc.md:requirements"\n\n'
        "[](){ #from-source }\n\n### From source\n\n"
        '=== "Linux"\n\n    --8<-- "docs/snippets/linux.inc.md:build-from-source"\n\n'
        '=== "macOS"\n\n    --8<-- "docs/snippets/macos.inc.md:build-from-source"\n'
    ),
    "docs/whole.md": '# Whole file\n\n--8<--\ndocs/snippets/plain.md\n--8<--\n',
    "docs/snippets/plain.md": "# Plain include\n\nThe plain page is included whole.\n",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("snippets")
    write_corpus(root / "site", SITE)
    done = run_cli("index", "site", "--db", "rag.db", "--no-vectors", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture(scope="module")
def rag(site: Path) -> Iterator[RagDB]:
    with RagDB(site / "rag.db", use_cache=False) as db:
        yield db


def blocks_for(rag: RagDB, question: str, page: str) -> tuple[list[dict[str, object]], str]:
    """The blocks answering from `page`'s chunks only, as the answer shows them."""
    hits = [h for h in rag.search(question, 20, Mode.lexical)
            if h.source.file_path == f"site/{page}"]
    assert hits, page
    found = rag.answer_from(question, hits, k=10, mode=Mode.lexical, style="extractive")
    assert found.shown is not None
    return found.shown["blocks"], found.text


def verbatim(site: Path, block: dict[str, object], text: str) -> list[str]:
    """The block's lines, checked to be its file's lines at its numbers and in the answer."""
    lines = (site / str(block["file_path"])).read_text().split("\n")
    start, end = int(str(block["start_line"])), int(str(block["end_line"]))
    shown = lines[start - 1:end]
    assert f"`{block['file_path']}:{start}-{end}`" in text
    if block["kind"] == "docs":
        assert "\n".join(shown) in text
    else:
        assert all(x.strip() in text for x in shown)
    return shown


# -- chunking -------------------------------------------------------------------------------

def test_section_markers_are_not_headings() -> None:
    text = "# Install\n\n" + _inc("Linux", "gcc") + "\n" + "More words. " * 200
    chunks = chunk_text(text, "markdown", 300)
    check_invariants(text, chunks, 300)
    assert not any("8<" in c.context or any("8<" in n for n in c.names) for c in chunks)
    holding = [c for c in chunks if "Run `make widget`" in text[c.first:c.last]]
    assert holding and holding[0].context == "Install > Compile the widget on Linux"
    lines = text.split("\n")
    assert [lines[i] for i in headings(lines)] == ["# Install", "## Compile the widget on Linux"]


def test_a_start_marker_opens_the_section_below_it() -> None:
    """`[start:x]` names the region after it: its line is the first of that section's chunk,
    not the last of the one before (an `[end:x]` line stays with what it closes)."""
    text = _inc("Linux", "gcc")
    chunks = chunk_text(text, "markdown", 150)
    check_invariants(text, chunks, 150)
    opening = text.index("# --8<-- [start:build-from-source]")
    holding = [c for c in chunks if c.first <= opening < c.last]
    assert holding[0].first == opening
    assert holding[0].context == "Compile the widget on Linux"
    closing = text.index("# --8<-- [end:requirements]")
    assert [c for c in chunks if c.first <= closing < c.last][0].first < closing


MARKER_LINE = st.sampled_from([
    "# --8<-- [start:a]", "# --8<-- [end:a]", "## --8<-- [start:b-c]", "<!-- --8<-- [end:b] -->",
    '--8<-- "x.md:a"', "--8<--", "# Real heading", "text", "", "```", "# " + "-" * 300 + "8<",
])


@PROPERTY
@given(st.lists(MARKER_LINE, max_size=60).map("\n".join), st.integers(50, 2000))
def test_invariants_hold_and_no_marker_is_a_heading(text: str, cap: int) -> None:
    chunks = chunk_text(text, "markdown", cap)
    check_invariants(text, chunks, cap)
    assert not any("[start:" in c.context or "[end:" in c.context for c in chunks)


def test_a_new_chunker_version_recuts_an_existing_index(tmp_path: Path) -> None:
    """An index made before the rule (its chunker version older) is re-cut on the next run."""
    write_corpus(tmp_path / "site", {"docs/a.inc.md": _inc("Linux", "gcc")})
    assert run_cli("index", "site", "--db", "rag.db", "--no-vectors", cwd=tmp_path).returncode == 0
    with RagDB(tmp_path / "rag.db") as db:
        db.conn.execute("UPDATE settings SET value = '5' WHERE key = 'chunker'")
        db.conn.execute("UPDATE chunks SET context = '--8<-- [start:build-from-source]'")
    done = run_cli("index", "site", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with RagDB(tmp_path / "rag.db") as db:
        contexts = {str(c) for (c,) in db.conn.execute("SELECT context FROM chunks")}
        runs = [int(str(r)) for (r,) in db.conn.execute("SELECT full_rebuild FROM index_runs")]
    assert not any("8<" in c for c in contexts) and runs[-1] == 1


# -- answers --------------------------------------------------------------------------------

def test_a_tab_of_includes_shows_the_section_that_matches(rag: RagDB, site: Path) -> None:
    for system, tool in (("macOS", "Xcode"), ("Linux", "gcc")):
        blocks, text = blocks_for(rag, f"How do I build the widget from source on {system}?",
                                  "docs/build.md")
        first = blocks[0]
        assert first["file_path"] == f"site/docs/snippets/{system.lower()}.inc.md"
        assert first["kind"] == "docs" and "included by `site/docs/build.md:" in str(first["rule"])
        shown = verbatim(site, first, text)
        assert shown[0] == f"## Compile the widget on {system}" and shown[-1] == "```"
        assert f"the build uses {tool}" in text and "--8<--" not in text.split("\n\n")[0]
        assert "(Build the widget from source; included by `site/docs/build.md:" in text


def test_a_page_of_headings_and_includes_shows_the_best_include_under_its_heading(
        rag: RagDB, site: Path) -> None:
    blocks, text = blocks_for(rag, "How do I compile the widget with make on macOS?",
                              "docs/gpu.md")
    first = blocks[0]
    assert first["file_path"] == "site/docs/snippets/macos.inc.md"
    assert verbatim(site, first, text)[0] == "## Compile the widget on macOS"
    assert "(Widget on GPUs › From source; included by `site/docs/gpu.md:" in text


def test_an_included_file_asked_directly_shows_no_marker_at_its_edges(
        rag: RagDB, site: Path) -> None:
    """A snippet file read as it is (not through its page): the markers around a section are
    not on the rendered page, so a block neither starts nor ends on one."""
    blocks, text = blocks_for(rag, "Which host does the widget need on Linux?",
                              "docs/snippets/linux.inc.md")
    shown = verbatim(site, blocks[0], text)
    assert "A Linux host with gcc." in shown
    assert "8<" not in shown[0] and "8<" not in shown[-1]


def test_an_include_that_leads_nowhere_keeps_the_page(rag: RagDB, site: Path) -> None:
    for page, question in (("docs/missing.md", "missing section"),
                           ("docs/nowhere.md", "nowhere"), ("docs/hidden.md", "hidden")):
        blocks, text = blocks_for(rag, question, page)
        assert blocks[0]["file_path"] == f"site/{page}", page
        assert "--8<--" in text and blocks[0]["rule"] and "included" not in str(blocks[0]["rule"])
        verbatim(site, blocks[0], text)


def test_a_long_section_is_cut_around_the_line_that_matches(rag: RagDB, site: Path) -> None:
    blocks, text = blocks_for(rag, "frobnicator calibration flag", "docs/long.md")
    first = blocks[0]
    assert first["file_path"] == "site/docs/snippets/long.inc.md"
    assert int(str(first["end_line"])) - int(str(first["start_line"])) + 1 <= 60
    assert "The frobnicator calibration needs the `--calibrate` flag." in verbatim(
        site, first, text)


def test_code_and_whole_files_are_included(rag: RagDB, site: Path) -> None:
    blocks, text = blocks_for(rag, "sampling parameters temperature", "docs/params.md")
    assert blocks[0]["file_path"] == "site/src/params.py" and blocks[0]["kind"] == "code"
    assert (blocks[0]["start_line"], blocks[0]["end_line"]) == (7, 8)
    assert "```python\ntemperature: float = 1.0  # sampling temperature\ntop_p" in text
    blocks, text = blocks_for(rag, "whole file plain", "docs/whole.md")
    assert blocks[0]["file_path"] == "site/docs/snippets/plain.md"
    assert "The plain page is included whole." in verbatim(site, blocks[0], text)


def test_an_included_file_changed_since_indexing_is_not_shown(tmp_path: Path) -> None:
    write_corpus(tmp_path / "site", {k: v for k, v in SITE.items() if "linux" in k
                                     or k == "docs/missing.md"})
    write_corpus(tmp_path / "site", {"docs/build.md": (
        '# Build\n\n--8<-- "docs/snippets/linux.inc.md:build-from-source"\n')})
    assert run_cli("index", "site", "--db", "rag.db", "--no-vectors", cwd=tmp_path).returncode == 0
    (tmp_path / "site/docs/snippets/linux.inc.md").write_text(_inc("Linux", "clang") + "new\n")
    with RagDB(tmp_path / "rag.db", use_cache=False) as rag:
        blocks, text = blocks_for(rag, "build the widget from source on Linux", "docs/build.md")
    assert blocks[0]["file_path"] == "site/docs/build.md" and "clang" not in text


# -- the rules on their own -----------------------------------------------------------------

def test_includes_targets_and_sections() -> None:
    assert includes(['=== "A"', "", '    --8<-- "a.md:x"', "???+ note", "  --8<-- 'b.md'"]) \
        == [("a.md:x", ""), ("b.md", "")]
    assert includes(["--8<--", "a.md", ";b.md", "c.md:1:3", "--8<--"]) \
        == [("a.md", ""), ("c.md:1:3", "")]
    assert includes(["## Setup", "[](){ #x }", '--8<-- "a.md"', "### Build ###", "```py",
                     '--8<-- "b.py:s"', "```"]) == [("a.md", "Setup"), ("b.py:s", "Build")]
    assert includes(['--8<-- "a.md"', "Some prose."]) == []
    assert includes(['--8<-- "a.md"', "    # an indented comment"]) == []
    assert includes([';--8<-- "a.md"']) == [] and includes([]) == []
    paths, rest = target("site/docs/page.md", "docs/x.inc.md:build")
    assert paths == ["site/docs/docs/x.inc.md", "site/docs/x.inc.md", "docs/x.inc.md"]
    assert rest == ":build"
    assert target("a/p.md", "https://example.com/x.md") == ([], "")
    assert target("a/p.md", "/etc/passwd") == ([], "")
    lines = _inc("Linux", "gcc").split("\n")
    assert section(lines, ":requirements") == (1, 3)
    assert section(lines, ":uninstall") == (17, 17)
    assert section(lines, ":absent") is None and section(lines, "") == (0, len(lines) - 1)
    assert section(lines, ":2:3") == (1, 2) and section(lines, ":900:") is None
    assert section(["# --8<-- [start:open]", "runs to the end"], ":open") == (1, 1)


SPEC_TEXT = st.text(st.sampled_from(list('ab:0-9."/ ')), max_size=12)


@PROPERTY
@given(st.lists(st.one_of(MARKER_LINE, st.builds(lambda s: f'--8<-- "{s}"', SPEC_TEXT)),
                max_size=30), SPEC_TEXT)
def test_the_rules_never_fail_and_stay_in_the_file(lines: list[str], spec: str) -> None:
    for found, _title in includes(lines):
        paths, rest = target("site/docs/page.md", found)
        assert all(not p.startswith("/") for p in paths)
        span = section(lines, rest)
        if span is not None:
            assert 0 <= span[0] <= span[1] < len(lines)
    span = section(lines, spec)
    assert span is None or 0 <= span[0] <= span[1] < len(lines)
