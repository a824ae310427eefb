"""What a new user's first hour with ragdb ran into, each on real things: the CLI as a
subprocess, a real rag.db, a real server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from ragdb import RagDB
from ragdb.retrieve import Filters
from tests.conftest import (
    REPO, free_port, index_rows, one_line_error, run_cli, wait_until_serving, write_corpus,
)


def test_index_without_paths_in_a_new_project_says_what_to_index(tmp_path: Path) -> None:
    """`ragdb index` with no folder, no recorded root and no data/raw (the course layout's
    default) named data/raw as if the user had asked for it."""
    line = one_line_error(run_cli("index", cwd=tmp_path))
    assert "nothing to index" in line and "`ragdb index .`" in line, line
    assert not (tmp_path / "data").exists()


STOP_BEFORE_FIRST_BATCH = """
import os, signal, sys
from ragdb import RagDB
from ragdb.retrieve import Filters

def on_embedded(done: int, total: int) -> None:
    os.kill(os.getpid(), signal.SIGKILL)  # the embedder is recorded, no vector is yet

RagDB(sys.argv[1]).index(["data/raw"], on_embedded=on_embedded)
"""


def test_a_run_stopped_before_its_first_vector_batch_is_said_by_search(tmp_path: Path) -> None:
    """Ctrl-C while the embedder starts: the lexical index is committed and no vector is.
    Hybrid search was then BM25 alone without a word; it says the dense leg is empty."""
    write_corpus(tmp_path / "data" / "raw")
    db = tmp_path / "rag.db"
    proc = subprocess.run(
        [sys.executable, "-c", STOP_BEFORE_FIRST_BATCH, str(db)], cwd=tmp_path,
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "RAGDB_MODELS_DIR": str(REPO / "data" / "models")})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    rag = RagDB(db)
    assert rag.dense_coverage() == 0.0
    rag.close()
    said = run_cli("search", "LoRA adapters", "--json", "--db", str(db), cwd=tmp_path)
    assert said.returncode == 0, said.stderr
    assert json.loads(said.stdout)[0]["file_path"] == "data/raw/docs/features/lora.md"
    assert "the dense leg covers 0%" in said.stderr and "`ragdb index`" in said.stderr
    lexical = run_cli("search", "LoRA adapters", "--mode", "lexical", "--db", str(db),
                      cwd=tmp_path)
    assert lexical.returncode == 0 and "dense leg" not in lexical.stderr
    again = run_cli("index", "data/raw", "--db", str(db), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    rag = RagDB(db)
    assert rag.dense_coverage() == 1.0
    rag.close()


def test_a_lexical_only_index_has_no_dense_coverage(tmp_path: Path) -> None:
    write_corpus(tmp_path / "data" / "raw")
    done = run_cli("index", "data/raw", "--no-vectors", "--db", "rag.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rag = RagDB(tmp_path / "rag.db")
    assert rag.dense_coverage() is None
    rag.close()


def test_an_index_into_another_db_never_reads_the_default_index_or_its_answers(
        tmp_path: Path) -> None:
    """A project indexed the plain way (data/processed/rag.db, an answer saved beside it),
    then indexed into another --db: the default index, its sidecars and the saved answers
    are ragdb's own files and were indexed as the project's (the answers as JSON)."""
    write_corpus(tmp_path / "src")
    assert run_cli("index", ".", "--no-vectors", cwd=tmp_path).returncode == 0
    answered = run_cli("answer", "How do I load a LoRA adapter?", "--k", "1", cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr
    saved = list((tmp_path / "data" / "processed" / "outputs" / "answers").glob("*.json"))
    assert saved, answered.stdout
    other = tmp_path.parent / f"{tmp_path.name}-other.db"
    done = run_cli("index", ".", "--no-vectors", "--db", str(other), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "0 skipped" in done.stdout, done.stdout  # rag.db is not even counted as binary
    with closing(sqlite3.connect(other)) as conn:
        paths = sorted(str(row[0]) for row in conn.execute("SELECT path FROM files"))
    assert paths == sorted(f"src/{rel}" for rel in
                           ("docs/features/lora.md", "docs/usage/quickstart.md",
                            "pkg/layers.py", "notes.txt"))


def test_serve_stopped_with_sigterm_ends_as_ctrl_c_does(tmp_path: Path) -> None:
    """`kill`, systemd and `docker stop` send SIGTERM: uvicorn shut down, then the signal's
    default action killed the process before its worker pools ended, and Python's resource
    tracker printed a warning of leaked semaphores."""
    write_corpus(tmp_path / "data" / "raw")
    assert run_cli("index", "data/raw", "--no-vectors", cwd=tmp_path).returncode == 0
    port = free_port()
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragdb", "serve", "--port", str(port)], cwd=tmp_path,
            stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, base, log_path, 60, 0.2)
        with urlopen(f"{base}/-/ragdb/search?q=LoRA+adapter&k=1", timeout=60) as reply:
            assert json.load(reply)["sources"]  # the search worker is running
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log_text = log_path.read_text(errors="replace")
    assert "Finished server process" in log_text, log_text
    assert "leaked" not in log_text and "Traceback" not in log_text, log_text


def test_mcp_answers_every_request_written_before_stdin_closed(tmp_path: Path) -> None:
    """`printf '...' | ragdb mcp`, as serving.md's JSON-RPC lines read: the server ended when
    stdin closed and the tool calls still running got no reply; the handshake also named no
    version."""
    write_corpus(tmp_path / "data" / "raw")
    assert run_cli("index", "data/raw", "--no-vectors", "--db", "rag.db",
                   cwd=tmp_path).returncode == 0
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}
    calls = [{"jsonrpc": "2.0", "id": n, "method": "tools/call",
              "params": {"name": name, "arguments": arguments}}
             for n, name, arguments in [(3, "search", {"query": "LoRA adapter", "k": 1}),
                                        (4, "search", {"query": "", "k": 1}),
                                        (5, "status", {})]]
    lines = [hello, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, *calls]
    done = subprocess.run(
        [sys.executable, "-m", "ragdb", "mcp", "--db", "rag.db"], cwd=tmp_path,
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    assert sorted(replies) == [1, 2, 3, 4, 5], done.stdout
    assert replies[1]["result"]["serverInfo"]["version"] not in ("", None)
    found = replies[3]["result"]["structuredContent"]["sources"]
    assert found[0]["file_path"] == "data/raw/docs/features/lora.md"
    assert replies[4]["result"]["isError"] is True
    assert replies[5]["result"]["isError"] is False


def test_serve_from_another_folder_re_indexes_where_the_index_was_built(
        tmp_path: Path) -> None:
    """`ragdb serve --db /path/to/project/data/processed/rag.db` started elsewhere (a service
    unit, a terminal in the home folder) searched, but POST /-/ragdb/index was refused: the
    stored paths are relative to the project folder, where `ragdb mcp` already works from."""
    project = tmp_path / "project"
    write_corpus(project / "src")
    assert run_cli("index", ".", "--no-vectors", cwd=project).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    port = free_port()
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragdb", "serve", "--port", str(port), "--db",
             str(project / "data" / "processed" / "rag.db")], cwd=elsewhere,
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, base, log_path, 60, 0.2)
        post = Request(f"{base}/-/ragdb/index", data=b"{}", method="POST",
                       headers={"Content-Type": "application/json"})
        with urlopen(post, timeout=120) as reply:
            done = json.load(reply)
        assert done["roots"] == ["."], done
        assert done["stats"]["files_unchanged"] == 4 and done["stats"]["files_removed"] == 0
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert list(elsewhere.iterdir()) == []


def test_index_from_a_sibling_folder_is_refused_and_removes_nothing(tmp_path: Path) -> None:
    """`ragdb index --db ../project/data/processed/rag.db` from a sibling folder re-indexed
    the recorded root `.` as the sibling (empty) and removed every file of the project; a
    copy of the project that carries its rag.db still indexes where it lies."""
    project = tmp_path / "project"
    write_corpus(project / "src")
    assert run_cli("index", ".", "--no-vectors", cwd=project).returncode == 0
    db = project / "data" / "processed" / "rag.db"
    before = index_rows(db)
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    for args in (["index", "--db", str(db)], ["index", ".", "--db", str(db)]):
        line = one_line_error(run_cli(*args, "--no-vectors", cwd=sibling))
        assert f"this index was built from {project}" in line, line
    assert index_rows(db) == before
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    (copy / "src" / "extra.py").write_text("def extra():\n    return 2\n")
    done = run_cli("index", "--no-vectors", cwd=copy)
    assert done.returncode == 0, done.stderr
    assert "1 indexed, 4 unchanged, 0 removed" in done.stdout, done.stdout
    assert index_rows(db) == before


def test_a_question_made_only_of_stopwords_still_searches(tmp_path: Path) -> None:
    """blinker defines `ANY`; "What is ANY?" found no source at all (every word of it is a
    stopword), though `ragdb definition ANY` finds it. Punctuation alone still finds none."""
    write_corpus(tmp_path / "src", {
        "signals.py": '"""Signals."""\n\nANY = object()\n"""Receive from any sender."""\n\n\n'
                      "def connect(receiver, sender=ANY):\n    return receiver\n",
        "notes.md": "# Notes\n\nReceivers are called in order.\n"})
    assert run_cli("index", ".", "--no-vectors", cwd=tmp_path).returncode == 0
    for question in ("What is ANY?", "any"):
        found = run_cli("search", question, "--json", "--mode", "lexical", cwd=tmp_path)
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)[0]["file_path"] == "src/signals.py", question
    nothing = run_cli("search", "?!", cwd=tmp_path)
    assert nothing.returncode == 0 and "no sources found" in nothing.stderr


def test_login_stores_and_terraform_state_are_never_indexed(tmp_path: Path) -> None:
    """A project folder with a git credential store, npm and Docker logins, an htpasswd file,
    OAuth client and service credentials and Terraform state had them all indexed (and served,
    and sent to an answer model) as text or JSON."""
    secrets = [".git-credentials", ".npmrc", ".dockercfg", ".htpasswd", "credentials.json",
               "client_secret_1234.apps.json", "terraform.tfstate", "terraform.tfstate.backup"]
    for name in secrets:
        (tmp_path / name).write_text(f"token = zqsecret{len(name)}\n")
    (tmp_path / "README.md").write_text("# Deploy\n\nRun terraform apply.\n")
    done = run_cli("index", ".", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{len(secrets)} may hold secrets" in done.stdout, done.stdout
    db = tmp_path / "data" / "processed" / "rag.db"
    assert [row[0] for row in index_rows(db)["files"]] == ["README.md"]
    assert b"zqsecret" not in db.read_bytes()


HELD_FIRST_RUN = """
import os, sys, time
from ragdb import RagDB
from ragdb.retrieve import Filters

