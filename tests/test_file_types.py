"""Index what a repository holds: every file the walk reaches is indexed in its language or
counted as skipped with its reason, `--include` adds to the default rule and `--exclude` takes
out of it, parse fallbacks are named, and bad input ends in one clear line with rag.db whole."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from ragdb import RagDB
from ragdb.chunking import chunk_text
from ragdb.errors import RagdbError
from ragdb.generate.style import Style
from ragdb.walking import WalkOptions
from ragdb.retrieve import Mode
from tests.conftest import run_cli

SUMMARY = re.compile(r"(\d+) files: (\d+) indexed, (\d+) unchanged, (\d+) removed, (\d+) skipped")

# A repository of many kinds of file (path: text, or bytes for a binary one).
MIXED: dict[str, str | bytes] = {
    "src/app.py": "def main() -> None:\n    print('hello')\n",
    "docs/intro.mdx": (
        "---\ntitle: Intro\n---\nimport Tabs from '@theme/Tabs';\n"
        "import TabItem from '@theme/TabItem';\n\n# Getting started\n\n<Tabs>\n"
        "<TabItem value=\"pip\">\n\nInstall the quokkaflux package with pip.\n\n</TabItem>\n"
        "</Tabs>\n"),
    "docs/guide.markdown": "# Guide\n\nThe zanzibar scheduler runs every job twice.\n",
    "docs/notes.mkd": "# Notes\n\nRetries back off exponentially.\n",
    "man/tool.1": ".TH TOOL 1\n.SH NAME\ntool \\- prints the marmalade report\n",
    "LICENSE": "MIT License\n\nPermission is hereby granted, free of charge.\n",
    "go.mod": "module example.com/app\n\ngo 1.22\n",
    "Cargo.toml": "[package]\nname = \"app\"\nversion = \"0.1.0\"\n",
    "package.json": "{\"name\": \"app\", \"version\": \"1.0.0\"}\n",
    "bin/run": "#!/usr/bin/env bash\nrun_pipeline() {\n  echo go\n}\n",
    "bin/tool": "#!/usr/bin/python3\nprint('tool')\n",
    "conf/prompt.fish": "function fish_prompt\n  echo '> '\nend\n",
    "scripts/init.lua": "local M = {}\nreturn M\n",
    "Procfile": "web: python -m app\n",
    "yarn.lock": "# yarn lockfile v1\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    "docs/broken.md": b"# Broken\n\x00\x01\x02 not text at all\n",
    ".gitignore": "*.log\n",
    ".env": "API_TOKEN=hunter2\n",
    ".env.example": "API_TOKEN=\n",
}
SKIPPED = 5  # docs/broken.md and logo.png (binary), .gitignore, yarn.lock, .env


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def _counts(stdout: str) -> tuple[int, ...]:
    m = SUMMARY.search(stdout)
    assert m, stdout
    return tuple(int(g) for g in m.groups())


def _adds_up(stdout: str) -> None:
    seen, indexed, unchanged, _removed, skipped = _counts(stdout)
    assert seen == indexed + unchanged + skipped, stdout
    reasons = re.search(r"skipped \(([^)]*)\)", stdout)
    if reasons:
        assert sum(int(part.split()[0]) for part in reasons.group(1).split(", ")) == skipped


def _rows(db: Path) -> list[tuple[str, str, int]]:
    """Every file row with its hash and chunk count, read with the stock sqlite3 module."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT f.path, f.sha256, count(c.id) FROM files f LEFT JOIN chunks c "
            "ON c.file_id = f.id GROUP BY f.id ORDER BY f.path").fetchall()


def _one_line_error(result: subprocess.CompletedProcess[str], pattern: str) -> None:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0 and len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("ragdb: ") and re.search(pattern, lines[0]), lines[0]


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    _write(tmp_path / "repo", MIXED)
    return tmp_path


# --- every file, by outcome -----------------------------------------------------------------

