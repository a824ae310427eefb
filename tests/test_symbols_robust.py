"""Definitions and references under bad input and interruption (issue 41): a name defined
10,000 times read whole, Unicode identifiers, a parse that runs out of time, generated files,
a cycle of declared types, and kill -9 at several moments of a real `ragdb index` run: the
symbols stay in step with the chunks (the old state or the new, never a mix)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ragdb import RagDB, syntax_trees
from ragdb.symbols import SYMBOL_LANGUAGES, SYMBOLS_VERSION
from tests.conftest import extract_slice, models_dir_without_writer, run_cli, write_corpus
from tests.test_symbols import PKG


def rows(db: Path, query: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(query).fetchall()


def ragdb(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_cli(*args, "--db", "rag.db", cwd=work)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_references_of_a_name_defined_ten_thousand_times(tmp_path: Path) -> None:
    """Every definition's uses are looked at, not the first thousand's: the count says how
    many in all, and a page at a time; fast enough for a whole process."""
    body = "".join(f"class C{i}:\n    def run(self):\n        return {i}\n\n"
                   for i in range(10_000))
    calls = "".join(f"C{i}().run()\n" for i in range(0, 10_000, 3))
    write_corpus(tmp_path, {"src/many.py": body, "src/use.py": "from many import *\n\n" + calls})
    assert run_cli("index", "src", "--no-vectors", "--db", "rag.db", cwd=tmp_path
                   ).returncode == 0
    started = time.perf_counter()
    first = ragdb(tmp_path, "references", "run")
    assert time.perf_counter() - started < 10
    assert len(first.stdout.splitlines()) == 50
    assert first.stderr.strip().endswith("showing 1-50 of 3,334; --offset 50 for more")
    last = ragdb(tmp_path, "references", "run", "--offset", "3330")
    assert last.stdout.splitlines() == [f"src/use.py:{3 + n}: call many.C{3 * n}.run (in use)"
                                        for n in range(3330, 3334)]
    callers = ragdb(tmp_path, "callers", "run")
    assert callers.stdout.splitlines() == ["src/use.py:3: module use (3334 calls)"]


def test_unicode_identifiers_are_found_and_used(tmp_path: Path) -> None:
    write_corpus(tmp_path, {
        "src/shop/__init__.py": "",
        "src/shop/kasse.py": ("class Größe:\n    def maß(self) -> int:\n        return 1\n\n\n"
                              "def カート() -> Größe:\n    return Größe()\n"),
        "src/shop/use.py": ("from shop.kasse import Größe, カート\n\n\n"
                            "def zähle(g: Größe) -> int:\n    カート().maß()\n"
                            "    return g.maß()\n"),
    })
    assert run_cli("index", "src", "--no-vectors", "--db", "rag.db", cwd=tmp_path
                   ).returncode == 0
    assert ragdb(tmp_path, "definition", "Größe.maß").stdout.splitlines() == [
        "src/shop/kasse.py:2: method shop.kasse.Größe.maß"]
    refs = ragdb(tmp_path, "references", "maß").stdout.splitlines()
    assert refs == ["src/shop/use.py:5: call shop.kasse.カート.().maß (in shop.use.zähle)",
                    "src/shop/use.py:6: call shop.kasse.Größe.maß (in shop.use.zähle)"]
    text = (tmp_path / "src/shop/use.py").read_text()
    got = RagDB(tmp_path / "rag.db").references("maß").places
    assert [text[p.first:p.last] for p in got] == ["maß", "maß"]  # char offsets, not bytes
    assert ragdb(tmp_path, "callers", "カート").stdout.splitlines() == [
        "src/shop/use.py:5: function shop.use.zähle"]


def test_a_parse_out_of_time_is_counted_and_named(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree-sitter parse past its time budget: the file has no symbols, is counted and
    named as a parse fallback, and its chunks are indexed as text."""
    write_corpus(tmp_path, {"src/ok.py": "def fine():\n    return 1\n",
                            "src/slow.go": "package slow\n\nfunc Slow() int { return 1 }\n"})
    monkeypatch.setattr(syntax_trees, "PARSE_SECONDS", -1.0)  # every parse is late
    with RagDB(tmp_path / "rag.db") as rag:
        stats = rag.index([tmp_path / "src"], vectors=False).stats
    db = tmp_path / "rag.db"
    assert stats.parse_fallbacks == 1 and [p.rsplit("/", 1)[-1] for p in
                                           stats.fallback_paths] == ["slow.go"]
    assert rows(db, "SELECT min(c.kind) FROM chunks c JOIN files f ON f.id = c.file_id "
                    "WHERE f.path LIKE '%slow.go'") == [("text",)]
    assert [r[0] for r in rows(db, "SELECT DISTINCT f.path FROM symbols s JOIN files f "
                                   "ON f.id = s.file_id")] == [
        p for (p,) in rows(db, "SELECT path FROM files WHERE path LIKE '%ok.py'")]