def hold(_n: int) -> None:
    open(sys.argv[2] + ".started", "w").close()
    while os.path.exists(sys.argv[2]):
        time.sleep(0.05)

RagDB(sys.argv[1]).index(["data/raw"], vectors=False, progress=hold)
"""


def test_a_search_during_the_first_index_run_says_it_is_running(tmp_path: Path) -> None:
    """While the first `ragdb index` of a project was still walking, a search said "the index
    is empty: run `ragdb index` first": the user had, and it was running."""
    write_corpus(tmp_path / "data" / "raw")
    hold = tmp_path / "hold"
    hold.touch()
    run = subprocess.Popen([sys.executable, "-c", HELD_FIRST_RUN, "rag.db", str(hold)],
                           cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "hold.started").exists():
            assert run.poll() is None and time.monotonic() < deadline, run.stderr
            time.sleep(0.05)
        line = one_line_error(run_cli("search", "LoRA", "--db", "rag.db", cwd=tmp_path))
        assert "first index run is in progress" in line, line
    finally:
        hold.unlink()
        assert run.wait(timeout=120) == 0
    (tmp_path / "blank").mkdir()
    assert run_cli("index", "blank", "--db", "blank.db", cwd=tmp_path).returncode == 0
    line = one_line_error(run_cli("search", "LoRA", "--db", "blank.db", cwd=tmp_path))
    assert "in progress" not in line and "roots (blank) hold no file" in line, line


