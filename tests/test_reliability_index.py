"""Issue 12, the CLI half: edits, unreadable and special files, symlinks, a full disk, a
read-only folder, bad output paths and odd file names. Every case ends with an intact rag.db
whose rows equal a clean run over the files that could be read, and nothing written elsewhere.

Tests run as root, which ignores file modes; where unreadability or a read-only folder is the
point, the CLI runs under `setpriv` without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so the
kernel applies the modes to it as to any user (still uid 0, so it owns what it writes).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ragdb.db import connect, scalar
from tests.conftest import SMALL_CORPUS, index_rows, one_line_error, run_cli, write_corpus

NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def clean_rows(tmp_path: Path, files: dict[str, str], *args: str) -> dict[str, Any]:
    """The rows of a fresh index over exactly these files, laid out the same way."""
    clean = tmp_path / "clean"
    write_corpus(clean / "data" / "raw" / "proj", files)
    done = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", *args, cwd=clean)
    assert done.returncode == 0, done.stderr
    return index_rows(clean / "rag.db")


def listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def needs_setpriv() -> None:
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to run the CLI without DAC override")


# -- 2. an edit must re-embed ----------------------------------------------------------------

def test_edit_of_the_file_with_the_highest_chunk_ids_re_embeds(tmp_path: Path) -> None:
    """The edited file's chunks held the highest ids: without AUTOINCREMENT its new chunks took
    the same ids, the old vectors looked current and the run said '0 chunks embedded'."""
    corpus = {"docs/a.md": "# Install\n\nInstall vLLM with pip and start a server.\n",
              "docs/z.md": "# LoRA\n\nServe several LoRA adapters on one base model.\n"}
    write_corpus(tmp_path / "data" / "raw" / "proj", corpus)
    first = run_cli("index", "data/raw", "--db", "rag.db", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    edited = "# Volcanoes\n\nMagma rises and lava erupts from the volcano's crater.\n"
    (tmp_path / "data" / "raw" / "proj" / "docs" / "z.md").write_text(edited, "utf-8")
    second = run_cli("index", "data/raw", "--db", "rag.db", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "; 0 chunks embedded" not in second.stdout, second.stdout
    assert "1 chunks embedded" in second.stdout, second.stdout
    found = run_cli("search", "molten rock from an erupting mountain", "--mode", "dense",
                    "--k", "1", "--json", "--db", "rag.db", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["file_path"].endswith("docs/z.md")
    conn = connect(tmp_path / "rag.db")
    orphans = scalar(conn, "SELECT count(*) FROM chunk_vectors "
                           "WHERE chunk_id NOT IN (SELECT id FROM chunks)")
    conn.close()
    assert orphans == 0
    assert index_rows(tmp_path / "rag.db") == clean_rows(tmp_path, {**corpus, "docs/z.md": edited})


def test_migration_keeps_chunk_ids_and_never_reuses_them(tmp_path: Path) -> None:
    """An index from schema 3 is rebuilt with the same chunk ids (FTS rowids follow them)."""
    from ragdb.db import migrations

    import apsw
    import sqlite_vec

    db = tmp_path / "rag.db"
    old = apsw.Connection(str(db))
    old.enable_load_extension(True)
    old.load_extension(sqlite_vec.loadable_path())
    for number, path in migrations():
        if number <= 3:
            old.execute(path.read_text("utf-8"))
    old.execute("PRAGMA user_version = 3")
    old.execute("INSERT INTO files VALUES (1, 'a.md', 'x', 1, 'markdown', 1, 'now')")
    for chunk_id in (5, 9):
        old.execute("INSERT INTO chunks VALUES (?, 1, 0, 1, 1, 1, 'text', '', 'lava')",
                    (chunk_id,))
        old.execute("INSERT INTO chunks_fts(rowid, path, context, body) VALUES (?, 'a', '', "
                    "'lava')", (chunk_id,))
    old.close()
    conn = connect(db)
    assert [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")] == [5, 9]
    assert [r[0] for r in conn.execute(
        "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'lava' ORDER BY rowid")] == [5, 9]
    conn.execute("DELETE FROM chunks WHERE id = 9")
    conn.execute("INSERT INTO chunks (file_id, first_char, last_char, start_line, end_line, "
                 "kind, text) VALUES (1, 0, 1, 1, 1, 'text', 'new')")
    assert conn.last_insert_rowid() == 10
    assert conn.execute("PRAGMA integrity_check").fetchall()[0][0] == "ok"
    conn.close()


# -- 4. special files ------------------------------------------------------------------------

def test_fifo_and_dev_zero_are_not_read(tmp_path: Path) -> None:
    """A FIFO named *.md blocked the run forever; a link to /dev/zero read without bound."""
    proj = tmp_path / "data" / "raw" / "proj"
    write_corpus(proj)
    os.mkfifo(proj / "docs" / "pipe.md")
    (proj / "docs" / "zero.md").symlink_to("/dev/zero")
    done = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", "--follow-symlinks",
                   cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "2 not a regular file" in done.stdout, done.stdout
    assert "pipe.md: not a regular file" in done.stderr
    assert index_rows(tmp_path / "rag.db") == clean_rows(tmp_path, SMALL_CORPUS)


def test_a_file_over_the_cap_is_skipped_without_reading_it_all(tmp_path: Path) -> None:
    proj = tmp_path / "data" / "raw" / "proj"
    write_corpus(proj)
    with (proj / "big.txt").open("wb") as handle:  # sparse: 5 MiB on paper, nothing on disk
        handle.truncate(5 * 1024 * 1024)
    done = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 too large" in done.stdout
    assert index_rows(tmp_path / "rag.db") == clean_rows(tmp_path, SMALL_CORPUS)


# -- 5. symlinks that leave the root ---------------------------------------------------------

def test_symlinks_outside_the_root_are_skipped_unless_asked(tmp_path: Path) -> None:
    proj = tmp_path / "data" / "raw" / "proj"
    write_corpus(proj)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe host name is hidden.\n", "utf-8")
    (proj / "host.md").symlink_to(outside / "secret.md")
    (proj / "ext").symlink_to(outside, target_is_directory=True)
    (proj / "inner.md").symlink_to(proj / "notes.txt")  # inside the root: read
    done = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 symlink outside the root" in done.stdout, done.stdout
    assert "host.md: symlink outside the root" in done.stderr
    expected = clean_rows(tmp_path, {**SMALL_CORPUS, "inner.md": SMALL_CORPUS["notes.txt"]})
    assert index_rows(tmp_path / "rag.db") == expected

    followed = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors",
                       "--follow-symlinks", cwd=tmp_path)
    assert followed.returncode == 0, followed.stderr
    paths = [path for path, _sha, _size in index_rows(tmp_path / "rag.db")["files"]]
    assert "data/raw/proj/host.md" in paths and "data/raw/proj/ext/secret.md" in paths
    assert not (outside / "rag.db").exists() and listing(outside) == {"secret.md"}


# -- 3. unreadable folders and files keep their rows -----------------------------------------

def test_unreadable_folder_and_file_keep_their_rows(tmp_path: Path) -> None:
    """chmod 000 on a folder removed its files and vectors from the index. The second run has
    no DAC override (see the module docstring), so the modes really deny it."""
    needs_setpriv()
    proj = tmp_path / "data" / "raw" / "proj"
    write_corpus(proj)
    first = run_cli("index", "data/raw", "--db", "rag.db", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = index_rows(tmp_path / "rag.db")
    conn = connect(tmp_path / "rag.db")
    vectors_before = scalar(conn, "SELECT count(*) FROM chunk_vectors")
    conn.close()
    (proj / "docs" / "usage").chmod(0)
    (proj / "notes.txt").chmod(0)
    try:
        done = subprocess.run(
            [*NO_DAC, sys.executable, "-m", "ragdb", "index", "data/raw", "--db", "rag.db"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={**os.environ, "RAGDB_MODELS_DIR": str(Path(__file__).parents[1] / "data" /
                                                       "models")})
    finally:
        (proj / "docs" / "usage").chmod(0o755)
        (proj / "notes.txt").chmod(0o644)
    assert done.returncode == 0, done.stderr
    assert "0 removed" in done.stdout and "unreadable" in done.stdout, done.stdout
    assert "docs/usage: unreadable folder" in done.stderr, done.stderr
    assert "notes.txt: unreadable" in done.stderr, done.stderr
    assert index_rows(tmp_path / "rag.db") == before
    conn = connect(tmp_path / "rag.db")
    assert scalar(conn, "SELECT count(*) FROM chunk_vectors") == vectors_before
    conn.close()


# -- 6. a full disk --------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """A real 3 MiB tmpfs (root in this sandbox may mount one; skipped where it may not)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path) -> Path:
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as handle:  # unbuffered: close() has nothing left to flush
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass
    return filler


