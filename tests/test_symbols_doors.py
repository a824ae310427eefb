"""The doors to definitions and references (issue 41): `ragdb definition`, `references`,
`callers`, `callees`, `outline`, `map` (real processes), the HTTP routes and the Datasette
canned query (a real server), the MCP tools (a real stdio session), PostgreSQL; and bad
input: metacharacters and Unicode as plain data, a name defined 10,000 times (paged, counted),
an import cycle, two roots defining the same qualified name."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.parse import quote
from urllib.request import urlopen

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from ragdb import RagDB
from ragdb.retrieve import Filters
from tests.conftest import (
    free_port, models_dir_without_writer, one_line_error, run_cli, wait_until_serving,
    write_corpus,
)
from tests.test_symbols import PKG

EXTRA = {
    "src/app/__init__.py": "",
    "src/app/main.py": (
        "from shop import Cart\n"
        "from shop.checkout import checkout\n\n\n"
        "def run() -> float:\n"
        "    cart = Cart()\n"
        "    cart.add(2.0)\n"
        "    return checkout(cart)\n\n\n"
        "def größe() -> int:\n"
        "    return 1\n"
    ),
    "src/app/loose.py": "def keep(items):\n    items.append(1)\n",
    "src/cycle/__init__.py": "",
    "src/cycle/a.py": "from cycle.b import thing\n",
    "src/cycle/b.py": "from cycle.a import thing\n",
    "src/cycle/c.py": "from cycle.a import thing\n\n\ndef user():\n    return thing()\n",
    "src/web/util.ts": "export function log(x: string): void {}\n",
    "src/web/page.ts": "import { log } from './util';\nexport function show() { log('x'); }\n",
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("doors")
    write_corpus(work, {**PKG, **EXTRA})
    done = run_cli("index", "src", "--no-vectors", "--db", "rag.db", cwd=work)
    assert done.returncode == 0, done.stderr
    return work


def ragdb(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_cli(*args, "--db", "rag.db", cwd=work)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_definition_and_outline(shop: Path) -> None:
    assert lines(ragdb(shop, "definition", "Cart")) == [
        "src/shop/models.py:14: class shop.models.Cart"]
    assert lines(ragdb(shop, "definition", "Cart.add")) == [
        "src/shop/models.py:20: method shop.models.Cart.add"]
    assert lines(ragdb(shop, "definition", "shop::models::Cart::add()")) == [
        "src/shop/models.py:20: method shop.models.Cart.add"]
    assert lines(ragdb(shop, "definition", "größe")) == [
        "src/app/main.py:11: function app.main.größe"]
    got = json.loads(ragdb(shop, "definition", "total", "--json").stdout)
    assert got["total"] == 1 and got["results"][0]["qualified"] == "shop.models.Base.total"
    assert {"path", "line", "kind", "qualified", "first", "last", "end_line"} <= set(
        got["results"][0])
    outline = lines(ragdb(shop, "outline", "shop/models.py", "--kind", "method",
                          "--kind", "class"))
    assert outline == [
        "src/shop/models.py:8: class shop.models.Base",
        "src/shop/models.py:9: method shop.models.Base.total",
        "src/shop/models.py:14: class shop.models.Cart",
        "src/shop/models.py:17: method shop.models.Cart.__init__",
        "src/shop/models.py:20: method shop.models.Cart.add",
        "src/shop/models.py:24: method shop.models.Cart.dump"]
    folder = lines(ragdb(shop, "outline", "src/web"))
    assert folder == ["src/web/page.ts:2: function src/web/page.show",
                      "src/web/util.ts:1: function src/web/util.log"]
    assert ragdb(shop, "definition", "Cart", "--lang", "typescript").stdout == ""
    assert ragdb(shop, "definition", "log", "--path", "*.ts").stdout.strip() == \
        "src/web/util.ts:1: function src/web/util.log"


def test_references_callers_callees(shop: Path) -> None:
    refs = lines(ragdb(shop, "references", "Cart"))
    # through the package's re-export (shop.Cart) too; imports, calls, types, inheritance
    assert "src/app/main.py:1: import shop.Cart (in app.main)" in refs
    assert "src/app/main.py:6: call shop.Cart (in app.main.run)" in refs
    assert "src/shop/checkout.py:5: type shop.models.Cart (in shop.checkout)" in refs
    assert "src/shop/__init__.py:1: import shop.models.Cart (in shop)" in refs
    calls = lines(ragdb(shop, "references", "Cart", "--kind", "call"))
    assert calls == ["src/app/main.py:6: call shop.Cart (in app.main.run)",
                     "src/shop/checkout.py:7: call shop.Cart (in shop.checkout.checkout)"]
    # a method through an instance's type; an unresolved use of the name comes last
    add = lines(ragdb(shop, "references", "add"))
    assert add == ["src/app/main.py:7: call shop.Cart.add (in app.main.run)",
                   "src/shop/checkout.py:6: call shop.models.Cart.add "
                   "(in shop.checkout.checkout)"]
    append = ragdb(shop, "references", "append")
    assert append.stdout.splitlines() == [
        "src/app/loose.py:2: call append (unresolved, in app.loose.keep)"]
    assert "no definition of append" in append.stderr
    assert lines(ragdb(shop, "callers", "Cart.add")) == [
        "src/app/main.py:7: function app.main.run",
        "src/shop/checkout.py:6: function shop.checkout.checkout"]
    assert lines(ragdb(shop, "callers", "log")) == [
        "src/web/page.ts:2: function src/web/page.show"]
    callees = lines(ragdb(shop, "callees", "checkout"))
    assert callees == ["src/shop/models.py:20: method shop.models.Cart.add",
                       "src/shop/models.py:14: class shop.models.Cart",
                       "src/shop/models.py:24: method shop.models.Cart.dump",
                       "src/shop/models.py:9: method shop.models.Base.total"]


def test_map_ranks_the_most_used(shop: Path) -> None:
    text = ragdb(shop, "map", "--tokens", "100").stdout
    assert text.splitlines()[0] == "src/shop/models.py:"
    assert "  14: class Cart(Base):" in text.splitlines()
    assert len(text) <= 100 * 4
    got = json.loads(ragdb(shop, "map", "--tokens", "2000", "--json").stdout)
    ranks = {e["qualified"]: e["rank"] for e in got["entries"]}
    assert ranks["shop.models.Cart"] > ranks["app.main.größe"]
    assert one_line_error(ragdb(shop, "map", "--tokens", "3")).startswith(
        "ragdb: tokens must be a whole number from 64")


PLAIN_NAMES = [
    "'; DROP TABLE files; --", "x' OR '1'='1", "*", "Car?", "[C]art", "%", "_", "a%b_c",
    '"Cart"', "Cart*", "NEAR(Cart add)", "Cart AND add", "Cart OR x", "^Cart", "{Cart}",
    "Cart\\", "C\u0301art", "カート", "\U0001F6D2", "Cart..add", "x" * 1000,
]
NAME_COMMANDS = ("definition", "references", "callers", "callees")


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_names_are_plain_data(shop: Path, name: str) -> None:
    """SQL, GLOB, LIKE and FTS5 metacharacters, Unicode: a name is compared as text. None of
    these is a definition here: nothing listed, one line saying so, rag.db untouched.
    Each name goes through the real CLI once, the four commands in turn (each command over
    five or six names), and through all four RagDB reads those commands print: the places
    on stdout, then `ragdb: ` and the listing's note on stderr (cli/symbols.py's _show)."""
    command = NAME_COMMANDS[PLAIN_NAMES.index(name) % len(NAME_COMMANDS)]
    done = ragdb(shop, command, name)
    assert done.returncode == 0 and done.stdout == "", (command, done.stdout)
    assert done.stderr.startswith("ragdb: no definition of"), done.stderr
    with RagDB(shop / "rag.db") as rag:
        for command in NAME_COMMANDS:
            listing = getattr(rag, command)(name, filters=Filters.of(None, None, None),
                                            kinds=None, limit=None, offset=0)
            assert not listing.places, (command, listing.places)
            said = listing.note or listing.shown
            assert said.startswith("no definition of"), (command, said)
    with closing(sqlite3.connect(shop / "rag.db")) as conn:
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == len(PKG) + len(EXTRA)


@pytest.mark.parametrize("args, needle", [
    (("definition", ""), "the name is empty"),
    (("definition", "   "), "the name is empty"),
    (("definition", "..."), "the name is empty"),
    (("definition", "x" * 1001), "over 1,000 characters"),
    (("definition", "Cart", "--kind", "klass"), "unknown kind 'klass'"),
    (("references", "Cart", "--kind", "method"), "unknown kind 'method'"),
    (("definition", "Cart", "--limit", "0"), "limit must be a whole number from 1"),
    (("definition", "Cart", "--lang", "cobol"), "language 'cobol' not in this index"),
    (("outline", ""), "the path is empty"),
])
def test_bad_input_is_one_line(shop: Path, args: tuple[str, ...], needle: str) -> None:
    assert needle in one_line_error(ragdb(shop, *args))


def test_a_name_defined_ten_thousand_times_is_paged(tmp_path: Path) -> None:
    body = "".join(f"class C{i}:\n    def run(self):\n        return {i}\n\n"
                   for i in range(10_000))
    write_corpus(tmp_path, {"src/many.py": body,
                            "src/use.py": "from many import C7\n\nC7().run()\n"})
    assert run_cli("index", "src", "--no-vectors", "--db", "rag.db", cwd=tmp_path
                   ).returncode == 0
    first = ragdb(tmp_path, "definition", "run")
    assert len(lines(first)) == 50
    assert first.stderr.strip() == "ragdb: showing 1-50 of 10,000; --offset 50 for more"
    last = ragdb(tmp_path, "definition", "run", "--offset", "9990", "--limit", "50")
    assert len(lines(last)) == 10 and last.stderr.strip() == "ragdb: showing 9991-10000 of 10,000"
    assert json.loads(ragdb(tmp_path, "definition", "run", "--json", "--limit", "1"
                            ).stdout)["total"] == 10_000
    assert lines(ragdb(tmp_path, "references", "C7.run")) == [
        "src/use.py:3: call many.C7.run (in use)"]
    past = ragdb(tmp_path, "definition", "run", "--offset", "20000")
    assert past.returncode == 0 and past.stdout == ""


def test_an_import_cycle_ends(shop: Path) -> None:
    """a imports thing from b, b from a, c uses a's: nothing defines it, and every read
    ends, saying so."""
    refs = ragdb(shop, "references", "thing")
    assert refs.returncode == 0 and refs.stdout == ""
    assert "no definition of thing" in refs.stderr
    callees = lines(ragdb(shop, "callees", "user"))
    assert callees == ["src/cycle/c.py:5: call cycle.a.thing (unresolved)"]
    # a name no file defines is looked up by its uses, through the cycle of imports
    assert lines(ragdb(shop, "references", "cycle.a.thing")) == [
        "src/cycle/a.py:1: import cycle.b.thing (in cycle.a)",
        "src/cycle/b.py:1: import cycle.a.thing (in cycle.b)",
        "src/cycle/c.py:1: import cycle.a.thing (in cycle.c)",
        "src/cycle/c.py:5: call cycle.a.thing (in cycle.c.user)"]


def test_two_roots_defining_the_same_qualified_name(tmp_path: Path) -> None:
    for root in ("one", "two"):
        write_corpus(tmp_path / root, {
            "pkg/__init__.py": "", "pkg/mod.py": "def f():\n    return 1\n",
            "pkg/use.py": "from pkg.mod import f\n\nf()\n"})
        assert run_cli("index", root, "--no-vectors", "--db", "rag.db", cwd=tmp_path
                       ).returncode == 0
    assert lines(ragdb(tmp_path, "definition", "pkg.mod.f")) == [
        "one/pkg/mod.py:1: function pkg.mod.f", "two/pkg/mod.py:1: function pkg.mod.f"]
    refs = lines(ragdb(tmp_path, "references", "f"))
    assert refs == ["one/pkg/use.py:1: import pkg.mod.f (in pkg.use)",
                    "one/pkg/use.py:3: call pkg.mod.f (in pkg.use)",
                    "two/pkg/use.py:1: import pkg.mod.f (in pkg.use)",
                    "two/pkg/use.py:3: call pkg.mod.f (in pkg.use)"]
    assert lines(ragdb(tmp_path, "references", "f", "--path", "two/*")) == refs[2:]


# -- HTTP and Datasette ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def served(shop: Path) -> Iterator[str]:
    port = free_port()
    log_path = shop / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragdb", "serve", "--db", "rag.db", "--port", str(port)],
            cwd=shop, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "HOME": str(shop / "home"), "HF_HUB_OFFLINE": "1"})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, base, log_path, 60, 0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def get(url: str) -> tuple[int, Any]:
    try:
        with urlopen(url, timeout=60) as response:
            return response.status, json.loads(response.read())
    except HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_http_routes(served: str) -> None:
    status, body = get(f"{served}/-/ragdb/definition?name=Cart")
    assert status == 200 and body["total"] == 1
    assert body["results"][0] == {"path": "src/shop/models.py", "line": 14, "kind": "class",
                                  "qualified": "shop.models.Cart", "language": "python",
                                  "resolved": True, "first": body["results"][0]["first"],
                                  "last": body["results"][0]["last"], "end_line": 27}
    status, body = get(f"{served}/-/ragdb/references?name=Cart&kind=call&kind=type")
    assert status == 200 and {r["kind"] for r in body["results"]} == {"call", "type"}
    status, body = get(f"{served}/-/ragdb/callers?name=Cart.add&limit=1")
    assert status == 200 and body["total"] == 2 and len(body["results"]) == 1
    status, body = get(f"{served}/-/ragdb/outline?file={quote('src/web/util.ts')}")
    assert status == 200 and body["results"][0]["qualified"] == "src/web/util.log"
    status, body = get(f"{served}/-/ragdb/map?tokens=200")
    assert status == 200 and body["entries"] and "Cart" in body["map"]
    assert body["tokens"] == 200  # a number, as MCP gives it, though the query string said "200"
    status, body = get(f"{served}/-/ragdb/definition?name={quote(chr(39) + '; DROP --')}")
    assert status == 200 and body["total"] == 0 and "no definition" in body["note"]
    for query, needle in [("definition", "name is required"),
                          ("definition?name=Cart&kind=klass", "unknown kind"),
                          ("references?name=Cart&limit=x", "limit must be"),
                          ("outline", "file is required"),
                          ("map?tokens=1", "tokens must be")]:
        status, body = get(f"{served}/-/ragdb/{query}")
        assert status == 400 and needle in body["error"], (query, body)


def test_canned_symbol_page(served: str) -> None:
    with urlopen(f"{served}/rag/symbol.json?name=Cart&_shape=objects", timeout=60) as r:
        found = json.loads(r.read())["rows"]
    sections = [(row["section"], row["path"]) for row in found]
    assert sections[0] == ("definition", "src/shop/models.py")
    assert ("used in", "src/shop/checkout.py") in sections
    with urlopen(f"{served}/rag/symbol.json?name=shop.models.Cart.add&_shape=objects",
                 timeout=60) as r:
        found = json.loads(r.read())["rows"]
    assert [(row["section"], row["qualified"]) for row in found] == [
        ("definition", "shop.models.Cart.add"), ("used in", None),
        ("called by", "shop.checkout.checkout")]
    with urlopen(f"{served}/rag/file_outline.json?path=src/web/util.ts&_shape=objects",
                 timeout=60) as r:
        assert [row["qualified"] for row in json.loads(r.read())["rows"]] == [
            "src/web/util.log"]


# -- MCP ---------------------------------------------------------------------------------------

async def _session(work: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "VIRTUAL_ENV")}
    env["RAGDB_MODELS_DIR"] = str(models_dir_without_writer())
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "ragdb", "mcp", "--db", "rag.db"], env=env,
                                   cwd=work)
    results: list[Any] = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            results.append(await session.list_tools())
            for name, args in calls:
                results.append(await session.call_tool(name, args))
    return results


def test_mcp_tools(shop: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("definition", {"name": "Cart"}),
        ("references", {"name": "Cart", "kind": "call"}),
        ("callers", {"name": "Cart.add"}),
        ("outline", {"path": "src/web/util.ts"}),
        ("map", {"tokens": 200}),
        ("definition", {"name": ""}),
        ("references", {"name": "Cart", "kind": ["nope"]}),
    ]
    tools, *found = anyio.run(_session, shop, calls)
    names = {t.name for t in tools.tools}
    assert {"definition", "references", "callers", "outline", "map"} <= names
    definition, refs, callers, outline, repo, empty, bad = found
    assert definition.structured_content["results"][0]["qualified"] == "shop.models.Cart"
    assert "src/shop/models.py:14: class shop.models.Cart" in definition.content[0].text
    assert [r["kind"] for r in refs.structured_content["results"]] == ["call", "call"]
    assert callers.structured_content["total"] == 2
    assert outline.structured_content["results"][0]["qualified"] == "src/web/util.log"
    assert repo.structured_content["entries"] and "Cart" in repo.structured_content["map"]
    for result, needle in ((empty, "the name is empty"), (bad, "unknown kind 'nope'")):
        assert result.is_error and needle in result.content[0].text
        assert "\n" not in result.content[0].text


# -- PostgreSQL --------------------------------------------------------------------------------

def test_postgresql_answers_the_same(shop: Path, pg_url: str) -> None:
    assert run_cli("index", "src", "--no-vectors", "--db", pg_url, cwd=shop).returncode == 0
    for args in (("definition", "Cart"), ("references", "Cart"), ("references", "append"),
                 ("callers", "Cart.add"), ("callees", "checkout"), ("outline", "src/web"),
                 ("references", "f", "--path", "*.ts"), ("definition", "'; DROP --"),
                 ("references", "Cart", "--kind", "call", "--limit", "1", "--offset", "1"),
                 ("map", "--tokens", "300")):
        lite = run_cli(*args, "--db", "rag.db", cwd=shop)
        pg = run_cli(*args, "--db", pg_url, cwd=shop)
        assert (pg.returncode, pg.stdout, pg.stderr) == (lite.returncode, lite.stdout,
                                                         lite.stderr), args
