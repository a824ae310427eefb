"""Issue 17, the walk: roots and the paths they hold, ignore files, odd names and deep trees,
the same folder from two working directories, and the re-index of the recorded roots.

Every case runs the real CLI (`python -m ragdb`) on real files in a temporary folder and ends
with an intact rag.db whose rows equal a clean run over the same readable files, nothing
written outside the index, and no process left running.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import anyio
import pytest

from ragdb import RagDB
from tests.conftest import REPO, index_rows, one_line_error, run_cli, write_corpus

DOC_A = "# Alpha\n\nAlpha particles are helium nuclei.\n"
DOC_B = "# Beta\n\nBeta decay turns a neutron into a proton.\n"
DOC_C = "# Gamma\n\nGamma rays are photons of high energy.\n"
LONG = "# Long\n\n" + "".join(  # several chunks at 500 characters, one at 2000
    f"Paragraph {i} tells of isotopes and their half-lives, one after another.\n\n"
    for i in range(40))


def index(cwd: Path, *args: str, db: Path, timeout: float = 60
          ) -> subprocess.CompletedProcess[str]:
    """The real `ragdb index` (lexical only), as a user runs it in `cwd`."""
    return run_cli("index", *args, "--db", str(db), "--no-vectors", cwd=cwd, timeout=timeout)


def build(cwd: Path, db: Path, roots: list[str], **options: Any) -> None:
    """An index built in this process, as `ragdb index` in `cwd` builds it: the setting of a
    case and the clean run it is compared with (a CLI run costs a second of start-up)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        with RagDB(db) as rag:
            rag.index(roots, vectors=False, **options)


def clean(tmp_path: Path, files: dict[str, str], roots: list[str], cwd: str = ".",
          **options: Any) -> dict[str, Any]:
    """The rows of a fresh index over exactly these files, laid out and run the same way."""
    base = tmp_path / "clean"
    write_corpus(base, files)
    (base / cwd).mkdir(parents=True, exist_ok=True)
    build(base / cwd, base / "clean.db", roots, **options)
    return index_rows(base / "clean.db")


def root_files(db: Path) -> dict[str, int]:
    """Each root's file count, by the SQL `ragdb roots` runs (sql/roots_list.sql)."""
    with RagDB(db) as rag:
        return {root.path: root.files for root in rag.roots()}


def end_group(process: subprocess.Popen[bytes]) -> None:
    """Stop a server started in a session of its own, with every process in it (its index
    workers): none may outlive the test."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    for tick in range(100):  # ten seconds at most (a zombie nobody reaps stays in the group)
        try:
            os.killpg(process.pid, signal.SIGKILL if tick == 50 else 0)  # anyone left?
        except ProcessLookupError:
            return
        time.sleep(0.1)


def listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def besides_the_index(folder: Path) -> set[str]:
    """Everything in the test's folder but rag.db and its -wal/-shm: what a run must leave."""
    return {path for path in listing(folder) if not path.startswith("rag.db")}


# -- 1. re-indexing one root leaves the others' rows -----------------------------------------

def test_reindexing_dot_keeps_the_rows_of_a_root_outside_it(tmp_path: Path) -> None:
    """With roots `../other` and `.`, `ragdb index .` removed every file of ../other ("1
    removed"), and `ragdb roots` credited `.` with them: `.` does not hold `../`."""
    files = {"proj/a.md": DOC_A, "other/o.md": DOC_B}
    write_corpus(tmp_path, files)
    db = tmp_path / "rag.db"
    proj = tmp_path / "proj"
    build(proj, db, ["../other", "."])
    again = index(proj, ".", db=db)
    assert again.returncode == 0, again.stderr
    assert "0 removed" in again.stdout, again.stdout
    assert root_files(db) == {".": 1, "../other": 1}
    assert index_rows(db) == clean(tmp_path, files, ["../other", "."], "proj")
    assert listing(tmp_path / "other") == {"o.md"}