def test_full_disk_keeps_the_index_and_searches_keep_answering(small_disk: Path) -> None:
    proj = small_disk / "data" / "raw" / "proj"
    write_corpus(proj)
    first = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=small_disk)
    assert first.returncode == 0, first.stderr
    before = index_rows(small_disk / "rag.db")
    big = {f"docs/big_{i}.md": f"# Big {i}\n\n" + f"lorem ipsum dolor {i} sit amet.\n\n" * 2000
           for i in range(3)}
    try:
        write_corpus(proj, big)
    except OSError:
        pytest.skip("the small disk cannot even hold the new files")
    filler = fill(small_disk)
    done = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=small_disk)
    assert one_line_error(done).startswith("ragdb: the disk is full"), done.stderr
    for question in ("load a LoRA adapter", "chunked prefill scheduler"):  # uncached searches
        found = run_cli("search", question, "--db", "rag.db", "--mode", "lexical",
                        cwd=small_disk)
        assert found.returncode == 0 and found.stdout.strip(), found.stderr
    filler.unlink()  # the checks below open rag.db read-write
    assert index_rows(small_disk / "rag.db") == before
    again = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=small_disk)
    assert again.returncode == 0, again.stderr
    assert "3 indexed" in again.stdout


def test_full_disk_while_embedding_says_what_was_kept(small_disk: Path) -> None:
    """Issue 37: the disk filling up in the vector phase said "nothing of this write was kept
    and it holds its last complete index", while the run's files and chunks were committed
    (dense coverage 28%). It says what was kept, and the next `ragdb index` finishes."""
    proj = small_disk / "data" / "raw" / "proj"
    write_corpus(proj)
    first = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=small_disk)
    assert first.returncode == 0, first.stderr
    extra = {"docs/extra.md": "# Extra\n\nA zebra crossing near the scheduler.\n"}
    write_corpus(proj, extra)
    filler = fill(small_disk)
    with filler.open("r+b") as handle:  # room for the rows, not for a block of vectors
        handle.truncate(max(0, filler.stat().st_size - 160 * 1024))
    done = run_cli("index", "data/raw", "--db", "rag.db", cwd=small_disk)
    line = one_line_error(done)
    assert line.startswith("ragdb: the disk is full while embedding: this run's files and "
                           "chunks were kept in "), line
    assert "(1 files indexed, 5 chunks in the index, 0 of them with vectors so far)" in line
    assert "`ragdb index` finishes the vectors" in line and "nothing" not in line, line
    filler.unlink()
    assert index_rows(small_disk / "rag.db") == clean_rows(small_disk, {**SMALL_CORPUS, **extra})
    again = run_cli("index", "data/raw", "--db", "rag.db", cwd=small_disk)
    assert again.returncode == 0, again.stderr
    assert "0 indexed" in again.stdout and "chunks embedded" in again.stdout, again.stdout
    conn = connect(small_disk / "rag.db")
    try:
        assert scalar(conn, "SELECT count(*) FROM chunk_vectors") > 0
    finally:
        conn.close()


