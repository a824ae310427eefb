"""Defects the third first-hour walkthrough found, each on real things: the CLI as a
subprocess, a real rag.db (SQLite, sqlite-vec), the real parsers."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import index_rows, run_cli


def _indexed(db: Path) -> list[str]:
    return [path for path, _sha, _size in index_rows(db)["files"]]


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_an_absolute_exclude_or_include_is_read_under_the_root(tmp_path: Path) -> None:
    """`ragdb index proj --exclude $PWD/proj/tests/*` (a path as the shell completes it)
    excluded nothing: an absolute glob is read as the path under the root it lies in, as the
    search filters read one; a folder named without a trailing '/' is the folder, and a file
    named by its absolute path is that file, not every file of its name."""
    proj = tmp_path / "proj"
    _write(proj, {"src/app.py": "def run():\n    return 1\n",
                  "src/setup.py": "def build():\n    return 2\n",
                  "setup.py": "def setup():\n    return 3\n",
                  "tests/test_app.py": "def test_run():\n    assert True\n",
                  "vendor/lib.py": "def lib():\n    return 4\n",
                  "poetry.lock": "[[package]]\nname = \"x\"\n"})
    done = run_cli("index", "proj", "--no-vectors",
                   "--exclude", f"{proj}/tests/*", "--exclude", f"{proj}/vendor",
                   "--exclude", f"{proj}/setup.py", "--include", f"{proj}/poetry.lock",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    assert _indexed(db) == ["proj/poetry.lock", "proj/src/app.py", "proj/src/setup.py"]
    # Re-indexing the recorded root walks with the same (absolute) globs.
    (proj / "tests" / "test_more.py").write_text("def test_more():\n    pass\n")
    again = run_cli("index", "--no-vectors", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert _indexed(db) == ["proj/poetry.lock", "proj/src/app.py", "proj/src/setup.py"]