def test_a_file_root_holds_only_itself(tmp_path: Path) -> None:
    """With roots `docs` and `docs/a.md`, `ragdb index docs/a.md` deleted docs/a.md.txt."""
    files = {"docs/a.md": DOC_A, "docs/a.md.txt": DOC_B}
    write_corpus(tmp_path, files)
    db = tmp_path / "rag.db"
    build(tmp_path, db, ["docs", "docs/a.md"])
    before = besides_the_index(tmp_path)
    again = index(tmp_path, "docs/a.md", db=db)
    assert again.returncode == 0, again.stderr
    assert besides_the_index(tmp_path) == before
    assert "0 removed" in again.stdout, again.stdout
    assert root_files(db) == {"docs": 2, "docs/a.md": 1}
    assert index_rows(db) == clean(tmp_path, files, ["docs", "docs/a.md"])


def test_roots_count_and_remove_on_whole_components_with_glob_characters(
        tmp_path: Path) -> None:
    """A root's files, as `ragdb roots` counts them and `roots --remove` deletes them, are
    the paths under it on component boundaries: `x_` holds neither `xy/` nor `x_.md`, and
    `%`, `_`, `*`, `?`, `[` in a name are plain characters."""
    files = {"x_/a.md": DOC_A, "xy/b.md": DOC_B, "x_.md": DOC_C,
             "p%[*?]/c.md": DOC_C, "pq[*?]/d.md": DOC_A}
    write_corpus(tmp_path, files)
    db = tmp_path / "rag.db"
    roots = ["x_", "xy", "x_.md", "p%[*?]", "pq[*?]"]
    build(tmp_path, db, roots)
    listed = run_cli("roots", "--db", str(db), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count("  1 files, 1 chunks") == len(roots), listed.stdout
    removed = run_cli("roots", "--remove", "x_", "--db", str(db), cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert "1 files" in removed.stdout, removed.stdout
    with RagDB(db) as rag:
        assert rag.remove_root("p%[*?]") == 1
    left = {k: v for k, v in files.items() if not k.startswith(("x_/", "p%"))}
    assert index_rows(db) == clean(tmp_path, left, ["xy", "x_.md", "pq[*?]"])


def test_reindexing_a_root_keeps_a_subfolder_root_its_own_rules_ignore(
        tmp_path: Path) -> None:
    """`docs/sub` indexed by name although docs/.gitignore ignores it: re-indexing `docs`
    does not walk sub/ and must not delete the rows of the `docs/sub` root."""
    files = {"docs/a.md": DOC_A, "docs/.gitignore": "sub/\n", "docs/sub/b.md": DOC_B}
    write_corpus(tmp_path, files)
    db = tmp_path / "rag.db"
    build(tmp_path, db, ["docs", "docs/sub"])
    again = index(tmp_path, "docs", db=db)
    assert again.returncode == 0, again.stderr
    assert "0 removed" in again.stdout, again.stdout
    assert index_rows(db) == clean(tmp_path, files, ["docs", "docs/sub"])
    (tmp_path / "docs" / "sub" / "b.md").unlink()  # gone from disk: its rows go
    gone = index(tmp_path, "docs", db=db)
    assert "1 removed" in gone.stdout, gone.stdout


def test_a_full_rebuild_from_one_root_rebuilds_the_other_roots(tmp_path: Path) -> None:
    """A different chunk size clears every row: given one root, the rows of the other
    recorded roots were gone (the roots still listed, with 0 files). They are walked again,
    each with the options of its last run."""
    files = {"docs/long.md": LONG, "notes/n.md": DOC_B, "notes/skip.txt": DOC_C}
    write_corpus(tmp_path, files)
    db = tmp_path / "rag.db"
    build(tmp_path, db, ["docs"])
    build(tmp_path, db, ["notes"], exclude=["*.txt"])
    done = index(tmp_path, "docs", "--max_chunk_size", "500", db=db)
    assert done.returncode == 0, done.stderr
    assert "3 files: 2 indexed" in done.stdout and "1 excluded" in done.stdout, done.stdout
    assert "full rebuild" in done.stdout, done.stdout
    assert root_files(db) == {"docs": 1, "notes": 1}
    md = {k: v for k, v in files.items() if k.endswith(".md")}
    assert index_rows(db) == clean(tmp_path, md, ["docs", "notes"], max_chunk_size=500)


# -- 4. the same folder from another working directory ---------------------------------------

def test_the_same_folder_from_a_subfolder_keeps_its_stored_names(tmp_path: Path) -> None:
    """Indexed as proj/docs from tmp and again as docs from tmp/proj, every file was once
    stored twice (every hit appeared twice). Run from a subfolder of the folder the index was
    built from, ragdb works from that folder, as git does: the files keep their stored names,
    nothing is stored twice and nothing changes."""
    files = {"proj/docs/a.md": DOC_A, "proj/docs/b.md": DOC_B}
    write_corpus(tmp_path, files)
    db = tmp_path / "rag.db"
    build(tmp_path, db, ["proj/docs"])
    before, there = index_rows(db), besides_the_index(tmp_path)
    for args in (["docs"], []):
        done = index(tmp_path / "proj", *args, db=db)
        assert done.returncode == 0, done.stderr
        assert "0 indexed" in done.stdout and "2 unchanged" in done.stdout, done.stdout
    assert besides_the_index(tmp_path) == there
    assert index_rows(db) == before == clean(tmp_path, files, ["proj/docs"])


def test_a_copied_project_with_its_index_reindexes_in_place(tmp_path: Path) -> None:
    """Not the same files: a copy of a project, rag.db included, indexes where it lies."""
    write_corpus(tmp_path / "proj", {"docs/a.md": DOC_A})
    build(tmp_path / "proj", Path("rag.db"), ["docs"])
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(tmp_path / "proj"), str(copy)], check=True)
    (copy / "docs" / "b.md").write_text(DOC_B, "utf-8")
    done = index(copy, db=Path("rag.db"))
    assert done.returncode == 0, done.stderr
    assert "1 indexed" in done.stdout and "1 unchanged" in done.stdout, done.stdout
    assert index_rows(copy / "rag.db") == clean(
        tmp_path, {"docs/a.md": DOC_A, "docs/b.md": DOC_B}, ["docs"])