# -- 7. a read-only folder -------------------------------------------------------------------

def _search_without_dac(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NO_DAC, sys.executable, "-m", "ragdb", "search", "load a LoRA adapter",
         "--db", "rag.db", "--json"], cwd=folder, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("leftover_wal", [False, True])
def test_search_from_a_read_only_folder(tmp_path: Path, leftover_wal: bool) -> None:
    """'attempt to write a readonly database' when rag.db and its folder are read-only and
    a -wal/-shm pair is there (left by a reader of the read-only file, or a live writer):
    opening read-only (immutable when no -shm exists) reads fine and writes nothing, not even
    the query cache."""
    needs_setpriv()
    write_corpus(tmp_path / "data" / "raw" / "proj")
    built = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    before = index_rows(tmp_path / "rag.db")
    (tmp_path / "rag.db").chmod(0o444)
    if leftover_wal:  # a process that had it open ended without closing it
        subprocess.run([sys.executable, "-c", "import os, sqlite3; c = sqlite3.connect("
                        "'rag.db'); c.execute('SELECT count(*) FROM files').fetchone(); "
                        "os._exit(0)"], cwd=tmp_path, check=True)
        assert (tmp_path / "rag.db-shm").exists()
        tmp_path.chmod(0o555)
        try:
            found = [_search_without_dac(tmp_path) for _ in range(2)]
        finally:
            tmp_path.chmod(0o755)
    else:
        tmp_path.chmod(0o555)
        try:
            found = [_search_without_dac(tmp_path) for _ in range(2)]
            index = subprocess.run(
                [*NO_DAC, sys.executable, "-m", "ragdb", "index", "data/raw", "--db",
                 "rag.db", "--no-vectors"], cwd=tmp_path, capture_output=True, text=True,
                timeout=60)
        finally:
            tmp_path.chmod(0o755)
        assert index.returncode == 0 or one_line_error(index), index.stderr
    for done in found:  # the second would be a cache hit had the first written one
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)[0]["file_path"].endswith("lora.md")
    (tmp_path / "rag.db").chmod(0o644)
    assert {p.name for p in tmp_path.iterdir()} <= {"data", "rag.db", "rag.db-wal",
                                                    "rag.db-shm"}
    assert index_rows(tmp_path / "rag.db") == before
    with closing(sqlite3.connect(tmp_path / "rag.db")) as conn:
        assert conn.execute("SELECT count(*) FROM query_cache").fetchone()[0] == 0