def test_every_file_the_walk_sees_is_counted_by_outcome(mixed: Path) -> None:
    done = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", cwd=mixed)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    seen, indexed, unchanged, removed, skipped = _counts(done.stdout)
    assert (seen, indexed, unchanged, removed) == (len(MIXED), len(MIXED) - SKIPPED, 0, 0)
    assert "5 skipped (2 binary, 1 ignore rules, 1 lockfile, 1 may hold secrets)" in done.stdout
    _adds_up(done.stdout)
    # Indexed files are counted by language in the summary.
    assert ("by language: text 4, markdown 3, python 2, fish 1, gomod 1, json 1, lua 1, "
            "shell 1, toml 1;") in done.stdout
    # A binary file with a text suffix is named; a .png (known by name) is only counted.
    assert "ragdb: skipped repo/docs/broken.md: binary" in done.stderr
    assert "logo.png" not in done.stderr and "hunter2" not in (mixed / "rag.db").read_text(
        errors="replace")
    langs = dict(sqlite3.connect(mixed / "rag.db").execute(
        "SELECT path, language FROM files").fetchall())
    assert langs == {
        "repo/src/app.py": "python", "repo/docs/intro.mdx": "markdown",
        "repo/docs/guide.markdown": "markdown", "repo/docs/notes.mkd": "markdown",
        "repo/man/tool.1": "text", "repo/LICENSE": "text", "repo/go.mod": "gomod",
        "repo/Cargo.toml": "toml", "repo/package.json": "json", "repo/bin/run": "shell",
        "repo/bin/tool": "python", "repo/conf/prompt.fish": "fish",
        "repo/scripts/init.lua": "lua", "repo/Procfile": "text", "repo/.env.example": "text",
    }
    rag = RagDB(mixed / "rag.db")
    for question, path in (("install quokkaflux", "repo/docs/intro.mdx"),
                           ("zanzibar scheduler", "repo/docs/guide.markdown"),
                           ("marmalade report", "repo/man/tool.1"),
                           ("run_pipeline", "repo/bin/run")):
        assert rag.search(question, k=1, mode=Mode.lexical)[0].file_path == path
    # The answer shows a script known by its #! line as code, not prose (its language as
    # indexed: the name does not say it).
    for question, kind, language in (("run_pipeline", "code", "shell"),
                                     ("marmalade report", "docs", "text")):
        shown = rag.answer(question, k=1, mode=Mode.lexical, style=Style.extractive).shown
        assert shown is not None
        assert (shown["blocks"][0]["kind"], shown["blocks"][0]["language"]) == (kind, language)
    again = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", cwd=mixed)
    assert _counts(again.stdout) == (len(MIXED), 0, len(MIXED) - SKIPPED, 0, SKIPPED)
    assert "by language: text 4, markdown 3, python 2" in again.stdout  # unchanged count too


def test_mdx_import_export_and_jsx_are_not_headings_or_prose() -> None:
    text = ("import Tabs from '@theme/Tabs'\n---\n\nexport const snippet = `\n# not a heading\n"
            "`\n\n# Install\n\n<Tabs>\n<TabItem\n  value=\"pip\"\n>\n\n"
            "Run pip install to get the package.\n\n</TabItem>\n</Tabs>\n")
    as_mdx = chunk_text(text, "markdown", 40, mdx=True)
    assert {c.context for c in as_mdx} == {"", "Install"}
    assert "".join(text[c.first:c.last] for c in as_mdx).count("import Tabs") == 1  # kept
    as_md = chunk_text(text, "markdown", 40)
    assert "not a heading" in {c.context for c in as_md}  # what plain Markdown would read