# -- 5. ignore files are read like any other file --------------------------------------------

def test_special_and_outside_ignore_files_are_skipped_and_named(tmp_path: Path) -> None:
    """A FIFO .gitignore hung `ragdb index` for ever and a .gitignore linked to /dev/zero
    grew without bound (9.6 GB in 20 s); .git/info/exclude likewise. Read as any file: a
    regular file (a link inside the root to a FIFO is not one), and a link only to a target
    within the root. Each is named on stderr; a regular .gitignore still counts."""
    repo = tmp_path / "repo"
    files = {"repo/a.md": DOC_A, "repo/fifo/b.md": DOC_B, "repo/zero/c.md": DOC_C,
             "repo/out/d.md": DOC_A, "repo/link/f.md": DOC_C, "repo/kept/e.md": DOC_B,
             "repo/kept/.gitignore": "x.md\n", "repo/kept/x.md": DOC_C}
    write_corpus(tmp_path, files)
    (repo / ".git" / "info").mkdir(parents=True)
    os.mkfifo(repo / ".git" / "info" / "exclude")
    os.mkfifo(repo / "fifo" / ".gitignore")
    (repo / "zero" / ".gitignore").symlink_to("/dev/zero")
    (tmp_path / "outside.txt").write_text("d.md\n", "utf-8")
    (repo / "out" / ".gitignore").symlink_to(tmp_path / "outside.txt")
    (repo / "link" / ".gitignore").symlink_to("../fifo/.gitignore")
    db = tmp_path / "rag.db"
    before = besides_the_index(tmp_path)
    done = index(tmp_path, "repo", db=db, timeout=60)
    assert done.returncode == 0, done.stderr
    assert besides_the_index(tmp_path) == before
    for path, why in [(".git/info/exclude", "not a regular file"),
                      ("fifo/.gitignore", "not a regular file"),
                      ("link/.gitignore", "not a regular file"),
                      ("zero/.gitignore", "symlink outside the root"),
                      ("out/.gitignore", "symlink outside the root")]:
        assert f"skipped repo/{path}: {why}\n" in done.stderr, done.stderr
    assert "3 not a regular file, 2 symlink outside the root" in done.stdout, done.stdout
    readable = {k: v for k, v in files.items() if k != "repo/kept/x.md"}
    assert index_rows(db) == clean(tmp_path, readable, ["repo"])