def _ragdb_without_dac(folder: Path, *args: str,
                       env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NO_DAC, sys.executable, "-m", "ragdb", *args], cwd=folder,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("read_only", ["file", "folder", "both", "new file"])
def test_a_read_only_index_or_folder_is_named_as_such(tmp_path: Path, read_only: str) -> None:
    """Issue 37, item 14: `index` said "unable to open database file" or "attempt to write a
    readonly database", `roots --remove` "cannot index into": neither said read-only. Now one
    line names the file or folder that is read-only and what to do, and nothing changes."""
    needs_setpriv()
    write_corpus(tmp_path / "data" / "raw" / "proj")
    built = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    before = index_rows(tmp_path / "rag.db")
    db = "new.db" if read_only == "new file" else "rag.db"
    if read_only in ("file", "both"):
        (tmp_path / "rag.db").chmod(0o444)
    if read_only != "file":
        tmp_path.chmod(0o555)
    try:
        lines = [one_line_error(_ragdb_without_dac(tmp_path, *args)) for args in (
            ("index", "data/raw", "--db", db, "--no-vectors"),
            ("roots", "--remove", "data/raw", "--db", db))]
        # `ragdb answer` saves beside rag.db, or in the cache folder where that is read-only.
        cache = tmp_path.parent / f"{tmp_path.name}-cache"
        answered = _ragdb_without_dac(
            tmp_path, "answer", "load a LoRA adapter", "--mode", "lexical", "--db", "rag.db",
            env={"XDG_CACHE_HOME": str(cache), "HF_HUB_OFFLINE": "1",
                 "RAGDB_MODELS_DIR": str(tmp_path.parent / "no-models")})
    finally:
        tmp_path.chmod(0o755)
        (tmp_path / "rag.db").chmod(0o644)
    if read_only == "new file":
        assert lines[0] == (f"ragdb: cannot create new.db: its folder {tmp_path} is read-only: "
                            "check its permissions or pass --db")
        assert lines[1] == "ragdb: no index at new.db: run `ragdb index` first"
        lines = lines[:1]
    for line in lines:
        assert "read-only" in line and line.endswith("check its permissions or pass --db"), line
        assert "cannot index into" not in line and "unable to open" not in line, line
    if read_only in ("file", "both"):
        assert "rag.db is read-only (-r--r--r--)" in lines[0]
    elif read_only == "folder":
        assert f"rag.db is in a read-only folder ({tmp_path})" in lines[0]
    assert answered.returncode == 0, answered.stderr
    saved = Path(answered.stderr.strip().splitlines()[-1].removeprefix("saved "))
    beside = read_only == "file"  # its folder can be written
    assert saved.parent == (Path("outputs/answers") if beside
                            else cache / "ragdb" / "outputs" / "answers"), saved
    assert (tmp_path / saved if beside else saved).is_file()
    assert not (tmp_path / "new.db").exists()
    assert index_rows(tmp_path / "rag.db") == before


