"""Defects the first-hour walkthrough left open, each on real things: the CLI as a subprocess,
a real rag.db (SQLite, sqlite-vec), the watcher on a thread."""

from __future__ import annotations

import base64
import json
import os
import queue
import threading
import time
from pathlib import Path

import pytest

from ragdb import RagDB
from ragdb.database import IndexResult
from ragdb.retrieve import Filters
from tests.conftest import index_rows, run_cli, write_corpus

# A key body no real key is: base64 of repeated bytes, 64 characters a line, as PEM writes it.
_BODY = base64.b64encode(b"zqkeymaterial" * 30).decode()
_LINES = "\n".join(_BODY[i:i + 64] for i in range(0, len(_BODY), 64))
MARK = _BODY[:40]


def _pem(kind: str) -> str:
    return f"-----BEGIN {kind}-----\n{_LINES}\n-----END {kind}-----\n"


SERVICE_ACCOUNT = json.dumps({
    "type": "service_account", "project_id": "demo-1234", "private_key_id": "abc123",
    "private_key": _pem("PRIVATE KEY"), "client_email": "bot@demo-1234.iam.gserviceaccount.com",
}, indent=2)

#: Files with no telling name that hold a key: each a secret by its content.
KEY_FILES = {
    "deploy_key": _pem("OPENSSH PRIVATE KEY"),
    "key.txt": _pem("OPENSSH PRIVATE KEY"),  # id_ed25519, renamed
    "certs/server": _pem("RSA PRIVATE KEY"),  # a PEM key without .pem
    "ec_key": _pem("EC PRIVATE KEY"),
    "old/dsa": _pem("DSA PRIVATE KEY"),
    "enc.conf": ("-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + _LINES
                 + "\n-----END ENCRYPTED PRIVATE KEY-----\n"),
    "legacy.txt": ("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: "
                   "AES-128-CBC,0123456789ABCDEF\n\n" + _LINES
                   + "\n-----END RSA PRIVATE KEY-----\n"),
    "signing.asc": ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n" + _LINES
                    + "\n-----END PGP PRIVATE KEY BLOCK-----\n"),
    "deploy/project-1234.json": SERVICE_ACCOUNT,
    "config/app.yaml": "tls:\n  key: |\n    " + _pem("PRIVATE KEY").replace("\n", "\n    "),
}

#: Files that merely carry a key as a sample (a library about cryptography) or a placeholder:
#: kept.
KEPT_FILES = {
    "src/fixtures.py": f'RSA_KEY = b"""{_pem("RSA PRIVATE KEY")}"""\n\n\ndef load():\n'
                       "    return RSA_KEY\n",
    "docs/serialization.rst": "Serialization\n=============\n\n.. code-block:: none\n\n    "
                              + _pem("PRIVATE KEY").replace("\n", "\n    "),
    "docs/keys.md": "# Keys\n\n```\n" + _pem("EC PRIVATE KEY") + "```\n",
    "placeholder.json": json.dumps({"private_key": "-----BEGIN PRIVATE KEY-----\n...\n"}),
    "README.md": "# Deploy\n\nThe deploy key lives outside the repository.\n",
}