# -- 6. names that are not UTF-8 -------------------------------------------------------------

def test_names_that_are_not_utf8_are_skipped_and_named(tmp_path: Path) -> None:
    """One such name lost the whole run (UnicodeEncodeError; the index was then empty)."""
    files = {"proj/a.md": DOC_A, "proj/sub/b.md": DOC_B}
    write_corpus(tmp_path, files)
    proj = os.fsencode(tmp_path / "proj")
    with open(proj + b"/bad\xffname.md", "w", encoding="utf-8") as handle:
        handle.write(DOC_C)
    os.mkdir(proj + b"/dir\xfe")
    with open(proj + b"/dir\xfe/c.md", "w", encoding="utf-8") as handle:
        handle.write(DOC_C)
    db = tmp_path / "rag.db"
    before = besides_the_index(tmp_path)
    done = index(tmp_path, "proj", db=db)
    assert done.returncode == 0, done.stderr
    assert besides_the_index(tmp_path) == before
    assert "Traceback" not in done.stderr
    assert "skipped proj/bad\\xffname.md: name not UTF-8" in done.stderr, done.stderr
    assert "skipped proj/dir\\xfe: name not UTF-8" in done.stderr, done.stderr
    assert "2 name not UTF-8" in done.stdout, done.stdout
    assert index_rows(db) == clean(tmp_path, files, ["proj"])
    root = one_line_error(index(tmp_path, os.fsdecode(proj + b"/dir\xfe"), db=db))
    assert "dir\\xfe" in root and "not UTF-8" in root, root
    assert index_rows(db) == clean(tmp_path, files, ["proj"])  # nothing lost


def test_watch_survives_a_name_that_is_not_utf8(tmp_path: Path) -> None:
    """`--watch` died with WatchfilesRustInternalError on such a name; it keeps watching."""
    write_corpus(tmp_path, {"proj/a.md": DOC_A})
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragdb", "index", "proj", "--no-vectors", "--watch",
         "--db", "rag.db"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONUNBUFFERED": "1",
                        "RAGDB_MODELS_DIR": str(REPO / "data" / "models")})
    try:
        deadline = time.monotonic() + 60
        assert proc.stderr is not None
        said = ""
        while "watching proj" not in said and time.monotonic() < deadline:
            said += proc.stderr.readline()
        time.sleep(1.5)  # the watcher starts just after it says so
        with open(os.fsencode(tmp_path / "proj") + b"/bad\xff.md", "w") as handle:
            handle.write(DOC_B)
        time.sleep(1.5)
        (tmp_path / "proj" / "c.md").write_text(DOC_C, "utf-8")
        paths: set[str] = set()
        while "proj/c.md" not in paths and time.monotonic() < deadline:
            time.sleep(0.3)
            with closing(sqlite3.connect(tmp_path / "rag.db")) as conn:
                paths = {r[0] for r in conn.execute("SELECT path FROM files")}
        assert paths == {"proj/a.md", "proj/c.md"}
        assert proc.poll() is None, proc.stderr.read()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode in (0, 130)
    assert "Traceback" not in err and "WatchfilesRustInternalError" not in err, err
    assert "bad\\xff.md: name not UTF-8" in err, err
    assert index_rows(tmp_path / "rag.db") == clean(
        tmp_path, {"proj/a.md": DOC_A, "proj/c.md": DOC_C}, ["proj"])


