"""Any codebase: every language indexed, ignore rules, several roots in one rag.db, filters
inside the SQL, and `ragdb search --json` for programs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragdb import RagDB
from ragdb.db import scalar
from ragdb.errors import RagdbError
from ragdb.retrieve import Filters, Mode
from tests.conftest import run_cli, write_corpus
from tests.polyglot import ABSENT, DESCRIBED, FILES, write_repo


@pytest.fixture
def poly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder holding the polyglot repository at repo/, indexed lexical-only."""
    write_repo(tmp_path / "repo")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _index(db: Path, *roots: str, **kwargs: object) -> RagDB:
    rag = RagDB(db, use_cache=False)
    rag.index(list(roots), vectors=False, **kwargs)  # type: ignore[arg-type]
    return rag


def _paths(rag: RagDB) -> set[str]:
    return {str(r[0]) for r in rag.conn.execute("SELECT path FROM files")}


def test_every_function_is_found_by_its_description(poly: Path) -> None:
    rag = _index(poly / "rag.db", "repo")
    for description, rel in DESCRIBED:
        hits = rag.search(description, k=1, mode=Mode.lexical)
        assert hits and hits[0].file_path == f"repo/{rel}", (description, hits[:1])


def test_languages_are_stored_and_named(poly: Path) -> None:
    rag = _index(poly / "rag.db", "repo")
    langs = dict(rag.conn.execute("SELECT path, language FROM files").fetchall())
    assert langs == {
        "repo/README.md": "markdown", "repo/server/headers.go": "go",
        "repo/server/secret_public.go": "go", "repo/ui/src/debounce.ts": "typescript",
        "repo/checksum/src/lib.rs": "rust", "repo/native/ring.c": "c",
    }
    hit = rag.search("adler32 checksum", k=1, mode=Mode.lexical)[0]
    assert hit.language == "rust"
    assert rag.status()["languages"]["go"] == 2


def test_ignored_generated_vendored_and_hidden_files_are_absent(poly: Path) -> None:
    rag = _index(poly / "rag.db", "repo")
    for word in ABSENT + ["PersonalExcludedNotes"]:
        assert not scalar(rag.conn, "SELECT count(*) FROM chunks WHERE instr(text, :w)",
                          {"w": word}), word
        assert all(word not in h.text for h in rag.search(word, k=5, mode=Mode.lexical))
    run = rag.conn.execute(
        "SELECT files_skipped FROM index_runs ORDER BY id DESC LIMIT 1").fetchall()[0][0]
    # zz_gen.go ("Code generated ... DO NOT EDIT") and the two .gitignore files (the walk's
    # rules); the rest is never walked
    assert run == 3


def test_no_ignore_and_hidden_bring_files_back(poly: Path) -> None:
    rag = _index(poly / "rag.db", "repo", ignore=False, hidden=True)
    paths = _paths(rag)
    assert {"repo/server/secret_token.go", "repo/ui/src/scratch.tmp.ts", "repo/build/out.rs",
            "repo/generated/api.go", "repo/local_notes.go",
            "repo/.github/workflows/ci.yml"} <= paths
    assert "repo/vendor/lib/dep.go" not in paths  # vendored folders stay out
    # no language of its own: indexed as text once the ignore rules let it in
    assert "repo/debug.log" in paths
    # Back to the defaults: the ignored files leave the index again.
    rag.index(["repo"], vectors=False)
    assert "repo/server/secret_token.go" not in _paths(rag)
    assert "repo/server/secret_public.go" in _paths(rag)  # the ! negation


def test_nested_gitignore_applies_below_its_folder_only(poly: Path) -> None:
    (poly / "repo" / "other.tmp.ts").write_text("// TopLevelTmp\nexport const y = 2;\n")
    rag = _index(poly / "rag.db", "repo")
    paths = _paths(rag)
    assert "repo/other.tmp.ts" in paths  # ui/.gitignore does not reach the top folder
    assert "repo/ui/src/scratch.tmp.ts" not in paths


def test_a_subfolder_root_obeys_the_repository_rules(poly: Path) -> None:
    rag = _index(poly / "rag.db", "repo/server")
    assert _paths(rag) == {"repo/server/headers.go", "repo/server/secret_public.go"}