def test_a_locked_index_names_the_process_that_holds_it(tmp_path: Path) -> None:
    """Issue 37, item 14: a rag.db another process kept locked failed after the 5 s busy wait
    with a bare "database is locked". Now the line names the cause, the holder's pid (from
    /proc/locks) and what to do; the index keeps its rows."""
    write_corpus(tmp_path / "data" / "raw" / "proj")
    built = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    before = index_rows(tmp_path / "rag.db")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time\n"
         "c = sqlite3.connect('rag.db', isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE')\n"
         "c.execute(\"UPDATE settings SET value = value WHERE key = 'generation'\")\n"
         "print('locked', flush=True)\ntime.sleep(60)"],
        cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        (tmp_path / "data" / "raw" / "proj" / "notes.txt").write_text("changed\n", "utf-8")
        done = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    finally:
        holder.kill()
        holder.wait()
    line = one_line_error(done)
    assert line == (f"ragdb: {tmp_path / 'rag.db'} is locked by another process (pid "
                    f"{holder.pid}): wait for it to finish or stop it, then try again"), line
    assert index_rows(tmp_path / "rag.db") == before


# -- 11. bad output and database paths -------------------------------------------------------

def test_paths_under_a_regular_file_are_one_line(tmp_path: Path) -> None:
    write_corpus(tmp_path / "data" / "raw" / "proj")
    (tmp_path / "plain").write_text("not a folder", "utf-8")
    built = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    for args in (
        ("index", "data/raw", "--db", "plain/rag.db", "--no-vectors"),
        ("search", "lora", "--db", "plain/rag.db"),
        ("answer", "How do I load a LoRA adapter?", "--db", "rag.db", "--model", "offline",
         "--save_directory", "plain/answers"),
        ("answer", "lora", "--k", "0", "--db", "rag.db", "--save_directory", "plain"),
    ):
        done = run_cli(*args, cwd=tmp_path, timeout=60)
        line = one_line_error(done)
        assert "plain" in line, line
    (tmp_path / "questions.json").write_text(json.dumps({"rag_questions": [
        {"question_id": "q1", "question": "lora"}]}), "utf-8")
    done = run_cli("search-dataset", "--dataset_path", "questions.json", "--save_directory",
                   "plain/out", "--db", "rag.db", cwd=tmp_path)
    assert "plain" in one_line_error(done)
    assert (tmp_path / "plain").read_text("utf-8") == "not a folder"
    assert index_rows(tmp_path / "rag.db") == clean_rows(tmp_path, SMALL_CORPUS)


# -- 13. a newline in a file name ------------------------------------------------------------

def test_a_newline_in_a_file_name_stays_on_one_line(tmp_path: Path) -> None:
    proj = tmp_path / "data" / "raw" / "proj"
    write_corpus(proj)
    (proj / "evil\nname.md").write_bytes(b"\x00binary")
    (proj / "odd\nname.md").write_text("# Odd\n\nA zebra crossing.\n", "utf-8")
    done = run_cli("index", "data/raw", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ragdb: skipped data/raw/proj/evil\\nname.md: binary" in done.stderr.splitlines()
    found = run_cli("search", "zebra crossing", "--db", "rag.db", cwd=tmp_path)
    assert found.stdout.splitlines()[0] == " 1. data/raw/proj/odd\\nname.md:1-3"
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"k": 10, "search_results": [{
        "question_id": "q1", "question": "zebra", "retrieved_sources": [
            {"file_path": "odd\nname.md", "first_character_index": 0,
             "last_character_index": 5000}]}]}), "utf-8")
    (tmp_path / "dataset.json").write_text(json.dumps({"rag_questions": [{
        "question_id": "q1", "question": "zebra", "sources": [
            {"file_path": "odd\nname.md", "first_character_index": 0,
             "last_character_index": 5}]}]}), "utf-8")
    evaluated = run_cli("evaluate", "--student_search_results_path", "results.json",
                        "--dataset_path", "dataset.json", cwd=tmp_path)
    assert evaluated.returncode == 1
    for line in evaluated.stderr.splitlines():
        assert line.startswith("ragdb: "), evaluated.stderr
    mode = stat.S_IMODE((proj / "odd\nname.md").stat().st_mode)
    assert mode & 0o400