def test_http_index_runs_return_over_a_fifo_gitignore_and_an_odd_name(tmp_path: Path) -> None:
    """Over HTTP a FIFO .gitignore kept `POST /-/ragdb/index` from ever returning (every
    later POST got 409), and a name that is not UTF-8 made it a 500. A real `ragdb serve`."""
    files = {"proj/a.md": DOC_A, "proj/sub/b.md": DOC_B}
    write_corpus(tmp_path, files)
    build(tmp_path, Path("rag.db"), ["proj"])
    os.mkfifo(tmp_path / "proj" / "sub" / ".gitignore")
    with open(os.fsencode(tmp_path / "proj") + b"/bad\xff.md", "w") as handle:
        handle.write(DOC_C)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "ragdb", "serve", "--db", "rag.db", "--port", str(port)],
        cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "RAGDB_MODELS_DIR": str(REPO / "data" / "models")})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text(errors="replace")
            try:
                with urlopen(base + "/-/ragdb/status", timeout=5):
                    break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        for _ in range(2):  # the second is not 409: the first one ended
            request = Request(base + "/-/ragdb/index", data=b"{}", method="POST",
                              headers={"Content-Type": "application/json"})
            with urlopen(request, timeout=60) as reply:
                assert reply.status == 200
                stats = json.loads(reply.read())["stats"]
            assert stats["files_unchanged"] == 2, stats
            assert ["proj/bad\\xff.md", "name not UTF-8"] in stats["skipped_paths"], stats
            assert ["proj/sub/.gitignore", "not a regular file"] in stats["skipped_paths"]
    finally:
        end_group(server)
        log.close()
    assert index_rows(tmp_path / "rag.db") == clean(tmp_path, files, ["proj"])


# -- 7. a deep tree ---------------------------------------------------------------------------

DEPTH = 1100  # os.walk recursed once per level: Python's limit is 1000 frames


def deep_tree(base: Path) -> None:
    """base/proj/a.md and base/proj/d/d/.../b.md, DEPTH folders deep, made one mkdir at a
    time (pathlib's mkdir(parents=True) and os.makedirs recurse too)."""
    write_corpus(base / "proj", {"a.md": DOC_A})
    folder = str(base / "proj")
    for _ in range(DEPTH):
        folder += "/d"
        os.mkdir(folder)
    with open(folder + "/b.md", "w", encoding="utf-8") as handle:
        handle.write(DOC_B)


def remove_tree(top: Path) -> None:
    """Remove a tree without recursion: pytest's clean-up of old temporary folders (shutil
    rmtree) would fail on it, in this session or a later one."""
    stack: list[tuple[str, bool]] = [(str(top), False)]
    while stack:
        path, emptied = stack.pop()
        if emptied:
            os.rmdir(path)
        elif os.path.isdir(path) and not os.path.islink(path):
            stack.append((path, True))
            stack.extend((entry.path, False) for entry in os.scandir(path))
        else:
            os.unlink(path)


def test_a_tree_deeper_than_the_recursion_limit(tmp_path: Path) -> None:
    """About 990 levels lost the run in a RecursionError (os.walk recurses)."""
    try:
        deep_tree(tmp_path)
        db = tmp_path / "rag.db"
        done = index(tmp_path, "proj", db=db)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "2 indexed" in done.stdout, done.stdout
        found = index_rows(db)
        assert [path for path, _sha, _size in found["files"]] == [
            "proj/a.md", "proj/" + "d/" * DEPTH + "b.md"]
        deep_tree(tmp_path / "clean")
        build(tmp_path / "clean", tmp_path / "clean" / "clean.db", ["proj"])
        assert found == index_rows(tmp_path / "clean" / "clean.db")
    finally:
        for top in (tmp_path / "proj", tmp_path / "clean" / "proj"):
            if top.exists():
                remove_tree(top)