def _indexed(db: Path) -> list[str]:
    return [path for path, _sha, _size in index_rows(db)["files"]]


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_a_key_file_known_only_by_its_content_is_never_indexed(tmp_path: Path) -> None:
    """`deploy_key`, `key.txt` (an id_ed25519 renamed), a service account's JSON and a PEM key
    without .pem were indexed as text or JSON (and served by every door): a data, config or
    unknown file holding a private key block is skipped as a secret and named; code and docs
    that carry one as a sample are kept."""
    _write(tmp_path, {**KEY_FILES, **KEPT_FILES})
    done = run_cli("index", ".", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{len(KEY_FILES)} may hold secrets" in done.stdout, done.stdout
    for rel in KEY_FILES:
        assert f"skipped {rel}: may hold secrets" in done.stderr, done.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    assert _indexed(db) == sorted(KEPT_FILES)
    assert run_cli("index", ".", "--no-vectors", "--verbose", cwd=tmp_path).stderr.count(
        "may hold secrets") == len(KEY_FILES)
    # the kept samples hold MARK; the key files' rows are not there
    rag = RagDB(db)
    leaked = [row[0] for row in rag.conn.execute(
        "SELECT f.path FROM chunks c JOIN files f ON f.id = c.file_id WHERE c.text LIKE :m",
        {"m": f"%{MARK}%"})]
    rag.close()
    assert set(leaked) <= set(KEPT_FILES), leaked


def test_a_key_file_reached_as_a_root_a_link_or_indexed_before_is_skipped(
        tmp_path: Path) -> None:
    """Every way a file reaches the index: a file given as a root, a symlink with a harmless
    name (notes.md -> deploy_key), and a key indexed by an earlier ragdb (its rows go)."""
    secret = {"deploy_key": _pem("OPENSSH PRIVATE KEY")}
    _write(tmp_path, {**secret, "README.md": "# Project\n\nHow to run it.\n"})
    (tmp_path / "notes.md").symlink_to("deploy_key")
    (tmp_path / "creds.txt").symlink_to("deploy_key")
    done = run_cli("index", "README.md", "deploy_key", "notes.md", "creds.txt", "--no-vectors",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "3 may hold secrets" in done.stdout, done.stdout
    db = tmp_path / "data" / "processed" / "rag.db"
    assert _indexed(db) == ["README.md"]
    assert MARK.encode() not in db.read_bytes()
    # A key indexed before the rule (an --include named it, then no longer does): its rows go.
    with_it = run_cli("index", ".", "--include", "deploy_key", "--no-vectors", cwd=tmp_path)
    assert with_it.returncode == 0, with_it.stderr
    assert "deploy_key" in _indexed(db)
    again = run_cli("index", ".", "--no-vectors", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "deploy_key" not in _indexed(db) and "notes.md" not in _indexed(db)


def test_a_key_file_written_while_watched_is_not_indexed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ragdb index --watch`: a key saved under a watched root is skipped as a walk skips it."""
    from ragdb.watch import watch_roots

    _write(tmp_path / "repo", {"README.md": "# Project\n\nHow to run it.\n"})
    monkeypatch.chdir(tmp_path)
    rag = RagDB(tmp_path / "rag.db")
    rag.index(["repo"], vectors=False)
    stop = threading.Event()
    reports: "queue.Queue[str]" = queue.Queue()

    def report(result: IndexResult) -> str:
        reports.put(str(result.stats))
        return ""

    watcher = threading.Thread(target=watch_roots, args=(
        RagDB(tmp_path / "rag.db"), [Path("repo")], {"vectors": False}, report),
        kwargs={"stop": stop, "debounce_ms": 100}, daemon=True)
    watcher.start()
    try:
        time.sleep(1.0)
        _write(tmp_path / "repo", {"deploy_key": _pem("OPENSSH PRIVATE KEY"),
                                   "notes.md": "# Notes\n\nWatched.\n"})
        deadline = time.monotonic() + 30
        while True:
            stats = reports.get(timeout=30)
            if "notes.md" in {str(r[0]).rsplit("/", 1)[-1] for r in rag.conn.execute(
                    "SELECT path FROM files")} or time.monotonic() > deadline:
                break
    finally:
        stop.set()
        watcher.join(timeout=20)
    paths = sorted(str(r[0]) for r in rag.conn.execute("SELECT path FROM files"))
    rag.close()
    assert paths == ["repo/README.md", "repo/notes.md"], (paths, stats)
    assert os.path.exists(tmp_path / "repo" / "deploy_key")
    assert MARK.encode() not in (tmp_path / "rag.db").read_bytes()


@pytest.mark.asyncio
async def test_absolute_path_and_exclude_globs_read_as_stored_paths_at_every_door(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A coding agent passes files by absolute path (`--path /home/me/proj/docs/*`, over MCP
    too): no stored path starts with `/`, so such a filter found nothing ('no sources found')
    and such an exclude left everything in. Mapped, under the folder the index was built from,
    as `ragdb outline` maps a file's path; a glob outside it stays as given."""
    from ragdb.datasette_plugin.serve import make_datasette
    from tests.test_mcp import _session_run

    write_corpus(tmp_path)
    assert run_cli("index", ".", "--no-vectors", "--db", "rag.db", cwd=tmp_path).returncode == 0
    top = os.path.realpath(tmp_path)
    monkeypatch.chdir(tmp_path)
    rag = RagDB("rag.db")

    def cli(*filters: str) -> list[str]:
        done = run_cli("search", "vLLM adapters server scheduler", "--mode", "lexical", "--k",
                       "20", "--json", "--db", "rag.db", *filters, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return sorted({hit["file_path"] for hit in json.loads(done.stdout)})

    def found(*filters: str) -> list[str]:
        """What `cli(*filters)` lists, in this process: the command hands its --path and
        --exclude to Filters.of and RagDB.search as given (its own runs are checked below
        on an absolute path and exclude, not once a spelling)."""
        given: dict[str, list[str]] = {"--path": [], "--exclude": []}
        for option, value in zip(filters[::2], filters[1::2]):
            given[option].append(value)
        hits = rag.search("vLLM adapters server scheduler", 20, "lexical",
                          Filters.of(given["--path"], None, given["--exclude"]))
        return sorted({hit.file_path for hit in hits})

    docs = found("--path", "docs/*")
    assert docs and all(path.startswith("docs/") for path in docs)
    assert cli("--path", f"{top}/docs/*") == docs  # the CLI door
    assert cli("--exclude", f"{top}/docs/") == found("--exclude", "docs/")
    for spelled in (f"{top}/docs/*", f"{top}/docs/", f"{top}/docs", f"{tmp_path}/docs/*"):
        assert found("--path", spelled) == docs, spelled
        assert found("--exclude", spelled) == found("--exclude", "docs/"), spelled
    assert found("--path", f"{top}/*.txt") == found("--path", "*.txt")
    assert found("--path", "/elsewhere/docs/*") == []  # outside the project: as given
    rag.close()
    # HTTP, through the server's worker
    ds = make_datasette(Path("rag.db"))
    await ds.invoke_startup()
    response = await ds.client.post("/-/ragdb/search", json={
        "q": "vLLM adapters server scheduler", "k": 20, "mode": "lexical",
        "path": [f"{top}/docs/*"]})
    assert response.status_code == 200, response.text
    assert sorted({s["file_path"] for s in response.json()["sources"]}) == docs
    # MCP, as an agent calls it
    _tools, searched = await _session_run(tmp_path, [("search", {
        "query": "vLLM adapters server scheduler", "k": 20, "mode": "lexical",
        "exclude": f"{top}/docs/"})])
    assert not searched.is_error, searched.content
    paths = {s["file_path"] for s in searched.structured_content["sources"]}
    assert paths and not any(path.startswith("docs/") for path in paths), paths


def test_help_says_what_each_argument_is(tmp_path: Path) -> None:
    """`ragdb index --help` listed `[PATHS]...` with no text (Typer sets an argument's help,
    click 8.2+ then sets it back to None): every argument's help is shown, once."""
    shown = run_cli("index", "--help", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "Files or folders to index" in shown.stdout, shown.stdout
    assert shown.stdout.count("[PATHS]...  ") == 1, shown.stdout
    for command, text in (("search", "What to look for."), ("outline", "A file (its stored")):
        said = run_cli(command, "--help", cwd=tmp_path).stdout
        assert text in said and "Positional arguments" not in said, said


@pytest.mark.asyncio
async def test_a_file_name_with_control_characters_is_shown_escaped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file named `notes<newline>fake.md` (or with a terminal escape) showed raw in an
    answer's block heading (the heading broke over two lines, a fake second path on the
    second) and on the Datasette pages: shown escaped (`notes\\nfake.md`), stored as it is."""
    name, evil = "notes\nfake.md", "gnu\x1b[31m.md"
    (tmp_path / name).write_text("# Zebra tariffs\n\nThe zebra tariff applies on Mondays.\n")
    (tmp_path / evil).write_text("# Gnu tariffs\n\nThe gnu tariff applies on Fridays.\n")
    assert run_cli("index", ".", "--no-vectors", "--db", "rag.db", cwd=tmp_path).returncode == 0
    rag = RagDB(tmp_path / "rag.db")
    stored = sorted(str(row[0]) for row in rag.conn.execute("SELECT path FROM files"))
    rag.close()
    assert stored == sorted([name, evil])  # never changed
    for question, raw, shown in (("zebra tariff", name, "notes\\nfake.md"),
                                 ("gnu tariff", evil, "gnu\\u001b[31m.md")):
        for command in ("answer", "search"):
            done = run_cli(command, question, "--mode", "lexical", "--k", "1", "--db",
                           "rag.db", cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            assert raw not in done.stdout and f"{shown}:" in done.stdout, done.stdout
            assert "\x1b" not in done.stdout
        answered = run_cli("answer", question, "--mode", "lexical", "--k", "1", "--json",
                           "--db", "rag.db", cwd=tmp_path)
        body = json.loads(answered.stdout)
        assert body["sources"][0]["file_path"] == raw  # the API carries the stored path
        assert f"`{shown}:" in body["answer"]
    from ragdb.datasette_plugin.serve import make_datasette

    monkeypatch.chdir(tmp_path)
    ds = make_datasette(Path("rag.db"))
    await ds.invoke_startup()
    page = (await ds.client.get("/rag/files")).text
    assert "notes\\nfake.md" in page and "notes\nfake.md" not in page
    assert "\x1b" not in page


def _long_page(sections: int, changed: int = -1) -> str:
    """A long Markdown page: one section a chunk, each its own words; `changed` has one line
    edited."""
    parts = ["# Handbook\n"]
    for n in range(sections):
        line = f"Section {n} says the quota for team {n} is {n * 7} units a week."
        if n == changed:
            line = f"Section {n} says the quota for team {n} is now {n * 9} units a week."
        parts.append(f"## Team {n}\n\n{line}\n\nAsk the lead of team {n} before raising it.\n")
    return "\n".join(parts)


def _vectors_by_text(rag: RagDB) -> dict[tuple[str, int], bytes]:
    return {(str(text), int(vid) % 1000): bytes(blob) for text, vid, blob in rag.conn.execute(
        "SELECT c.text, v.vector_id, v.embedding FROM chunk_vectors AS v "
        "JOIN chunks AS c ON c.id = v.chunk_id")}


def test_editing_one_line_of_a_docs_page_embeds_only_the_chunks_it_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Editing one line of a long docs page re-embedded every chunk of it: the chunks that are
    the same (same text, context and file, same embedder) keep their vectors, copied in the
    run's transaction, and only the changed one is embedded; every chunk has its vectors."""
    monkeypatch.chdir(tmp_path)
    page = tmp_path / "handbook.md"
    page.write_text(_long_page(150))
    rag = RagDB(tmp_path / "rag.db")
    first = rag.index(["handbook.md"])
    assert first.vectors is not None and first.vectors.embedded >= 10
    chunks = first.stats.chunks_total
    before = _vectors_by_text(rag)
    page.write_text(_long_page(150, changed=17))
    second = rag.index(["handbook.md"])
    assert second.vectors is not None
    assert second.stats.vectors_reused >= chunks - 2, (second.stats, chunks)
    assert 1 <= second.vectors.embedded <= 2, second.vectors
    after = _vectors_by_text(rag)
    assert rag.dense_coverage() == 1.0
    kept = [key for key in after if key in before]
    assert len({text for text, _window in after.keys() - set(kept)}) <= 2
    assert all(after[key] == before[key] for key in kept)
    hits = rag.search("What is the quota for team 17 now?", k=3, mode="dense")
    assert any("team 17 is now" in hit.text for hit in hits), hits
    # the vectors equal a fresh index's of the edited page, chunk for chunk (within int8
    # rounding: a batch of other texts pads the model's input differently)
    fresh = RagDB(tmp_path / "fresh.db")
    fresh.index(["handbook.md"])
    again = _vectors_by_text(fresh)
    assert again.keys() == after.keys()
    for key, blob in after.items():
        assert max(abs(a - b) for a, b in zip(_signed(blob), _signed(again[key]))) <= 2, key
    fresh.close()
    rag.close()


def _signed(blob: bytes) -> list[int]:
    return [b - 256 if b > 127 else b for b in blob]