def test_a_file_root_that_links_to_a_credential_is_not_indexed(tmp_path: Path) -> None:
    """`ragdb index README.md notes.txt` where notes.txt -> ~/.ssh/id_rsa (outside the
    project, no --follow-symlinks) or -> .env: a file given as a root was read as given, so
    the key and the .env were in rag.db, though the same links in a walked folder are left out.
    A file root is judged by its target as a walked link is; one named as itself still is read."""
    secret = "supersecretvalue123"
    home = tmp_path / "home"
    write_corpus(home, {".ssh/id_rsa": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{secret}\n"})
    proj = tmp_path / "proj"
    write_corpus(proj, {"README.md": "# Project\n\nHow to run it.\n", ".env": f"KEY={secret}\n"})
    (proj / "notes.txt").symlink_to(home / ".ssh" / "id_rsa")
    (proj / "settings.txt").symlink_to(".env")
    done = run_cli("index", "README.md", "notes.txt", "settings.txt", "--no-vectors", cwd=proj)
    assert done.returncode == 0, done.stderr
    assert "2 may hold secrets" in done.stdout, done.stdout
    assert "skipped notes.txt: may hold secrets" in done.stderr, done.stderr
    db = proj / "data" / "processed" / "rag.db"
    assert [path for path, _sha, _size in index_rows(db)["files"]] == ["README.md"]
    assert secret.encode() not in db.read_bytes()
    again = run_cli("index", "--no-vectors", cwd=proj)  # the recorded roots, again
    assert again.returncode == 0, again.stderr
    assert [path for path, _sha, _size in index_rows(db)["files"]] == ["README.md"]


def test_a_path_filter_naming_a_folder_keeps_the_files_under_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ragdb search ... --path docs/` (or `--path docs`, or `./docs/`) found nothing and said
    only 'no sources found', though `ragdb index --exclude 'docs/'` names a folder that way:
    a glob ending in '/', or a name with no wildcard, holds the files under that folder."""
    write_corpus(tmp_path)
    assert run_cli("index", ".", "--no-vectors", cwd=tmp_path).returncode == 0
    monkeypatch.chdir(tmp_path)
    rag = RagDB(tmp_path / "data" / "processed" / "rag.db")

    def found(*filters: str, question: str = "vLLM adapters server") -> list[str]:
        """What `ragdb search QUESTION --mode lexical --k 10 --json FILTERS` lists, in this
        process: the command hands its --path/--exclude to Filters.of and RagDB.search as
        given (its own run is checked once below, not once a spelling)."""
        given: dict[str, list[str]] = {"--path": [], "--exclude": []}
        for option, value in zip(filters[::2], filters[1::2]):
            given[option].append(value)
        hits = rag.search(question, 10, "lexical",
                          Filters.of(given["--path"], None, given["--exclude"]))
        return sorted({hit.file_path for hit in hits})

    docs = ["docs/features/lora.md", "docs/usage/quickstart.md"]
    assert found("--path", "docs/*") == docs
    done = run_cli("search", "vLLM adapters server", "--mode", "lexical", "--k", "10",
                   "--json", "--path", "docs/", cwd=tmp_path)  # the CLI, as a user spells it
    assert done.returncode == 0, done.stderr
    assert sorted({hit["file_path"] for hit in json.loads(done.stdout)}) == docs
    for spelled in ("docs/", "docs", "./docs/", "features/", "usage"):
        expected = docs if spelled.strip("./") == "docs" else [
            path for path in docs if f"/{spelled.strip('/')}/" in path]
        assert found("--path", spelled) == expected, spelled
    assert found("--exclude", "docs/") == found("--exclude", "docs/*")
    assert not any(path.startswith("docs/") for path in found("--exclude", "docs"))
    assert found("--path", "notes.txt", question="scheduler") == ["notes.txt"]  # as before
    listing = rag.outline("pkg", filters=Filters.of("pkg/"))  # the symbol queries, too
    rag.close()
    assert listing.total and {place.path for place in listing.places} == {"pkg/layers.py"}


def test_outline_takes_a_path_as_the_shell_spells_it(tmp_path: Path) -> None:
    """`ragdb outline "$PWD/pkg/layers.py"` (a tab-completed absolute path, as coding agents
    pass them too) and `ragdb outline ../pkg/layers.py` from a subfolder said 'no definitions
    in ...' though the file is indexed: a path naming a file or folder on disk under the
    folder the index was built from is read as its stored path."""
    write_corpus(tmp_path)
    assert run_cli("index", ".", "--no-vectors", cwd=tmp_path).returncode == 0
    plain = run_cli("outline", "pkg/layers.py", cwd=tmp_path)
    assert plain.returncode == 0 and "class layers.Gemma2DecoderLayer" in plain.stdout
    absolute = run_cli("outline", str(tmp_path / "pkg" / "layers.py"), cwd=tmp_path)
    assert absolute.returncode == 0 and absolute.stdout == plain.stdout, absolute.stderr
    below = run_cli("outline", "../pkg/layers.py", cwd=tmp_path / "docs")
    assert below.returncode == 0 and below.stdout == plain.stdout, below.stderr
    folder = run_cli("outline", str(tmp_path / "pkg"), cwd=tmp_path / "docs")
    assert folder.returncode == 0 and folder.stdout == plain.stdout, folder.stderr
    elsewhere = run_cli("outline", "/etc/passwd", cwd=tmp_path)
    assert elsewhere.returncode == 0 and not elsewhere.stdout
    assert "no definitions in /etc/passwd" in elsewhere.stderr


def test_a_file_saved_with_a_utf8_bom_is_read_as_its_language(tmp_path: Path) -> None:
    """Editors on Windows save UTF-8 with a byte order mark: such a Python file was a 'parse
    fallback' (cut as text, `ragdb definition` found none of its functions) and a Markdown
    file's first heading was not a heading. Offsets stay those of the file's text, BOM
    included."""
    bom = "\ufeff"
    body = "".join(f"def step_{i}(x):\n    return x + {i}\n\n\n" for i in range(60))
    files = {
        "small.py": bom + "def bom_small(x):\n    return x\n",
        "large.py": bom + "import os\n\n\ndef bom_large():\n    return os.sep\n\n\n" + body,
        "guide.md": bom + "# Byte order guide\n\nHow the mark is read.\n\n## Second\n\nMore.\n",
        "web.js": bom + "export function bomScript(a) {\n  return a + 1;\n}\n",
    }
    write_corpus(tmp_path, files)
    done = run_cli("index", ".", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "parse fallback" not in done.stdout + done.stderr, done.stderr
    for name, path in (("bom_small", "small.py:1"), ("bom_large", "large.py:4"),
                       ("step_59", "large.py:"), ("bomScript", "web.js:1")):
        found = run_cli("definition", name, cwd=tmp_path)
        assert found.returncode == 0 and found.stdout.startswith(path), (name, found.stderr)
    rag = RagDB(tmp_path / "data" / "processed" / "rag.db")
    rows = rag.conn.execute(
        "SELECT c.first_char, c.last_char, c.text, c.context FROM chunks c"
        " JOIN files f ON f.id = c.file_id WHERE f.path = 'guide.md' ORDER BY c.first_char"
    ).fetchall()
    rag.close()
    text = files["guide.md"]
    assert rows and all(text[first:last] == chunk for first, last, chunk, _ in rows)
    assert any("Byte order guide" in str(context) for *_, context in rows), rows


def test_a_utf16_text_file_is_skipped_as_not_utf8_not_as_binary(tmp_path: Path) -> None:
    """A UTF-16 file with its byte order mark (PowerShell and Visual Studio write them) was
    skipped as 'binary' (its NUL bytes): it is text in another encoding, so 'not UTF-8'."""
    write_corpus(tmp_path, {"a.md": "# A\n\nText.\n"})
    (tmp_path / "build.ps1").write_bytes("Write-Host 'hello'\r\n".encode("utf-16"))
    (tmp_path / "notes.txt").write_bytes(b"\xfe\xff" + "wide notes\n".encode("utf-16-be"))
    (tmp_path / "blob.py").write_bytes(b"\x00\x01\x02\xff\xfe" * 10)
    done = run_cli("index", ".", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 binary, 2 not UTF-8" in done.stdout, done.stdout
    assert "skipped build.ps1: not UTF-8" in done.stderr, done.stderr
    assert "skipped blob.py: binary" in done.stderr, done.stderr


def test_an_empty_path_is_refused_not_read_as_the_current_folder(tmp_path: Path) -> None:
    """`ragdb roots --remove "$DIR"` with DIR unset removed the root '.', every file of the
    index ('removed : 13 files'), and `ragdb index "$DIR"` indexed the current folder (a home
    folder, from a script run there): an empty path is refused in one line, nothing changed."""
    write_corpus(tmp_path)
    assert run_cli("index", ".", "--no-vectors", cwd=tmp_path).returncode == 0
    db = tmp_path / "data" / "processed" / "rag.db"
    before = index_rows(db)
    line = one_line_error(run_cli("roots", "--remove", "", cwd=tmp_path))
    assert "empty" in line, line
    line = one_line_error(run_cli("index", "", "--no-vectors", cwd=tmp_path))
    assert "empty" in line, line
    other = tmp_path / "other.db"
    one_line_error(run_cli("index", " ", "--no-vectors", "--db", str(other), cwd=tmp_path))
    assert index_rows(db) == before and not other.exists()
    with RagDB(db) as rag:
        assert [root.path for root in rag.roots()] == ["."]


def test_a_dataset_command_never_writes_over_its_own_input(tmp_path: Path) -> None:
    """`ragdb search_dataset --dataset_path questions.json --save_directory .` wrote its
    results over questions.json, the user's questions (and their reference sources) gone;
    answer_dataset did the same to its results file. Refused in one line, nothing written."""
    write_corpus(tmp_path)
    assert run_cli("index", ".", "--no-vectors", cwd=tmp_path).returncode == 0
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps({"rag_questions": [
        {"question_id": "q1", "question": "How do I load a LoRA adapter?",
         "sources": [{"file_path": "docs/features/lora.md", "first_character_index": 0,
                      "last_character_index": 40}]}]}), encoding="utf-8")
    before = questions.read_bytes()
    for folder in (".", str(tmp_path), "./"):
        line = one_line_error(run_cli("search_dataset", "--dataset_path", "questions.json",
                                      "--save_directory", folder, cwd=tmp_path))
        assert "questions.json" in line and "input" in line, line
        assert questions.read_bytes() == before
    done = run_cli("search_dataset", "--dataset_path", "questions.json", "--save_directory",
                   "results", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    results = tmp_path / "results" / "questions.json"
    searched = results.read_bytes()
    line = one_line_error(run_cli("answer_dataset", "--student_search_results_path",
                                  str(results), "--save_directory", "results", cwd=tmp_path))
    assert "input" in line, line
    assert results.read_bytes() == searched


def test_serve_reads_a_read_only_index(tmp_path: Path) -> None:
    """A shared index (rag.db and its folder read-only, no -shm beside it): `ragdb search`
    read it, but `ragdb serve` ended at startup in a traceback ('unable to open database
    file': Datasette opened the WAL file mode=ro and needed a -shm it could not create).
    It serves the index, and an index run through it is one JSON line."""
    from tests.test_reliability_index import NO_DAC, needs_setpriv

    needs_setpriv()
    write_corpus(tmp_path / "proj")
    assert run_cli("index", ".", "--no-vectors", cwd=tmp_path / "proj").returncode == 0
    folder = tmp_path / "proj" / "data" / "processed"
    (folder / "rag.db").chmod(0o444)
    folder.chmod(0o555)
    port = free_port()
    log_path = tmp_path / "server.log"
    base = f"http://127.0.0.1:{port}"
    try:
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [*NO_DAC, sys.executable, "-m", "ragdb", "serve", "--port", str(port)],
                cwd=tmp_path / "proj", stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "HF_HUB_OFFLINE": "1"})
        try:
            wait_until_serving(process, base, log_path, 60, 0.2)
            with urlopen(f"{base}/-/ragdb/search?q=LoRA+adapter&k=1&mode=lexical",
                         timeout=60) as reply:
                assert json.load(reply)["sources"][0]["file_path"] == "docs/features/lora.md"
            with urlopen(f"{base}/rag/files.json?_shape=array", timeout=60) as reply:
                assert len(json.load(reply)) == 4
            try:
                urlopen(Request(f"{base}/-/ragdb/index", method="POST"), timeout=60)
                raise AssertionError("an index run into a read-only index succeeded")
            except HTTPError as refused:
                assert "read-only" in json.load(refused)["error"]
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
    finally:
        folder.chmod(0o755)
    log_text = log_path.read_text(errors="replace")
    assert "Traceback" not in log_text, log_text
    assert {p.name for p in folder.iterdir()} == {"rag.db"}


def test_an_index_named_by_ragdb_db_never_reads_the_project_index_or_its_answers(
        tmp_path: Path) -> None:
    """As with --db (test above), but the other index named by RAGDB_DB, as a shell profile
    or CI job sets it: the project's data/processed/rag.db was counted as a binary file and
    the answers saved beside it were indexed as the project's JSON."""
    write_corpus(tmp_path / "src")
    assert run_cli("index", ".", "--no-vectors", cwd=tmp_path).returncode == 0
    answered = run_cli("answer", "How do I load a LoRA adapter?", "--k", "1", cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr
    assert list((tmp_path / "data" / "processed" / "outputs" / "answers").glob("*.json"))
    other = tmp_path.parent / f"{tmp_path.name}-env.db"
    done = run_cli("index", ".", "--no-vectors", cwd=tmp_path, env={"RAGDB_DB": str(other)})
    assert done.returncode == 0, done.stderr
    assert "0 skipped" in done.stdout, done.stdout
    with closing(sqlite3.connect(other)) as conn:
        paths = sorted(str(row[0]) for row in conn.execute("SELECT path FROM files"))
    assert not [path for path in paths if path.startswith("data/")], paths


def test_a_db_that_is_a_fifo_or_a_device_is_refused_not_waited_on(tmp_path: Path) -> None:
    """`--db` naming a FIFO (a named pipe, `--db <(...)`) hung `ragdb search`, `index` and
    `serve` for ever, SQLite blocked opening it; /dev/null was 'database error: disk I/O
    error'. Each is refused in one line: rag.db must be a regular file."""
    write_corpus(tmp_path)
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    for db in (str(fifo), "/dev/null"):
        for args in (("search", "LoRA"), ("index", "."), ("answer", "LoRA"), ("roots",)):
            line = one_line_error(run_cli(*args, "--db", db, cwd=tmp_path, timeout=60))
            assert "not a regular file" in line, (args, line)
    line = one_line_error(run_cli("serve", "--db", str(fifo), "--port", str(free_port()),
                                  cwd=tmp_path, timeout=60))
    assert "not a regular file" in line, line


def test_a_typescript_declaration_file_defines_its_functions(tmp_path: Path) -> None:
    """An npm package's API is its .d.ts file: `export function nanoid(size?: number):
    string` (nanoid), `export default function mitt(...)` (mitt) were not definitions, so
    `ragdb definition nanoid` named only the compiled JavaScript and `ragdb outline
    index.d.ts` left them out. In a .ts file an overload signature is still not one: its
    implementation is."""
    write_corpus(tmp_path, {
        "pkg/index.d.ts": (
            "/** Generate secure URL-friendly unique ID. */\n"
            "export function nanoid<Type extends string>(size?: number): Type\n\n"
            "export default function mitt(all?: Map<string, unknown>): Emitter\n\n"
            "export interface Emitter {\n  emit(type: string): void\n}\n\n"
            "declare module 'extra' {\n  export function extraHelper(): void\n}\n"),
        "src/over.ts": (
            "export function parse(text: string): number;\n"
            "export function parse(text: number): number;\n"
            "export function parse(text: any): number {\n  return Number(text);\n}\n"),
    })
    done = run_cli("index", ".", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name, line in (("nanoid", "pkg/index.d.ts:2:"), ("mitt", "pkg/index.d.ts:4:"),
                       ("extraHelper", "pkg/index.d.ts:11:")):
        found = run_cli("definition", name, cwd=tmp_path)
        assert found.returncode == 0 and found.stdout.startswith(line), (name, found)
        assert " function " in found.stdout, found.stdout
    outline = run_cli("outline", "pkg/index.d.ts", cwd=tmp_path)
    assert "function pkg.nanoid" in outline.stdout or "nanoid" in outline.stdout
    parse = run_cli("definition", "parse", cwd=tmp_path)
    assert parse.stdout.splitlines() == [
        line for line in parse.stdout.splitlines() if line.startswith("src/over.ts:3:")], \
        parse.stdout
    assert parse.stdout.strip(), parse.stderr


def test_search_after_a_run_that_found_no_file_says_so(tmp_path: Path) -> None:
    """`ragdb index .` under a .gitignore of `*` reported '0 files', then `ragdb search`
    said 'the index is empty: run `ragdb index` first', which the user had just done. It
    names the recorded roots that hold no indexed file and how to see why."""
    write_corpus(tmp_path, {".gitignore": "*\n", "a.py": "def f():\n    return 1\n"})
    done = run_cli("index", ".", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("0 files"), done.stdout
    line = one_line_error(run_cli("search", "f", cwd=tmp_path))
    assert "run `ragdb index` first" not in line, line
    assert "no file" in line and "--no-ignore" in line, line