# -- 8. a pathological ignore pattern ----------------------------------------------------------

def test_a_pathological_gitignore_pattern_costs_little(tmp_path: Path) -> None:
    """`**/a/**/a/...` fourteen times over a 30-deep tree of `a` folders was still matching
    after 45 s: pathspec's regex backtracks through every way to spread the `**`s over the
    folders before it fails (here on the `z` the pattern ends with). Now each group between
    two `**` is placed once. (git's own wildmatch backtracks too: `git ls-files --others
    --exclude-standard` took 28 s on this tree.) The 60 s limit only guards against the
    hang: the run takes about a second."""
    files = {"repo/f.md": DOC_A, "repo/.gitignore": "/".join(["**", "a"] * 14) + "/**/z\n"}
    for depth in range(1, 31):
        files["repo/" + "a/" * depth + "f.md"] = DOC_B
    for depth in (5, 20):  # z/ under 5 a/ folders is kept, under 20 it is ignored
        files["repo/" + "a/" * depth + "z/g.md"] = DOC_C
    write_corpus(tmp_path, files)
    db = tmp_path / "rag.db"
    before = besides_the_index(tmp_path)
    done = index(tmp_path, "repo", db=db, timeout=60)
    assert done.returncode == 0, done.stderr
    assert besides_the_index(tmp_path) == before
    ignored = "repo/" + "a/" * 20 + "z/g.md"
    expected = {path for path in files if path.endswith(".md") and path != ignored}
    assert {path for path, _sha, _size in index_rows(db)["files"]} == expected
    assert index_rows(db) == clean(
        tmp_path, {k: v for k, v in files.items() if k != ignored}, ["repo"])


def test_ignore_patterns_match_as_pathspec_reads_them() -> None:
    """The linear-cost matcher gives pathspec's verdict (ignored, re-included, or neither,
    with its directory-mark order) on random patterns of stars, "**", classes, escapes,
    anchors, folder patterns and negations over random paths of files and folders."""
    import random

    import pathspec

    from ragdb.ignore_rules import _Spec

    rnd = random.Random(17)
    atoms = ["a", "b", "ab", "*", "?", "**", "[ab]", "[!a]", "a*", "*b", "a*b", "\\*", "*a*",
             "[]a]", "c"]
    names = ["a", "b", "ab", "ba", "aab", "c", "*", "abc", "bb"]

    def pattern() -> str:
        text = "/".join(rnd.choice(atoms) if rnd.random() < .7 else
                        rnd.choice(atoms) + rnd.choice(atoms)
                        for _ in range(rnd.randint(1, 4)))
        return ("/" if rnd.random() < .2 else "") + text + ("/" if rnd.random() < .25 else "")

    compared = 0
    for _ in range(1500):
        lines = [("!" if rnd.random() < .25 else "") + pattern()
                 for _ in range(rnd.randint(1, 4))]
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(lines)
        except ValueError:
            continue
        ours = _Spec.of(spec)
        assert all(p.fallback is None for p in ours.patterns), lines
        for _ in range(12):
            path = "/".join(rnd.choice(names) for _ in range(rnd.randint(1, 5)))
            path += "/" if rnd.random() < .4 else ""
            assert ours.included(path) == spec.check_file(path).include, (lines, path)
            compared += 1
    assert compared > 15000


def test_a_fresh_git_repository_is_indexed(tmp_path: Path) -> None:
    """`git init` writes a .git/info/exclude of comments only: the ignore rules then combined
    no pattern into an empty regex, which matches every path, and nothing was indexed."""
    files = {"repo/a.md": DOC_A, "repo/src/b.md": DOC_B}
    write_corpus(tmp_path, files)
    write_corpus(tmp_path / "repo" / ".git", {"info/exclude": (  # git's own template
        "# git ls-files --others --exclude-from=.git/info/exclude\n"
        "# Lines that start with '#' are comments.\n")})
    db = tmp_path / "rag.db"
    done = index(tmp_path, "repo", db=db)
    assert done.returncode == 0, done.stderr
    assert "2 indexed" in done.stdout, done.stdout
    assert index_rows(db) == clean(tmp_path, files, ["repo"])