def test_asciidoc_org_and_rdoc_docs_are_indexed_as_prose_by_their_headings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    filler = "".join(f"Sentence {i} of the overview says one more general thing.\n"
                     for i in range(25))  # each section a chunk of its own
    (repo / "docs" / "index.adoc").write_text(
        f"= Operator Guide\n\n{filler}\n== Backups\n\n"
        f"Snapshots of the quokka store are written every night.\n{filler}\n[source,shell]\n"
        "----\n== not a heading\n----\n")
    (repo / "notes.org").write_text(
        f"* Releases\n{filler}** Tagging\nTag the zanzibar branch first.\n{filler}")
    (repo / "README.rdoc").write_text(
        f"= Widget\n\n{filler}\n== Colours\n\nMarmalade is the default.\n{filler}")
    (repo / "lib.rb").write_text("def backups\n  :nightly\nend\n")
    monkeypatch.chdir(tmp_path)
    rag = RagDB(tmp_path / "rag.db", use_cache=False)
    result = rag.index(["repo"], vectors=False)
    assert result.stats.languages == {"asciidoc": 1, "org": 1, "rdoc": 1, "ruby": 1}
    contexts = dict(sqlite3.connect(tmp_path / "rag.db").execute(
        "SELECT c.id, c.context FROM chunks c"))
    for question, path, kind, context in (
            ("quokka snapshots", "repo/docs/index.adoc", "asciidoc", "Operator Guide > Backups"),
            ("tag zanzibar", "repo/notes.org", "org", "Releases > Tagging"),
            ("marmalade colour", "repo/README.rdoc", "rdoc", "Widget > Colours")):
        hit = rag.search(question, k=1, mode=Mode.lexical)[0]
        assert (hit.file_path, hit.language) == (path, kind), question
        assert contexts[hit.chunk_id] == context
    assert not any("not a heading" in str(c) for c in contexts.values())
    # The answer shows them as docs under their headings, not as code blocks.
    shown = rag.answer("quokka snapshots", k=1, mode=Mode.lexical, style=Style.extractive).shown
    assert shown is not None and shown["blocks"][0]["kind"] == "docs"
    assert shown["blocks"][0]["language"] == "asciidoc"


# --- --include and --exclude ----------------------------------------------------------------

