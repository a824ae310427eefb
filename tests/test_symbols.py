"""Definitions and references in rag.db (issue 41): the rows an index run writes for Python
(ast) and for Go, Rust, TypeScript, C and Java (tree-sitter), kept in step with the chunks
(same transaction, removed with the file, an old rag.db filled on its next run), and parse
failures counted and named."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ragdb.symbols import extract
from tests.conftest import extract_slice, run_cli, write_corpus

PKG = {
    "src/shop/__init__.py": "from shop.models import Cart as Cart\n",
    "src/shop/models.py": (
        "import json as js\n"
        "from dataclasses import dataclass\n\n"
        "TAX = 0.2\n"
        "default_name = 'cart'\n\n\n"
        "class Base:\n"
        "    def total(self) -> float:\n"
        "        return 0.0\n\n\n"
        "@dataclass\n"
        "class Cart(Base):\n"
        "    items: list\n\n"
        "    def __init__(self) -> None:\n"
        "        self.owner = default_name\n\n"
        "    def add(self, price: float) -> None:\n"
        "        self.items.append(price * (1 + TAX))\n"
        "        self.total()\n\n"
        "    def dump(self) -> str:\n"
        "        def fmt(x: float) -> str:\n"
        "            return str(x)\n"
        "        return js.dumps([fmt(i) for i in self.items])\n"
    ),
    "src/shop/checkout.py": (
        "import shop\n"
        "from .models import Cart, TAX as RATE\n\n\n"
        "def checkout(cart: Cart) -> float:\n"
        "    cart.add(RATE)\n"
        "    other = shop.Cart()\n"
        "    other.dump()\n"
        "    return cart.total()\n"
    ),
}


def rows(db: Path, query: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(query).fetchall()


def index(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_cli("index", "src", "--no-vectors", "--db", "rag.db", *args, cwd=project)
    assert done.returncode == 0, done.stderr
    return done


def test_python_definitions_and_references(tmp_path: Path) -> None:
    write_corpus(tmp_path, PKG)
    index(tmp_path)
    db = tmp_path / "rag.db"
    defs = dict(rows(db, "SELECT qualified, kind FROM symbols"))
    assert defs["shop"] == "module" and defs["shop.models"] == "module"
    assert defs["shop.models.Cart"] == "class"
    assert defs["shop.models.Cart.add"] == "method"
    assert defs["shop.models.Cart.dump.fmt"] == "function"
    assert defs["shop.models.TAX"] == "constant"
    assert defs["shop.models.default_name"] == "variable"
    assert defs["shop.models.Cart.items"] == "field"  # `items: list` in a class body
    assert defs["shop.models.Cart.owner"] == "field"  # self.owner = ... in a method
    assert defs["shop.checkout.checkout"] == "function"
    # start_line is the line of the name; the range is the whole definition
    line, first, last = rows(db, "SELECT start_line, first_char, last_char FROM symbols "
                                 "WHERE qualified = 'shop.models.Cart.add'")[0]
    text = (tmp_path / "src/shop/models.py").read_text()
    assert line == 20 and text[first:last].startswith("def add(") and \
        text[first:last].endswith("self.total()")
    # every definition sits in a chunk of its file that holds its first character
    assert rows(db, "SELECT count(*) FROM symbols s JOIN chunks c ON c.id = s.chunk_id "
                    "WHERE c.file_id = s.file_id AND c.first_char <= s.first_char "
                    "AND s.first_char < c.last_char")[0][0] == len(defs)
    uses = set(rows(db, "SELECT u.name, u.target, u.kind, e.qualified FROM symbol_uses u "
                        "LEFT JOIN symbols e ON e.id = u.enclosing_id"))
    assert ("add", "shop.models.Cart.add", "call", "shop.checkout.checkout") in uses  # typed
    assert ("total", "shop.models.Base.total", "call", "shop.models.Cart.add") in uses  # self
    assert ("Cart", "shop.Cart", "call", "shop.checkout.checkout") in uses  # package qualified
    assert ("RATE", "shop.models.TAX", "call", "shop.checkout.checkout") not in uses
    assert ("Base", "shop.models.Base", "inherit", "shop.models.Cart") in uses  # held by Cart
    assert ("Cart", "shop.models.Cart", "type", "shop.checkout") in uses  # the annotation
    assert ("fmt", "shop.models.Cart.dump.fmt", "call", "shop.models.Cart.dump") in uses
    assert ("default_name", "shop.models.default_name", "use",
            "shop.models.Cart.__init__") in uses
    # imports: relative, aliased, re-exported (the alias other modules reach it by)
    imports = set(rows(db, "SELECT name, target, alias FROM symbol_uses WHERE kind = 'import'"))
    assert ("TAX", "shop.models.TAX", "shop.checkout.RATE") in imports
    assert ("Cart", "shop.models.Cart", "shop.Cart") in imports
    # a local assigned from a class is an instance of it
    assert ("dump", "shop.Cart.dump", "call", "shop.checkout.checkout") in uses
    # the standard library is known, never recorded: `self.items.append` is a list's
    # (`items: list`); a method of an object of unknown type is kept unresolved
    # (tests/test_symbol_types.py)
    assert not [u for u in uses if str(u[1] or "").startswith(("json", "dataclasses"))]
    assert ("items", "shop.models.Cart.items", "attribute", "shop.models.Cart.add") in uses
    assert rows(db, "SELECT name, kind FROM symbol_refs WHERE name = 'append'") == []


SOURCES = {
    "go": ("svc/server.go", (
        "package svc\n\nimport (\n\t\"fmt\"\n\tyml \"gopkg.in/yaml.v3\"\n)\n\n"
        "const Port = 80\n\ntype Server struct {\n\tName string\n}\n\n"
        "type Handler interface {\n\tServe(s *Server) error\n}\n\n"
        "func (s *Server) Start() error {\n\tfmt.Println(s.Name)\n\ts.Stop()\n"
        "\tyml.Marshal(s)\n\treturn helper()\n}\n\nfunc (s *Server) Stop() {}\n"),
        {("svc.Port", "constant"), ("svc.Server", "struct"), ("svc.Server.Name", "field"),
         ("svc.Handler", "interface"), ("svc.Handler.Serve", "method"),
         ("svc.Server.Start", "method"), ("svc.Server.Stop", "method")},
        {("Stop", "svc.Server.Stop", "call"), ("Println", "fmt.Println", "call"),
         ("Marshal", "yaml.Marshal", "call"), ("helper", "svc.helper", "call"),
         ("Server", "svc.Server", "type")}),
    "rust": ("crate_x/src/shapes/mod.rs", (
        "use std::collections::HashMap;\npub use self::circle::Circle;\n\n"
        "pub struct Square { pub side: f64 }\n\npub trait Area { fn area(&self) -> f64; }\n\n"
        "impl Area for Square {\n    fn area(&self) -> f64 { self.scale(); Self::unit(); "
        "HashMap::<i32, i32>::new(); self.side }\n}\n\nmacro_rules! sq { () => {} }\n\n"
        "#[test]\nfn checks() { sq!(); }\n"),
        {("crate_x.shapes.Square", "struct"), ("crate_x.shapes.Square.side", "field"),
         ("crate_x.shapes.Area", "trait"), ("crate_x.shapes.Area.area", "method"),
         ("crate_x.shapes.Square.area", "method"), ("crate_x.shapes.sq", "macro"),
         ("crate_x.shapes.checks", "test")},
        {("scale", "crate_x.shapes.Square.scale", "call"),
         ("unit", "crate_x.shapes.Square.unit", "call"), ("sq", "crate_x.shapes.sq", "macro"),
         ("Area", "crate_x.shapes.Area", "inherit"),
         ("Circle", "crate_x.shapes.circle.Circle", "import")}),
    "typescript": ("web/src/cart.ts", (
        "import { Item as It } from './item';\nimport * as util from '../lib/util';\n\n"
        "export interface Priced { price: number }\n"
        "export class Cart implements Priced {\n  price = 0;\n"
        "  add(i: It): void { this.total(); util.log(i); }\n  total(): number { return 1; }\n}\n"
        "export const make = () => new Cart();\nexport type Id = string;\n"
        "enum Color { Red, Green }\n"),
        {("web/src/cart.Priced", "interface"), ("web/src/cart.Cart", "class"),
         ("web/src/cart.Cart.add", "method"), ("web/src/cart.make", "function"),
         ("web/src/cart.Id", "type"), ("web/src/cart.Color.Red", "constant")},
        {("total", "web/src/cart.Cart.total", "call"), ("log", "web/lib/util.log", "call"),
         ("It", "web/src/item.Item", "type"), ("Priced", "web/src/cart.Priced", "inherit"),
         ("Cart", "web/src/cart.Cart", "call")}),
    "c": ("lib/list.c", (
        "#include <stdlib.h>\n#include \"list.h\"\n#define MAX 10\n"
        "typedef struct node { int value; struct node *next; } node_t;\n"
        "enum color { RED, BLUE };\nstatic int count = 0;\nextern int elsewhere;\n"
        "int\nlist_len(node_t *n) { return helper(n) + MAX; }\n"),
        {("MAX", "macro"), ("node", "struct"), ("node.value", "field"), ("node_t", "type"),
         ("RED", "constant"), ("count", "variable"), ("list_len", "function")},
        {("helper", "helper", "call"), ("node_t", "node_t", "type"),
         ("list.h", "list.h", "import")}),
    "java": ("app/src/com/ex/Shop.java", (
        "package com.ex;\nimport java.util.List;\n\npublic class Shop extends Base {\n"
        "  private int count = 0;\n  public Shop() { super(); }\n"
        "  void sell(List<String> items) { this.log(); log(); Util.help(); new Cart(); }\n"
        "  void log() {}\n}\n"),
        {("com.ex.Shop", "class"), ("com.ex.Shop.count", "field"),
         ("com.ex.Shop.Shop", "method"), ("com.ex.Shop.sell", "method")},
        {("log", "com.ex.Shop.log", "call"), ("help", "com.ex.Util.help", "call"),
         ("Cart", "com.ex.Cart", "call"), ("List", "java.util.List", "type"),
         ("Base", "com.ex.Base", "inherit")}),
}


@pytest.mark.parametrize("language", sorted(SOURCES))
def test_tree_sitter_definitions_and_references(tmp_path: Path, language: str) -> None:
    rel, text, defs, uses = SOURCES[language]
    path = tmp_path / rel
    found = extract(text, language, path, rel)
    assert found is not None
    got = {(s.qualified, s.kind) for s in found.symbols}
    assert defs <= got, defs - got
    refs = {(r.name, r.target, r.kind) for r in found.refs}
    assert uses <= refs, uses - refs
    for s in found.symbols:  # the line is the name's, the range the whole definition
        assert s.name in text.splitlines()[s.start_line - 1]
        assert s.name in text[s.first:s.last]
    for r in found.refs:  # a use's place is its name as written
        assert text[r.first:r.first + len(r.name)] == r.name, r


def test_unicode_names_have_char_offsets() -> None:
    text = "# é\nclass Café:\n    def größe(self) -> int:\n        return self.größe()\n"
    found = extract(text, "python", Path("m.py"), "m.py")
    assert found is not None
    method = next(s for s in found.symbols if s.name == "größe")
    assert text[method.first:].startswith("def größe")
    call = next(r for r in found.refs if r.name == "größe")
    assert text[call.first:call.first + len(call.name)] == "größe"
    assert call.target == "m.Café.größe"
    ts = "const é = 1;\nexport function naïve(x: number) { return ünï(é); }\n"
    found = extract(ts, "typescript", Path("u.ts"), "u.ts")
    assert found is not None
    fn = next(s for s in found.symbols if s.name == "naïve")
    assert ts[fn.first:].startswith("function naïve")
    use = next(r for r in found.refs if r.name == "ünï")
    assert ts[use.first:use.first + 3] == "ünï"


def test_rows_follow_the_file(tmp_path: Path) -> None:
    """Changed: its rows replaced, never doubled; removed: its rows gone; a no-op run
    changes nothing."""
    write_corpus(tmp_path, PKG)
    index(tmp_path)
    db = tmp_path / "rag.db"
    count = rows(db, "SELECT count(*) FROM symbols")[0][0]
    models = tmp_path / "src/shop/models.py"
    models.write_text(models.read_text() + "\n\ndef extra() -> None:\n    pass\n")
    index(tmp_path)
    assert rows(db, "SELECT count(*) FROM symbols")[0][0] == count + 1
    assert rows(db, "SELECT count(*) FROM symbols WHERE qualified = 'shop.models.Cart'") == [
        (1,)]
    (tmp_path / "src/shop/checkout.py").unlink()
    index(tmp_path)
    assert rows(db, "SELECT count(*) FROM symbols WHERE qualified LIKE 'shop.checkout%'") == [
        (0,)]
    assert rows(db, "SELECT count(*) FROM symbol_refs WHERE file_id NOT IN "
                    "(SELECT id FROM files)") == [(0,)]
    # names no use holds any more are gone too (RATE was checkout's)
    assert rows(db, "SELECT count(*) FROM symbol_names WHERE qualified = 'shop.checkout.RATE'"
                ) == [(0,)]
    before = rows(db, "SELECT value FROM settings WHERE key = 'generation'")
    again = index(tmp_path)
    assert "0 indexed" in again.stdout and "symbols read" not in again.stdout
    assert rows(db, "SELECT value FROM settings WHERE key = 'generation'") == before


def test_an_index_made_before_symbols_gets_them_on_its_next_run(tmp_path: Path) -> None:
    """rag.db of schema 7 (no symbol tables): the migration adds them, the next run reads the
    symbols of its unchanged files without cutting them again, and the run after is a no-op."""
    write_corpus(tmp_path, PKG)
    index(tmp_path)
    db = tmp_path / "rag.db"
    chunks = rows(db, "SELECT id, text FROM chunks ORDER BY id")
    expected = rows(db, "SELECT qualified, kind, start_line FROM symbols ORDER BY qualified")
    with closing(sqlite3.connect(db)) as conn:  # as migration 7 left it
        conn.executescript(_BEFORE_SYMBOLS + "PRAGMA user_version = 7;")
    done = index(tmp_path)
    assert "0 indexed" in done.stdout and "symbols read for 3 unchanged files" in done.stdout
    assert rows(db, "SELECT qualified, kind, start_line FROM symbols ORDER BY qualified") == \
        expected
    assert rows(db, "SELECT id, text FROM chunks ORDER BY id") == chunks  # not cut again
    assert rows(db, "PRAGMA user_version")[0][0] == 9
    again = index(tmp_path)
    assert "symbols read" not in again.stdout and "0 indexed" in again.stdout


#: What migrations 008 and 009 made, dropped: rag.db as migration 7 left it.
_BEFORE_SYMBOLS = (
    "DROP VIEW symbol_uses; DROP VIEW symbols; DROP TABLE symbol_refs; DROP TABLE symbol_defs; "
    "DROP TABLE symbol_names; DROP TABLE symbol_kinds; "
    "ALTER TABLE files DROP COLUMN symbols_version; ")


def test_an_index_of_the_first_symbol_tables_is_upgraded(tmp_path: Path) -> None:
    """rag.db of schema 8 (the symbol tables with kinds and names as text, as migration 008
    made them, its files' symbols read): migration 009 makes them again in their smaller shape
    and the next run reads every file's symbols again, chunks untouched; the same answers."""
    from ragdb.resources import resource_dir

    write_corpus(tmp_path, PKG)
    index(tmp_path)
    db = tmp_path / "rag.db"
    chunks = rows(db, "SELECT id, text FROM chunks ORDER BY id")
    expected = rows(db, "SELECT qualified, kind, start_line, end_line FROM symbols "
                        "ORDER BY qualified")
    uses = rows(db, "SELECT name, target, alias, kind, first_char, last_char, line "
                    "FROM symbol_uses ORDER BY file_id, first_char")
    references = run_cli("references", "Cart", "--db", str(db), cwd=tmp_path)
    eight = (resource_dir("migrations") / "008_symbols.sql").read_text(encoding="utf-8")
    with closing(sqlite3.connect(db)) as conn:  # as migration 8 left it, symbols read
        conn.executescript(_BEFORE_SYMBOLS + eight + "UPDATE files SET symbols_version = 5; "
                           "PRAGMA user_version = 8;")
    done = index(tmp_path)
    assert "0 indexed" in done.stdout and "symbols read for 3 unchanged files" in done.stdout
    assert rows(db, "PRAGMA user_version")[0][0] == 9
    assert rows(db, "SELECT qualified, kind, start_line, end_line FROM symbols "
                    "ORDER BY qualified") == expected
    assert rows(db, "SELECT name, target, alias, kind, first_char, last_char, line "
                    "FROM symbol_uses ORDER BY file_id, first_char") == uses
    assert rows(db, "SELECT id, text FROM chunks ORDER BY id") == chunks  # not cut again
    again = run_cli("references", "Cart", "--db", str(db), cwd=tmp_path)
    assert again.returncode == 0 and again.stdout == references.stdout and "Cart" in again.stdout
    assert "symbols read" not in index(tmp_path).stdout


def test_kinds_are_stored_by_the_ids_the_extraction_writes(tmp_path: Path) -> None:
    """symbol_kinds (the migration's rows) is ragdb.symbols.KIND_IDS: every kind a definition
    or a use can have, with the id the index run stores."""
    from ragdb.symbols import KIND_IDS, KINDS, REF_KINDS

    write_corpus(tmp_path, PKG)
    index(tmp_path)
    stored = dict(rows(tmp_path / "rag.db", "SELECT name, id FROM symbol_kinds"))
    assert stored == KIND_IDS and set(KIND_IDS) == set(KINDS) | set(REF_KINDS)


def test_parse_failures_are_counted_and_named(tmp_path: Path) -> None:
    """A file whose syntax does not parse (or whose parse runs out of time) has no symbols:
    it is counted and named, and its chunks are indexed as text."""
    write_corpus(tmp_path, {
        "src/ok.py": "def fine():\n    return 1\n",
        "src/broken.py": "def broken(:\n    return (\n" + "x = [\n" * 50,
        "src/junk.c": "}}}} ((( int ;;; {{\n" * 200,
        "src/min.js": "function a(){return b()}" * 2000,  # minified: left out by the walk
    })
    done = index(tmp_path)
    assert "2 parse fallbacks" in done.stdout, done.stdout
    assert "parse fallback src/broken.py" in done.stderr
    assert "parse fallback src/junk.c" in done.stderr
    assert "skipped src/min.js: minified" in done.stderr
    db = tmp_path / "rag.db"
    assert rows(db, "SELECT f.path, min(c.kind) FROM files f JOIN chunks c ON c.file_id = f.id "
                    "WHERE f.path IN ('src/broken.py', 'src/junk.c') GROUP BY f.path") == [
        ("src/broken.py", "module"), ("src/junk.c", "text")]
    assert [r[0] for r in rows(db, "SELECT DISTINCT f.path FROM symbols s "
                                   "JOIN files f ON f.id = s.file_id")] == ["src/ok.py"]
    # --include takes a minified file in: its symbols are read like any other's
    index(tmp_path, "--include", "*.js")
    assert rows(db, "SELECT count(*) FROM symbols WHERE name = 'a'")[0][0] == 2000


def _wait_for_writes(db: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    wal = Path(f"{db}-wal")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail("the index run ended before it could be killed")
        if wal.exists() and wal.stat().st_size > 512 * 1024:
            return
        time.sleep(0.02)
    pytest.fail("the index run never started writing")


def test_kill_during_a_run_leaves_symbols_in_step_with_chunks(tmp_path: Path) -> None:
    """SIGKILL in the middle of an index run: the symbols are the previous run's, as the
    chunks are (one transaction), and every symbol still points at a chunk of its file."""
    project = extract_slice(tmp_path, every=4)
    write_corpus(project / "src", PKG)
    db = project / "rag.db"
    first = run_cli("index", "src", "--db", str(db), "--no-vectors", cwd=project)
    assert first.returncode == 0, first.stderr
    before = rows(db, "SELECT qualified, file_id, chunk_id FROM symbols ORDER BY id")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragdb", "index", "src", "data/raw", "--db", str(db),
         "--no-vectors"], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_for_writes(db, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert rows(db, "SELECT qualified, file_id, chunk_id FROM symbols ORDER BY id") == before
    assert rows(db, "SELECT count(*) FROM symbols s LEFT JOIN chunks c ON c.id = s.chunk_id "
                    "WHERE c.file_id IS NOT s.file_id")[0][0] == 0


def test_postgresql_holds_the_same_rows(tmp_path: Path, pg_url: str) -> None:
    """The same definitions and uses over PostgreSQL (migrations/postgresql/014_symbols.sql),
    removed with their file there too."""
    import psycopg

    write_corpus(tmp_path, PKG)
    index(tmp_path)
    done = run_cli("index", "src", "--no-vectors", "--db", pg_url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lite = rows(tmp_path / "rag.db", "SELECT qualified, kind, start_line, first_char "
                                     "FROM symbols ORDER BY qualified, first_char")
    uses = "SELECT name, target, alias, kind, line FROM symbol_uses ORDER BY line, name, kind"
    with psycopg.connect(pg_url) as pg:
        assert pg.execute("SELECT qualified, kind, start_line, first_char FROM symbols "
                          "ORDER BY qualified, first_char").fetchall() == lite
        assert pg.execute(uses).fetchall() == rows(tmp_path / "rag.db", uses)
    (tmp_path / "src/shop/checkout.py").unlink()
    assert run_cli("index", "src", "--no-vectors", "--db", pg_url, cwd=tmp_path).returncode == 0
    with psycopg.connect(pg_url) as pg:
        assert pg.execute("SELECT count(*) FROM symbols WHERE qualified LIKE 'shop.checkout%'"
                          ).fetchall() == [(0,)]


C_UNDER_MACROS = (
    "#include <string.h>\n"
    "#define local static\n"
    "#  define MOD63(a) \\\n    do { /* a comment */ \\\n        z_off64_t tmp = a; \\\n"
    "    } while (0)\n"
    "local const int FAR extra_lbits[4] = {0, 0, 1, 1};\n"
    "int ZLIB_INTERNAL z_verbose = 1;\n"
    "#ifdef DEBUG\nint debug_level = 0;\n#endif\n"
    "static int (*real_fopen)(const char *);\n"
    "int f OF((int a));\n"
    "static void change_date(filename, dosdate)\n    const char *filename;\n"
    "    unsigned long dosdate;\n{\n    int local_x = 0;\n}\n"
    "int ZEXPORT inflate(strm, flush)\nz_streamp strm;\nint flush;\n{\n"
    "    struct inflate_state FAR *state;\n    return 0;\n}\n"
    "extern int ZEXPORT unzeof (unzFile file)\n{\n    return 0;\n}\n"
)


def test_c_definitions_under_macros_and_k_and_r() -> None:
    """What C code hides behind macros the parser cannot expand and K&R definitions is
    still found (the name is the word before the declarator's brackets or parameters), and
    what is not a definition stays out: parameters' declarations, locals, a prototype
    written through a macro (`f OF((...))`)."""
    found = extract(C_UNDER_MACROS, "c", Path("z.c"), "z.c")
    assert found is not None
    got = {(s.name, s.kind, s.start_line) for s in found.symbols}
    lines = C_UNDER_MACROS.splitlines()
    for name, kind in [("MOD63", "macro"), ("extra_lbits", "variable"),
                       ("z_verbose", "variable"), ("debug_level", "variable"),
                       ("real_fopen", "variable"), ("change_date", "function"),
                       ("inflate", "function"), ("unzeof", "function")]:
        line = next(i for i, text in enumerate(lines, 1) if name in text)
        assert (name, kind, line) in got, (name, sorted(got))
    names = {s.name for s in found.symbols}
    for not_a_definition in ("z_off64_t", "filename", "dosdate", "strm", "flush", "state",
                             "local_x", "f", "OF", "ZEXPORT", "ZLIB_INTERNAL", "FAR"):
        assert not_a_definition not in names, not_a_definition
    inflate = next(s for s in found.symbols if s.name == "inflate")
    assert C_UNDER_MACROS[inflate.first:inflate.last].startswith("int ZEXPORT inflate(")
    assert C_UNDER_MACROS[inflate.first:inflate.last].endswith("}")


def test_typescript_locals_are_not_definitions() -> None:
    """A variable declared in a function's body is a local, as in every other language;
    what a body declares as a function, class, type or enum is still a definition, and so is
    a method set through `this`, not a property set on another object there."""
    text = (
        "export const TOP = 1;\nlet counter = 0;\n"
        "export function outer(x: number) {\n  const local = x + 1;\n  let other = 2;\n"
        "  for (const item of [1]) { const inner = item; }\n"
        "  function helper() { return local; }\n  const arrow = () => other;\n"
        "  enum Fruit { Apple, Pear = 2 }\n  type Pair = [number, number];\n"
        "  inst.parse = () => 1;\n  this.run = function () {};\n  return helper();\n}\n"
        "class Box {\n  static make = () => new Box();\n  override toString() { return ''; }\n"
        "  get size() { const n = 1; return n; }\n}\n"
        "if (TOP) { const shown = 1; }\n")
    found = extract(text, "typescript", Path("m.ts"), "m.ts")
    assert found is not None
    names = {s.name: s.kind for s in found.symbols}
    assert "TOP" in names
    for name, kind in [("counter", "variable"), ("outer", "function"),
                       ("helper", "function"), ("arrow", "function"), ("Fruit", "enum"),
                       ("Apple", "constant"), ("Pear", "constant"), ("Pair", "type"),
                       ("run", "function"), ("make", "field"), ("toString", "method"),
                       ("size", "method"), ("shown", "constant")]:
        assert names.get(name) == kind, (name, names)
    for local in ("local", "other", "item", "inner", "parse", "n"):
        assert local not in names, local


def test_cpp_nested_namespaces_and_macro_return_types() -> None:
    """`namespace a::b {` opens a and b; a macro before a qualified return type
    (`FORCE_INLINE vec::F32 act(...)`) is not a scope of the function; `A::B::f` is f of
    A.B."""
    text = ("namespace outer::inner {\nint count = 0;\n}\n"
            "FORCE_INLINE vec_op::FP32Vec8 gelu_act(const vec_op::FP32Vec8& x) { return x; }\n"
            "void A::B::run() {}\n")
    found = extract(text, "cpp", Path("k.cpp"), "k.cpp")
    assert found is not None
    got = {(s.name, s.qualified, s.kind) for s in found.symbols}
    assert {("outer", "outer", "module"), ("inner", "outer.inner", "module"),
            ("count", "outer.inner.count", "variable"),
            ("gelu_act", "gelu_act", "function"), ("run", "A.B.run", "method")} <= got, got
