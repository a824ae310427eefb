"""A Python file that Python's own parser refuses (a syntax error mid-edit, a Python 2 file, a
template's placeholder, syntax newer than the running Python) is cut along tree-sitter's
Python tree and its definitions are read from it; only a file whose tree is mostly errors is
cut as text and counted as a parse fallback. Real index runs over files in tmp_path."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given

from ragdb import RagDB
from ragdb.chunking import chunk_text
from ragdb.navigate import Filters
from ragdb.symbols import extract
from tests.conftest import run_cli, write_corpus
from tests.test_chunking import CAPS, PYTHON, SLOW_PROPERTY, check_invariants

FILLER = "".join(f"    step{i} = step{i - 1} + {i}\n" for i in range(1, 40))

FILES = {
    # One function mid-edit: an unclosed parenthesis; the rest of the file is good.
    "app/editing.py": (
        "import json\n\n\n"
        f"def parse_config(path):\n    step0 = 0\n{FILLER}    return json.load(open(path))\n\n\n"
        "def half_written(x:\n    return x\n\n\n"
        f"class ConfigStore:\n    def load_store(self):\n        return parse_config('x')\n\n"
        f"def render_report(items):\n    step0 = 0\n{FILLER}    return len(items)\n"),
    # Python 2: print statements and the old except syntax.
    "app/legacy.py": (
        "def legacy_greeting(name):\n    print \"hello\", name\n\n\n"
        "def legacy_divide(a, b):\n    try:\n        return a / b\n"
        "    except ZeroDivisionError, e:\n        print e\n"),
    # Python 3.12: a type statement and PEP 695 generics (this project runs 3.11).
    "app/modern.py": (
        "type UserId = int\n\n\n"
        "def first_item[T](items: list[T]) -> T:\n    return items[0]\n\n\n"
        "class Box[T]:\n    def unwrap_box(self) -> T:\n        return self.value\n"),
    # Not Python at all, with a .py name.
    "app/garbage.py": "}}} {{{ %%% ((( ]]] ::: @@@ !!!\n" * 100,
}


def _index(tmp_path: Path) -> tuple[Path, str]:
    project = write_corpus(tmp_path / "proj", FILES)
    done = run_cli("index", ".", "--no-vectors", cwd=project)
    assert done.returncode == 0, done.stderr
    return project, done.stdout + done.stderr


def _defined(rag: RagDB, name: str) -> list[str]:
    listing = rag.definition(name, filters=Filters.of(None, None, None), kinds=None,
                             limit=None, offset=0)
    return [f"{p.path}:{p.line}: {p.kind} {p.qualified}" for p in listing.places]


def test_broken_python_keeps_its_definitions_and_chunks(tmp_path: Path) -> None:
    for rel, text in FILES.items():
        if rel != "app/garbage.py":
            try:
                ast.parse(text)
            except SyntaxError:
                continue
            raise AssertionError(f"{rel} parses: the test would test nothing")
    project, said = _index(tmp_path)
    # Only the garbage is a fallback, named as such.
    assert "1 parse fallbacks" in said, said
    assert ("ragdb: parse fallback app/garbage.py: it does not parse as Python and its "
            "syntax tree was mostly errors, cut as text") in said.splitlines(), said
    assert "editing.py: it does" not in said and "legacy.py: it does" not in said
    with RagDB(project / "data" / "processed" / "rag.db") as rag:
        assert _defined(rag, "parse_config") == ["app/editing.py:4: function "
                                                 "editing.parse_config"]
        assert _defined(rag, "render_report") == ["app/editing.py:56: function "
                                                  "editing.render_report"]
        assert _defined(rag, "ConfigStore.load_store") == [
            "app/editing.py:53: method editing.ConfigStore.load_store"]
        assert _defined(rag, "legacy_divide") == ["app/legacy.py:5: function "
                                                  "legacy.legacy_divide"]
        assert _defined(rag, "UserId") == ["app/modern.py:1: type modern.UserId"]
        assert _defined(rag, "first_item") == ["app/modern.py:4: function "
                                               "modern.first_item"]
        assert _defined(rag, "Box.unwrap_box") == ["app/modern.py:9: method "
                                                   "modern.Box.unwrap_box"]
        # The call in the broken file is a reference to the function it defines.
        refs = rag.references("parse_config", filters=Filters.of(None, None, None),
                              kinds=None, limit=None, offset=0)
        assert [p.line for p in refs.places if p.path == "app/editing.py"] == [54]
        chunks = rag.conn.execute(
            "SELECT c.kind, substr(c.text, 1, 40) FROM chunks c JOIN files f "
            "ON f.id = c.file_id WHERE f.path = 'app/editing.py' ORDER BY c.first_char").fetchall()
        garbage = rag.conn.execute(
            "SELECT DISTINCT c.kind FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.path = 'app/garbage.py'").fetchall()
    # Cut along its definitions (as text it was cut at blank lines inside the functions).
    assert len(chunks) >= 2, chunks
    assert all(text.startswith(("import ", "def ", "class ")) for _kind, text in chunks), chunks
    assert garbage == [("text",)], garbage
    # The CLI says the same.
    done = run_cli("definition", "legacy_greeting", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "app/legacy.py:1: function legacy.legacy_greeting" in done.stdout, done.stdout
    done = run_cli("outline", "app/modern.py", cwd=project)
    assert done.returncode == 0, done.stderr
    for line in ("app/modern.py:1: type modern.UserId",
                 "app/modern.py:4: function modern.first_item",
                 "app/modern.py:8: class modern.Box"):
        assert line in done.stdout, done.stdout


def test_go_blank_identifier_defines_nothing(tmp_path: Path) -> None:
    """`var _ Handler = (*Server)(nil)` checks at compile time that Server implements Handler;
    `ragdb outline` listed it as a variable named `_`."""
    text = ("package web\n\ntype Handler interface{ Serve() }\ntype Server struct{}\n\n"
            "func (s *Server) Serve() {}\n\nvar _ Handler = (*Server)(nil)\n"
            "var (\n\t_ = fmt.Sprintf\n\tDefaultServer = &Server{}\n)\nconst _ = 1\n")
    found = extract(text, "go", tmp_path / "web.go", "web/web.go")
    assert found is not None
    names = [s.name for s in found.symbols]
    assert "_" not in names and {"Handler", "Server", "Serve", "DefaultServer"} <= set(names)
    project = write_corpus(tmp_path / "go", {"web/web.go": text})
    assert run_cli("index", ".", "--no-vectors", cwd=project).returncode == 0
    done = run_cli("outline", "web/web.go", cwd=project)
    assert done.returncode == 0, done.stderr
    assert " web._" not in done.stdout and "web.DefaultServer" in done.stdout, done.stdout


@SLOW_PROPERTY
@given(PYTHON, CAPS)
def test_python_2_lines_keep_the_cut(code: str, cap: int) -> None:
    """A Python 2 print put between two top-level statements: the file is cut along
    tree-sitter's tree, whose chunks keep the invariants, and each definition that fits the
    cap still lies whole in one chunk."""
    lines = code.splitlines(keepends=True)
    tops = [k for k, line in enumerate(lines) if line[:1].isalpha()] or [0]
    at = tops[len(tops) // 2]
    broken = "".join(lines[:at]) + "print 'legacy'\n" + "".join(lines[at:])
    chunks = chunk_text(broken, "python", cap)
    check_invariants(broken, chunks, cap)