# -- 11. one root in two spellings -----------------------------------------------------------

def test_the_same_root_in_two_spellings_is_one_root(tmp_path: Path) -> None:
    """`ragdb index a "$PWD/a"` (or `a a/../a`) failed with "UNIQUE constraint failed:
    files.path" and indexed nothing; so did a subfolder root spelled from elsewhere."""
    files = {"a/x.md": DOC_A, "a/sub/y.md": DOC_B}
    write_corpus(tmp_path, files)
    db = tmp_path / "rag.db"
    done = index(tmp_path, "a", str(tmp_path / "a"), "a/../a", "./a/",
                 str(tmp_path / "a" / "sub"), db=db)
    assert done.returncode == 0, done.stderr
    assert "2 files: 2 indexed" in done.stdout, done.stdout
    assert root_files(db) == {"a": 2, "a/sub": 1}
    assert index_rows(db) == clean(tmp_path, files, ["a"])


# -- 16a. the recorded chunk size is kept ------------------------------------------------------

def test_a_plain_reindex_keeps_the_recorded_chunk_size(tmp_path: Path) -> None:
    """Built with --max_chunk_size 500, a plain `ragdb index` rebuilt it at 2000."""
    files = {"docs/long.md": LONG}
    write_corpus(tmp_path, files)
    db = tmp_path / "rag.db"
    build(tmp_path, db, ["docs"], max_chunk_size=500)
    built = index_rows(db)
    again = index(tmp_path, db=db)
    assert again.returncode == 0, again.stderr
    assert "full rebuild" not in again.stdout and "1 unchanged" in again.stdout, again.stdout
    assert index_rows(db) == built == clean(tmp_path, files, ["docs"], max_chunk_size=500)
    assert max(len(chunk[3]) for chunk in built["chunks"]) <= 500


def test_the_mcp_index_tool_keeps_the_recorded_chunk_size(tmp_path: Path) -> None:
    """The MCP `index` tool rebuilt an index of --max_chunk_size 500 at 2000."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    files = {"docs/long.md": LONG}
    write_corpus(tmp_path, files)
    build(tmp_path, Path("rag.db"), ["docs"], max_chunk_size=500)
    built = index_rows(tmp_path / "rag.db")
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "HOME", "LANG", "VIRTUAL_ENV", "PYTHONPATH")}
    env["RAGDB_MODELS_DIR"] = str(REPO / "data" / "models")
    params = StdioServerParameters(command=sys.executable, args=["-m", "ragdb", "mcp", "--db",
                                                                 "rag.db"], env=env, cwd=tmp_path)

    async def call() -> Any:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("index", {})

    result = anyio.run(call)
    assert not result.is_error, result.content
    assert result.structured_content["files_unchanged"] == 1
    assert index_rows(tmp_path / "rag.db") == built


# -- 16b. a recorded root that is gone ---------------------------------------------------------

def test_a_gone_recorded_root_says_how_to_forget_it(tmp_path: Path) -> None:
    files = {"docs/a.md": DOC_A, "old/b.md": DOC_B}
    write_corpus(tmp_path, files)
    db = tmp_path / "rag.db"
    build(tmp_path, db, ["docs", "old"])
    before = index_rows(db)
    (tmp_path / "old" / "b.md").unlink()
    (tmp_path / "old").rmdir()
    line = one_line_error(index(tmp_path, db=db))
    assert "old" in line and "ragdb roots --remove old" in line, line
    assert index_rows(db) == before
    with RagDB(db) as rag:
        rag.remove_root("old")
    assert index(tmp_path, db=db).returncode == 0
    assert index_rows(db) == clean(tmp_path, {"docs/a.md": DOC_A}, ["docs"])
