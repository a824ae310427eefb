"""Issue 37, the walk: what a symlink leads to, one folder under two names, ragdb's own files,
an ignore file counted once, and skipped files named once.

Every case runs the real CLI (`python -m ragdb`) on real files and symlinks in a temporary
folder and ends with an intact rag.db whose rows equal a clean run over the files that should
be indexed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.conftest import index_rows, run_cli, write_corpus
from tests.test_reliability_walk import DOC_A, DOC_B, DOC_C, clean, index

SECRET = "supersecretvalue123"


def searched(cwd: Path, db: Path, query: str) -> str:
    """What `ragdb search` finds (lexical: no model), as a user would see it."""
    found = run_cli("search", query, "--db", str(db), "--mode", "lexical", cwd=cwd)
    assert found.returncode == 0, found.stderr
    return found.stdout


def credentials_behind_links(proj: Path) -> None:
    """Credentials, and links to them whose own names say nothing."""
    write_corpus(proj, {"a.md": DOC_A, ".env": f"API_KEY={SECRET}\n",
                        "keys/id_rsa": f"{SECRET} rsa\n", ".hidden/token.txt": f"{SECRET} tok\n",
                        ".ssh/config": f"Host x # {SECRET} ssh\n"})
    (proj / "settings.txt").symlink_to(".env")
    (proj / "key.txt").symlink_to("keys/id_rsa")
    (proj / "tok.md").symlink_to(".hidden/token.txt")
    (proj / "sshdir").symlink_to(".ssh", target_is_directory=True)
    (proj / "hid").symlink_to(".hidden", target_is_directory=True)


# -- 1. a link is judged by what it leads to -------------------------------------------------

def test_a_link_with_a_harmless_name_does_not_index_a_credential(tmp_path: Path) -> None:
    """`ln -s .env settings.txt`, `ln -s keys/id_rsa key.txt`, `ln -s .hidden/token.txt
    tok.md`: the summary counted the credentials, yet a search found the key in each link."""
    proj = tmp_path / "proj"
    credentials_behind_links(proj)
    outside = tmp_path / "outside"
    write_corpus(outside, {"id_ed25519": f"{SECRET} outside\n", ".aws/notes.md": DOC_C})
    (proj / "ext_key.txt").symlink_to(outside / "id_ed25519")
    (proj / "aws").symlink_to(outside / ".aws", target_is_directory=True)
    db = tmp_path / "rag.db"
    done = index(tmp_path, "proj", db=db)
    assert done.returncode == 0, done.stderr
    assert "4 may hold secrets, 1 symlink into a hidden folder" in done.stdout, done.stdout
    assert SECRET not in searched(tmp_path, db, SECRET)
    expected = clean(tmp_path, {"proj/a.md": DOC_A}, ["proj"])
    assert index_rows(db) == expected

    # Followed, a link to a hidden folder is still not walked, nor a credential out of the root.
    followed = index(tmp_path, "proj", "--follow-symlinks", db=db)
    assert followed.returncode == 0, followed.stderr
    assert "5 may hold secrets, 4 symlink into a hidden folder" in followed.stdout, followed.stdout
    assert SECRET not in searched(tmp_path, db, SECRET)
    assert index_rows(db) == clean(tmp_path, {"proj/a.md": DOC_A}, ["proj"],
                                   follow_symlinks=True)

    # --hidden walks into hidden folders: then a link there is read as its target is.
    hidden = index(tmp_path, "proj", "--hidden", db=db)
    assert hidden.returncode == 0, hidden.stderr
    paths = [path for path, _sha, _size in index_rows(db)["files"]]
    assert "proj/tok.md" in paths and "proj/.hidden/token.txt" in paths
    assert "proj/settings.txt" not in paths and "proj/key.txt" not in paths


def test_an_include_naming_the_target_lets_the_link_in(tmp_path: Path) -> None:
    """--include '.env' indexes .env, and so a link to it: the rule judges the target."""
    proj = tmp_path / "proj"
    write_corpus(proj, {"a.md": DOC_A, ".env": f"API_KEY={SECRET}\n"})
    (proj / "settings.txt").symlink_to(".env")
    db = tmp_path / "rag.db"
    done = index(tmp_path, "proj", "--include", ".env", db=db)
    assert done.returncode == 0, done.stderr
    paths = [path for path, _sha, _size in index_rows(db)["files"]]
    assert paths == ["proj/.env", "proj/a.md", "proj/settings.txt"]


def test_an_include_naming_only_the_link_does_not_let_a_credential_in(tmp_path: Path) -> None:
    """`--exclude '*' --include '*.py' --include '*.txt'` (the docs' way to pick file types):
    `notes.txt -> keys/deploy.pem` and `config.txt -> a.txt -> .env` were indexed, the private
    key and the .env in rag.db, because an --include naming the link skipped the target's
    rule. An --include lets a credential in only where it names the credential itself."""
    proj = tmp_path / "proj"
    write_corpus(proj, {"a.md": DOC_A, ".env": f"API_KEY={SECRET}\n",
                        "keys/deploy.pem": f"-----BEGIN RSA PRIVATE KEY-----\n{SECRET}\n",
                        "plain.txt": "nothing to hide\n"})
    (proj / "notes.txt").symlink_to("keys/deploy.pem")
    (proj / "b.txt").symlink_to(".env")
    (proj / "config.txt").symlink_to("b.txt")
    db = tmp_path / "rag.db"
    done = index(tmp_path, "proj", "--exclude", "*", "--include", "*.txt", db=db)
    assert done.returncode == 0, done.stderr
    assert "3 may hold secrets" in done.stdout, done.stdout
    paths = [path for path, _sha, _size in index_rows(db)["files"]]
    assert paths == ["proj/plain.txt"]
    assert SECRET not in searched(tmp_path, db, SECRET)
    assert SECRET.encode() not in db.read_bytes()


# -- 3. one folder under two names -------------------------------------------------------------

def test_a_folder_given_again_through_a_symlink_is_indexed_once(tmp_path: Path) -> None:
    """`ln -s loop rootlink; ragdb index loop rootlink` stored every file twice."""
    files = {"loop/a.md": DOC_A, "loop/sub/b.md": DOC_B}
    write_corpus(tmp_path, files)
    (tmp_path / "rootlink").symlink_to("loop", target_is_directory=True)
    db = tmp_path / "rag.db"
    done = index(tmp_path, "loop", "rootlink", db=db)
    assert done.returncode == 0, done.stderr
    assert "2 files: 2 indexed" in done.stdout, done.stdout
    assert index_rows(db) == clean(tmp_path, files, ["loop"])
    roots = run_cli("roots", "--db", str(db), cwd=tmp_path)
    assert [line.split()[0] for line in roots.stdout.splitlines()] == ["loop"], roots.stdout
    # Later, through the link alone (or a subfolder of it): the files keep their names.
    for args in (["rootlink"], ["rootlink/sub"], [str(tmp_path / "rootlink")]):
        again = index(tmp_path, *args, db=db)
        assert again.returncode == 0, again.stderr
        assert "0 indexed" in again.stdout and "0 removed" in again.stdout, again.stdout
        assert index_rows(db) == clean(tmp_path, files, ["loop"])

    # A subfolder reached through the link is the same files as well.
    other = tmp_path / "other.db"
    done = index(tmp_path, "loop", "rootlink/sub", db=other)
    assert done.returncode == 0, done.stderr
    assert index_rows(other) == clean(tmp_path, files, ["loop"])


# -- 4. ragdb's own files ------------------------------------------------------------------

def test_ragdb_never_indexes_its_own_files(tmp_path: Path) -> None:
    """`cd repo && ragdb index . && ragdb index .` indexed data/processed/rag.db-wal and
    rag.db.lock (skipped as binary on every later run); the models and cache folders and
    saved answers and results are ragdb's too, wherever they lie and by whatever name they
    are reached."""
    repo = tmp_path / "repo"
    files = {"src/a.md": DOC_A, "docs/b.md": DOC_B}
    write_corpus(repo, files)
    write_corpus(repo, {"models/all-MiniLM/README.md": DOC_C,
                        "cache/ragdb/notes.md": DOC_C,
                        "data/processed/outputs/answers/answer-1.json": '{"answer": "Gamma"}\n',
                        "data/outputs/answers/answer-2.json": '{"answer": "Gamma rays"}\n'})
    (repo / "src" / "index.txt").symlink_to("../data/processed/rag.db")
    env = {"RAGDB_MODELS_DIR": str(repo / "models"), "XDG_CACHE_HOME": str(repo / "cache"),
           "RAGDB_DB": ""}
    for run in range(2):
        done = run_cli("index", ".", "--no-vectors", cwd=repo, env=env)
        assert done.returncode == 0, done.stderr
        assert "2 files" in done.stdout and "0 skipped" in done.stdout, done.stdout
        assert done.stderr == "", done.stderr
    assert index_rows(repo / "data" / "processed" / "rag.db") == clean(
        tmp_path, {f"repo/{rel}": text for rel, text in files.items()}, ["."], "repo")


# -- 13. an ignore file that cannot be read is one entry ------------------------------------

def test_a_gitignore_that_is_a_fifo_or_a_link_out_is_counted_once(tmp_path: Path) -> None:
    """A FIFO .gitignore was counted twice: "not a regular file" and "ignore rules" (4
    outcomes for 3 entries)."""
    files = {"repo/a.md": DOC_A, "repo/out/b.md": DOC_B}
    write_corpus(tmp_path, files)
    os.mkfifo(tmp_path / "repo" / ".gitignore")
    (tmp_path / "rules").write_text("b.md\n", "utf-8")
    (tmp_path / "repo" / "out" / ".gitignore").symlink_to(tmp_path / "rules")
    db = tmp_path / "rag.db"
    done = index(tmp_path, "repo", db=db)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("4 files: 2 indexed, 0 unchanged, 0 removed, 2 skipped "
                                  "(1 not a regular file, 1 symlink outside the root);"), \
        done.stdout
    assert index_rows(db) == clean(tmp_path, files, ["repo"])


# -- 16. skipped files are named once ------------------------------------------------------

def test_a_skip_is_named_by_the_run_that_first_sees_it(tmp_path: Path) -> None:
    """Every no-op `ragdb index` named the same skipped files again (seven egg-info lines on
    `requests`). Counted every time; named when new or changed, or with --verbose."""
    files = {"p/a.md": DOC_A}
    write_corpus(tmp_path, files)
    write_corpus(tmp_path, {"p/pkg.egg-info/PKG-INFO": "Metadata-Version: 2.1\nName: pkg\n"})
    (tmp_path / "p" / "bad.txt").write_bytes(b"\xff\xfe not UTF-8\n")
    (tmp_path / "p" / "gone.md").symlink_to("nowhere.md")
    time.sleep(1.1)  # runs are recorded to the second: these files are older than the first
    db = tmp_path / "rag.db"
    names = {"skipped p/bad.txt: not UTF-8", "skipped p/gone.md: broken symlink",
             "skipped p/pkg.egg-info/PKG-INFO: generated"}

    def named(*args: str) -> set[str]:
        done = index(tmp_path, "p", *args, db=db)
        assert done.returncode == 0, done.stderr
        assert "3 skipped (1 broken symlink, 1 generated, 1 not UTF-8)" in done.stdout
        return {line.removeprefix("ragdb: ") for line in done.stderr.splitlines()}

    assert named() == names
    assert named() == set()
    assert named("--verbose") == names
    (tmp_path / "p" / "bad.txt").write_bytes(b"\xff\xfe still not UTF-8\n")
    assert named() == {"skipped p/bad.txt: not UTF-8"}
    time.sleep(1.1)  # (a file changed in the second a run began is named by the next one too)
    assert named("--hidden") == names  # other walk options: the skips are theirs afresh
    assert index_rows(db) == clean(tmp_path, files, ["p"], hidden=True)
    # (unchanged and the same options again: nothing is named)
    assert named("--hidden") == set()
    # a file that was indexed and is now skipped loses its rows: always named
    (tmp_path / "p" / "a.md").write_bytes(b"\xff\xfe")
    done = index(tmp_path, "p", "--hidden", db=db)
    assert "skipped p/a.md: not UTF-8" in done.stderr and "1 removed" in done.stdout