def test_a_root_the_outer_repository_ignores_is_still_indexed(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("data/\n")
    write_repo(tmp_path / "data" / "raw" / "repo")
    monkeypatch.chdir(tmp_path)
    rag = _index(tmp_path / "rag.db", "data/raw")
    assert "data/raw/repo/server/headers.go" in _paths(rag)
    assert "data/raw/repo/server/secret_token.go" not in _paths(rag)


def test_exclude_everything_but_what_include_names(poly: Path) -> None:
    rag = _index(poly / "rag.db", "repo", include=["*.go", "*.log"], exclude=["*"],
                 ignore=False)
    assert {p.rsplit(".", 1)[1] for p in _paths(rag)} == {"go", "log"}
    assert rag.conn.execute(
        "SELECT language FROM files WHERE path = 'repo/debug.log'").fetchall()[0][0] == "text"


def test_filters_are_exact(poly: Path) -> None:
    rag = _index(poly / "rag.db", "repo")
    question = "buffer checksum header debounce greeting polyglot"
    everything = rag.search(question, k=20, mode=Mode.lexical)
    assert len({h.file_path for h in everything}) == 6
    for langs in (["go"], ["rust", "c"], ["markdown"]):
        hits = rag.search(question, k=20, mode=Mode.lexical, filters=Filters.of(None, langs))
        assert hits and {h.language for h in hits} <= set(langs)
        assert len(hits) == sum(1 for h in everything if h.language in langs)
    hits = rag.search(question, k=20, mode=Mode.lexical, filters=Filters.of("server/*", None))
    assert {h.file_path for h in hits} == {"repo/server/headers.go",
                                           "repo/server/secret_public.go"}
    hits = rag.search(question, k=20, mode=Mode.lexical,
                      filters=Filters.of(["*.rs", "*.ts"], ["rust"]))
    assert {h.file_path for h in hits} == {"repo/checksum/src/lib.rs"}
    # k results among the allowed files, not the allowed ones among k results
    top1 = rag.search(question, k=1, mode=Mode.lexical, filters=Filters.of(None, "c"))
    assert [h.file_path for h in top1] == ["repo/native/ring.c"]
    assert rag.search(question, k=5, mode=Mode.lexical,
                      filters=Filters.of("nowhere/*", None)) == []


def test_filters_are_part_of_the_cache_key(poly: Path) -> None:
    rag = RagDB(poly / "rag.db")
    rag.index(["repo"], vectors=False)
    question = "buffer checksum header"
    plain = rag.search(question, k=5, mode=Mode.lexical)
    only_c = rag.search(question, k=5, mode=Mode.lexical, filters=Filters.of(None, "c"))
    again = rag.search(question, k=5, mode=Mode.lexical)
    assert [h.language for h in only_c] == ["c"]
    assert plain == again and len(plain) > 1
    assert int(scalar(rag.conn, "SELECT count(*) FROM query_cache")) == 2


def test_several_roots_in_one_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_repo(tmp_path / "repo")
    write_corpus(tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    rag = _index(tmp_path / "rag.db", "repo")
    rag.index(["docs"], vectors=False)
    roots = {r.path: r for r in rag.roots()}
    assert set(roots) == {"repo", "docs"}
    assert roots["repo"].files == 6 and roots["docs"].files == 4
    assert roots["docs"].chunks == int(scalar(
        rag.conn, "SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
        "WHERE f.path LIKE 'docs/%'"))
    # Re-indexing one root leaves the other untouched, even with files gone from it.
    (tmp_path / "repo" / "native" / "ring.c").unlink()
    stats = rag.index(["repo"], vectors=False).stats
    assert stats.files_removed == 1
    assert {r.path: r.files for r in rag.roots()} == {"repo": 5, "docs": 4}
    # No roots: every recorded one.
    assert sorted(rag.index(vectors=False).roots) == ["docs", "repo"]
    removed = rag.remove_root("repo")
    assert removed == 5
    assert [r.path for r in rag.roots()] == ["docs"]
    assert all(p.startswith("docs/") for p in _paths(rag))
    assert int(scalar(rag.conn, "SELECT count(*) FROM chunks_fts")) == int(
        scalar(rag.conn, "SELECT count(*) FROM chunks"))
    with pytest.raises(RagdbError, match="not an indexed root"):
        rag.remove_root("repo")


def test_cli_roots_filters_and_json(poly: Path) -> None:
    db = str(poly / "rag.db")
    done = run_cli("index", "repo", "--no-vectors", "--db", db, cwd=poly)
    assert done.returncode == 0, done.stderr
    assert "1 generated" in done.stdout
    listed = run_cli("roots", "--db", db, cwd=poly)
    assert listed.returncode == 0 and listed.stdout.startswith("repo  6 files")
    found = run_cli("search", "adler32 checksum byte buffer", "--mode", "lexical", "--json",
                    "--text", "--lang", "rust", "--lang", "c", "--db", db, cwd=poly)
    assert found.returncode == 0, found.stderr
    sources = json.loads(found.stdout)
    assert isinstance(sources, list) and sources[0]["file_path"] == "repo/checksum/src/lib.rs"
    first = sources[0]
    assert {first["language"], first["start_line"], first["end_line"]} == {"rust", 1, 6}
    assert first["text"] == FILES["checksum/src/lib.rs"].strip()
    assert isinstance(first["score"], float)
    assert first["last_character_index"] == len(FILES["checksum/src/lib.rs"].strip())
    assert {s["language"] for s in sources} <= {"rust", "c"}
    narrowed = run_cli("search", "ring buffer", "--mode", "lexical", "--path", "server/*",
                       "--json", "--db", db, cwd=poly)
    assert json.loads(narrowed.stdout) == []
    removed = run_cli("roots", "--remove", "repo", "--db", db, cwd=poly)
    assert removed.returncode == 0 and "6 files" in removed.stdout
    gone = run_cli("roots", "--remove", "repo", "--db", db, cwd=poly)
    assert gone.returncode == 1 and gone.stderr.count("\n") == 1


@pytest.mark.asyncio
async def test_http_search_filters(poly: Path) -> None:
    from ragdb.datasette_plugin.serve import make_datasette

    _index(poly / "rag.db", "repo").close()
    ds = make_datasette(Path("rag.db"))
    await ds.invoke_startup()
    q = "buffer+checksum+header+greeting"
    response = await ds.client.get(f"/-/ragdb/search?q={q}&k=10&lang=rust&lang=c")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["lang"] == ["c", "rust"]
    assert {s["language"] for s in body["sources"]} == {"rust", "c"}
    response = await ds.client.post("/-/ragdb/search", json={
        "q": "buffer checksum header greeting", "k": 10, "path": ["server/*"], "lang": "go"})
    assert {s["file_path"] for s in response.json()["sources"]} == {
        "repo/server/headers.go", "repo/server/secret_public.go"}
    response = await ds.client.post("/-/ragdb/search", json={"q": "ring", "path": [3]})
    assert response.status_code == 400 and "path must be a string or a list of strings" in (
        response.json()["error"])
    response = await ds.client.post("/-/ragdb/index", json={})  # the roots rag.db records
    assert response.status_code == 200 and response.json()["roots"] == ["repo"]


def test_a_reindex_of_every_root_walks_each_as_its_last_run(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    write_repo(tmp_path / "repo")
    write_corpus(tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    rag = _index(tmp_path / "rag.db", "repo", include=["*.go"], exclude=["*"])
    rag.index(["docs"], vectors=False, ignore=False)
    before = _paths(rag)
    assert {p.rsplit(".", 1)[1] for p in before if p.startswith("repo/")} == {"go"}
    assert {r.path: (r.options["include"], r.options["exclude"]) for r in rag.roots()} == {
        "repo": (["*.go"], ["*"]), "docs": ([], [])}
    result = rag.index(vectors=False)
    assert _paths(rag) == before and sorted(result.roots) == ["docs", "repo"]
    assert result.stats.files_unchanged == len(before) and result.stats.files_removed == 0
    done = run_cli("index", "--no-vectors", "--db", str(tmp_path / "rag.db"), cwd=tmp_path)
    assert done.returncode == 0 and "0 removed" in done.stdout, done.stdout + done.stderr
    assert _paths(RagDB(tmp_path / "rag.db")) == before