def test_generated_and_pathological_files(tmp_path: Path) -> None:
    """A generated Go file is left out by the walk and named; taken in by --include, its
    symbols are read. Python nested past its own parser's limit, or chained past the stack, is
    read from tree-sitter's tree instead (test_python_fallback), never a traceback."""
    generated = "// Code generated by protoc-gen-go. DO NOT EDIT.\n\npackage pb\n\n" + "".join(
        f"type M{i} struct {{\n\tF{i} int\n}}\n\nfunc (m *M{i}) GetF() int {{ return m.F{i} }}\n\n"
        for i in range(300))
    write_corpus(tmp_path, {
        "src/pb/gen.pb.go": generated,
        "src/deep.py": "x = " + "(\n" * 5000 + "1" + ")\n" * 5000,
        "src/chain.py": "def f(a):\n    return (a\n" + "        .b\n" * 20_000 + "        .c())\n",
        "src/ok.py": "def fine():\n    return 1\n",
    })
    done = run_cli("index", "src", "--no-vectors", "--db", "rag.db", cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "skipped src/pb/gen.pb.go: generated" in done.stderr
    assert "parse fallback" not in done.stderr
    db = tmp_path / "rag.db"
    assert rows(db, "SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
                    "WHERE f.path = 'src/deep.py'")[0][0] > 0
    assert rows(db, "SELECT f.path, s.name FROM symbols s JOIN files f ON f.id = s.file_id "
                    "WHERE f.path IN ('src/deep.py', 'src/chain.py') AND s.name IN ('x', 'f') "
                    "ORDER BY f.path") == [("src/chain.py", "f"), ("src/deep.py", "x")]
    assert rows(db, "SELECT count(*) FROM symbols s JOIN files f ON f.id = s.file_id "
                    "WHERE f.path = 'src/ok.py'")[0][0] == 2
    done = run_cli("index", "src", "--no-vectors", "--db", "rag.db", "--include", "*.pb.go",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert rows(db, "SELECT count(*) FROM symbols WHERE name = 'GetF'")[0][0] == 300
    assert len(ragdb(tmp_path, "references", "pb.M7.F7").stdout.splitlines()) == 1


def test_a_cycle_of_declared_types_ends(tmp_path: Path) -> None:
    """A's field is a B, B's an A, and locals assigned through themselves: typing and reading
    end; a parameter keeps its declared type, a local typed by nothing is unresolved."""
    write_corpus(tmp_path, {
        "src/ring/__init__.py": "",
        "src/ring/a.py": ("from ring.b import B\n\n\nclass A:\n    def __init__(self) -> None:\n"
                          "        self.b = B()\n\n    def go(self) -> None:\n        pass\n"),
        "src/ring/b.py": ("class B:\n    def __init__(self) -> None:\n"
                          "        from ring.a import A\n        self.a = A()\n"),
        "src/ring/use.py": ("from ring.a import A\n\n\ndef walk(x: A) -> None:\n"
                            "    x.b.a.go()\n    x = x.b.a\n    x = x.b.a\n    x.go()\n"
                            "    y = y.next\n    y.go()\n"),
    })
    assert run_cli("index", "src", "--no-vectors", "--db", "rag.db", cwd=tmp_path
                   ).returncode == 0
    refs = ragdb(tmp_path, "references", "ring.a.A.go").stdout.splitlines()
    assert refs == ["src/ring/use.py:5: call ring.a.A.b.a.go (in ring.use.walk)",
                    "src/ring/use.py:8: call ring.a.A.go (in ring.use.walk)",  # x: A
                    "src/ring/use.py:10: call go (unresolved, in ring.use.walk)"], refs
    assert ragdb(tmp_path, "references", "ring.b.B").returncode == 0


# -- kill -9 at several moments ----------------------------------------------------------------

def _state(db: Path) -> list[tuple[Any, ...]]:
    """What an index holds, file by file: its chunks, symbols and uses (by content, not id)."""
    return rows(db, """
        SELECT f.path, f.sha256, f.symbols_version,
               (SELECT group_concat(c.first_char || ':' || c.last_char, ',') FROM
                   (SELECT first_char, last_char FROM chunks WHERE file_id = f.id
                    ORDER BY first_char) AS c),
               (SELECT group_concat(s.qualified || '@' || s.first_char, ',') FROM
                   (SELECT qualified, first_char FROM symbols WHERE file_id = f.id
                    ORDER BY first_char, qualified) AS s),
               (SELECT count(*) || ':' || coalesce(sum(r.first_char), 0) FROM symbol_refs r
                WHERE r.file_id = f.id)
        FROM files f ORDER BY f.path""")


def _consistent(db: Path) -> None:
    """Every row of the symbol tables belongs to a file and chunk that exist, and every
    file of a language with symbols carries the version of the extraction."""
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert rows(db, "PRAGMA foreign_key_check") == []
    languages = ", ".join(repr(k) for k in sorted(SYMBOL_LANGUAGES))
    checks = {
        "a symbol without its file":
            "SELECT count(*) FROM symbols s LEFT JOIN files f ON f.id = s.file_id "
            "WHERE f.id IS NULL",
        "a symbol without a chunk of its file (an empty file has none)":
            "SELECT count(*) FROM symbols s LEFT JOIN chunks c ON c.id = s.chunk_id "
            "WHERE c.file_id IS NOT s.file_id AND (s.chunk_id IS NOT NULL OR EXISTS "
            "(SELECT 1 FROM chunks WHERE file_id = s.file_id))",
        "a symbol outside its chunk":
            "SELECT count(*) FROM symbols s JOIN chunks c ON c.id = s.chunk_id "
            "WHERE s.first_char < c.first_char OR s.first_char >= c.last_char",
        "a symbol whose parent is gone":
            "SELECT count(*) FROM symbols s WHERE s.parent_id IS NOT NULL AND s.parent_id "
            "NOT IN (SELECT id FROM symbols WHERE file_id = s.file_id)",
        "a use without its file":
            "SELECT count(*) FROM symbol_refs r LEFT JOIN files f ON f.id = r.file_id "
            "WHERE f.id IS NULL",
        "a use whose enclosing definition is gone":
            "SELECT count(*) FROM symbol_refs r WHERE r.enclosing_id IS NOT NULL AND "
            "r.enclosing_id NOT IN (SELECT id FROM symbols WHERE file_id = r.file_id)",
        "a use whose name is gone":
            "SELECT count(*) FROM symbol_refs r WHERE (r.target_id IS NOT NULL AND "
            "r.target_id NOT IN (SELECT id FROM symbol_names)) OR (r.alias_id IS NOT NULL "
            "AND r.alias_id NOT IN (SELECT id FROM symbol_names))",
        "a file of a symbol language read by another extraction":
            f"SELECT count(*) FROM files WHERE kind IN ({languages}) "
            f"AND symbols_version != {SYMBOLS_VERSION}",
    }
    for what, query in checks.items():
        assert rows(db, query)[0][0] == 0, what


def _index_process(project: Path, db: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "RAGDB_MODELS_DIR": str(models_dir_without_writer())}
    return subprocess.Popen(
        [sys.executable, "-m", "ragdb", "index", "src", "data/raw", "--db", str(db),
         "--no-vectors"], cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _copy_db(source: Path, dest: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{source}{suffix}").exists():
            shutil.copy(f"{source}{suffix}", f"{dest}{suffix}")


def test_kill_at_several_moments_leaves_old_or_new_never_a_mix(tmp_path: Path) -> None:
    """A real `ragdb index` run killed with SIGKILL as it starts writing, part way and near
    its end: each time the index is whole and consistent, and it is the state before the run
    or the state a run to its end makes, never a mix. The next run completes it."""
    project = extract_slice(tmp_path / "project", every=4)
    write_corpus(project, PKG)
    before_db = tmp_path / "before.db"
    first = run_cli("index", "src", "--db", str(before_db), "--no-vectors", cwd=project)
    assert first.returncode == 0, first.stderr
    with closing(sqlite3.connect(before_db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # something changed and something removed in what the killed runs will index
    models = project / "src/shop/models.py"
    models.write_text(models.read_text() + "\n\ndef later() -> None:\n    pass\n")
    (project / "src/shop/checkout.py").unlink()
    before = _state(before_db)
    done_db = tmp_path / "done.db"
    _copy_db(before_db, done_db)
    proc = _index_process(project, done_db)
    peak = 0
    while proc.poll() is None:  # how far the WAL grows in a whole run
        wal = Path(f"{done_db}-wal")
        peak = max(peak, wal.stat().st_size if wal.exists() else 0)
        time.sleep(0.01)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    after = _state(done_db)
    assert after != before and peak > 0
    killed_mid_run = 0
    for share in (0.02, 0.3, 0.7, 0.97):
        db = tmp_path / f"killed-{share}.db"
        _copy_db(before_db, db)
        proc = _index_process(project, db)
        wal = Path(f"{db}-wal")
        while proc.poll() is None and not (wal.exists() and wal.stat().st_size >= peak * share):
            time.sleep(0.002)
        running = proc.poll() is None
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        killed_mid_run += running
        _consistent(db)
        state = _state(db)
        assert state in (before, after), f"a mix after a kill at {share:.0%} of the writes"
        if running:
            assert state == before  # one transaction: nothing of the run is seen
        again = _index_process(project, db)
        again.communicate(timeout=600)
        assert again.returncode == 0
        _consistent(db)
        assert _state(db) == after
    assert killed_mid_run >= 2, "the runs ended before they could be killed"