def test_include_adds_to_the_rule_and_exclude_takes_out(mixed: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(mixed)
    rag = RagDB(mixed / "rag.db", use_cache=False)
    result = rag.index(["repo"], vectors=False, include=["yarn.lock"],
                       exclude=["*.mdx", "docs/", "scripts/*.lua"])
    paths = {str(p) for (p,) in rag.conn.execute("SELECT path FROM files")}
    assert "repo/yarn.lock" in paths  # a lockfile, indexed because --include names it
    assert not {p for p in paths if p.startswith(("repo/docs/", "repo/scripts/"))}
    assert "repo/src/app.py" in paths and "repo/LICENSE" in paths
    stats = result.stats
    assert stats.skipped["excluded"] == 5  # intro.mdx, guide, notes, broken.md, init.lua
    assert stats.files_seen == stats.files_indexed + stats.files_skipped
    assert {r.path: (r.options["include"], r.options["exclude"]) for r in rag.roots()} == {
        "repo": (["yarn.lock"], ["*.mdx", "docs/", "scripts/*.lua"])}
    # A run of the recorded roots walks them with the same globs: nothing changes.
    again = rag.index(vectors=False)
    assert again.stats.files_unchanged == stats.files_indexed and not again.stats.files_removed


def test_a_root_recorded_before_exclude_existed_keeps_its_file_set(
        mixed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--include` used to replace the rule: a root recorded then with `{"include": ["*.py"]}`
    is re-walked as `--exclude '*' --include '*.py'`, not as everything plus Python."""
    monkeypatch.chdir(mixed)
    rag = RagDB(mixed / "rag.db", use_cache=False)
    rag.index(["repo"], vectors=False, include=["*.py"], exclude=["*"])
    rag.conn.execute("UPDATE roots SET options = :o", {"o": '{"include": ["*.py"]}'})
    result = rag.index(vectors=False)
    assert [str(p) for (p,) in rag.conn.execute("SELECT path FROM files")] == ["repo/src/app.py"]
    assert result.stats.files_unchanged == 1 and not result.stats.files_removed
    # `--include '*'` was every file already; an explicit exclude is taken as recorded.
    assert WalkOptions.from_json('{"include": ["*"]}') == WalkOptions(include=("*",))
    assert WalkOptions.from_json('{"include": ["*.py"], "exclude": []}') == WalkOptions(
        include=("*.py",))


def test_an_exclude_that_excludes_everything_is_refused(mixed: Path) -> None:
    first = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", cwd=mixed)
    assert first.returncode == 0, first.stderr
    before = _rows(mixed / "rag.db")
    refused = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", "--exclude", "*",
                      cwd=mixed)
    _one_line_error(refused, r"--exclude '\*' leaves no file to index under repo "
                             r"\(\d+ excluded\); nothing was changed")
    assert _rows(mixed / "rag.db") == before
    # Excluding everything but what --include names is fine.
    only = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", "--exclude", "*",
                   "--include", "*.py", cwd=mixed)
    assert only.returncode == 0, only.stderr
    _adds_up(only.stdout)
    assert [row[0] for row in _rows(mixed / "rag.db")] == ["repo/src/app.py"]


def test_a_glob_of_10000_characters_is_refused(mixed: Path) -> None:
    for option in ("--include", "--exclude"):
        refused = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", option,
                          "*" + "a" * 9999, cwd=mixed)
        _one_line_error(refused, rf"{option} glob is 10000 characters long; at most 1000")
    assert not (mixed / "rag.db").exists()  # refused before anything was created
    first = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", cwd=mixed)
    before = _rows(mixed / "rag.db")
    refused = run_cli("index", "repo", "--db", "rag.db", "--exclude", "x" * 10_000, cwd=mixed)
    assert first.returncode == 0 and refused.returncode == 1
    assert _rows(mixed / "rag.db") == before
    with pytest.raises(RagdbError, match="empty string"):
        WalkOptions(include=("",))


def test_include_and_exclude_naming_the_same_files(mixed: Path) -> None:
    first = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", cwd=mixed)
    before = _rows(mixed / "rag.db")
    same = run_cli("index", "repo", "--db", "rag.db", "--include", "*.md*", "--exclude", "*.md*",
                   cwd=mixed)
    _one_line_error(same, r"--include and --exclude both name '\*\.md\*'")
    assert first.returncode == 0 and _rows(mixed / "rag.db") == before
    # Different globs naming some of the same files: the --include wins for those.
    overlap = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", "--exclude", "docs/*",
                      "--include", "guide.*", cwd=mixed)
    assert overlap.returncode == 0, overlap.stderr
    _adds_up(overlap.stdout)
    docs = [row[0] for row in _rows(mixed / "rag.db") if row[0].startswith("repo/docs/")]
    assert docs == ["repo/docs/guide.markdown"]
    assert "3 excluded" in overlap.stdout and "2 removed" in overlap.stdout


# --- bad files ------------------------------------------------------------------------------

def test_a_binary_file_with_a_text_suffix_is_skipped_and_named(tmp_path: Path) -> None:
    _write(tmp_path / "repo", {"a.md": "# A\n\nText.\n", "b.ts": b"\x00\x01\x02\x03" * 500,
                               "c.mdx": b"\xff\xfe\x00h\x00i"})
    done = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert _counts(done.stdout) == (3, 1, 0, 0, 2)
    assert "ragdb: skipped repo/b.ts: binary" in done.stderr
    # UTF-16 with its byte order mark: text, but not UTF-8 (second first-hour walkthrough).
    assert "ragdb: skipped repo/c.mdx: not UTF-8" in done.stderr


def test_a_20_mb_mdx_is_skipped_without_reading_it(tmp_path: Path) -> None:
    repo = _write(tmp_path / "repo", {"small.mdx": "# Small\n\nA page.\n"})
    with open(repo / "huge.mdx", "w", encoding="utf-8") as out:
        out.write("# Huge\n\n")
        line = "import X from 'x'; <Tag prop={1} /> some words of prose here.\n"
        out.write(line * (20 * 1024 * 1024 // len(line)))
    done = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert _counts(done.stdout) == (2, 1, 0, 0, 1)
    assert "ragdb: skipped repo/huge.mdx: too large" in done.stderr


def test_one_line_of_5_mb_is_skipped_and_a_long_line_is_not_read_as_text(tmp_path: Path) -> None:
    repo = _write(tmp_path / "repo", {"ok.txt": "A normal note.\n"})
    (repo / "one_line.txt").write_text("word " * (1024 * 1024), encoding="utf-8")  # 5 MiB
    (repo / "long_line.md").write_text("# T\n\n" + "tok " * 250_000 + "\n", encoding="utf-8")
    done = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert _counts(done.stdout) == (3, 1, 0, 0, 2)
    assert "ragdb: skipped repo/one_line.txt: too large" in done.stderr
    assert "ragdb: skipped repo/long_line.md: minified" in done.stderr  # a 1 MB line


def test_broken_front_matter_is_indexed_as_markdown(tmp_path: Path) -> None:
    _write(tmp_path / "repo", {
        "unclosed.md": "---\ntitle: Unclosed\n# a comment\n\nThe pelican gateway retries.\n",
        "unclosed.mdx": "---\ntitle: [unbalanced\nimport X from 'x'\n\n# Usage\n\n"
                        "The heron cache expires hourly.\n",
        "only_fence.md": "---\n",
    })
    done = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert _counts(done.stdout) == (3, 3, 0, 0, 0)
    rag = RagDB(tmp_path / "rag.db")
    assert rag.search("pelican gateway", k=1, mode=Mode.lexical)[0].file_path == "repo/unclosed.md"
    hit = rag.search("heron cache", k=1, mode=Mode.lexical)[0]
    assert hit.file_path == "repo/unclosed.mdx" and "heron" in hit.text


# --- parse fallbacks ------------------------------------------------------------------------

BROKEN_C = "int f( {{{ ))) ;;; }}} [[[\n" * 200


def test_parse_fallbacks_are_named(tmp_path: Path) -> None:
    _write(tmp_path / "repo", {"ok.c": "int ok(void) { return 0; }\n", "broken.c": BROKEN_C})
    done = run_cli("index", "repo", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 parse fallbacks (cut as text)" in done.stdout
    assert ("ragdb: parse fallback repo/broken.c: its syntax tree was mostly errors, cut as text"
            in done.stderr.splitlines())
    assert "ok.c" not in done.stderr


@pytest.mark.asyncio
async def test_http_index_takes_exclude_and_names_fallbacks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragdb.datasette_plugin.serve import make_datasette

    _write(tmp_path / "repo", {"ok.c": "int ok(void) { return 0; }\n", "broken.c": BROKEN_C,
                               "notes.md": "# Notes\n", "drafts/a.md": "# Draft\n"})
    monkeypatch.chdir(tmp_path)
    RagDB(tmp_path / "rag.db").index(["repo"], vectors=False)
    ds = make_datasette(Path("rag.db"), corpus_roots=[Path("repo")],
                        extra={"vectors": False, "exclude": ["drafts/*"]})
    await ds.invoke_startup()
    response = await ds.client.post("/-/ragdb/index", json={})
    assert response.status_code == 200, response.text
    stats = response.json()["stats"]
    assert stats["skipped"] == {"excluded": 1} and stats["files_removed"] == 1
    assert stats["fallback_paths"] == [] and stats["languages"] == {"c": 2, "markdown": 1}
    (tmp_path / "repo" / "broken.c").write_text(BROKEN_C + "x\n")
    response = await ds.client.post("/-/ragdb/index", json={})
    assert response.json()["stats"]["fallback_paths"] == ["repo/broken.c"]
    with pytest.raises(RagdbError, match="at most 1000"):
        make_datasette(Path("rag.db"), extra={"exclude": ["x" * 10_000]})
