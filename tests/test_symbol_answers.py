"""Retrieval and answers use the definitions and references (issue 41): the symbol leg of the
hybrid fusion (a question that writes a name gets the chunk defining it as a candidate), on
rag.db and on PostgreSQL; `ragdb answer "who calls X?"` / "where is X used?" answered from the
references; a code block showing the function the question names whole, with its callers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragdb import RagDB
from ragdb.db import connect
from ragdb.generate.blocks import Definition, callers_line, definition_about
from ragdb.generate.cuts import question_terms
from ragdb.navigate import asks_for_uses
from ragdb.resources import sql
from ragdb.retrieve import Filters, Mode, SearchParams, Searcher
from ragdb.tokenize import written_names
from tests.conftest import run_cli, write_corpus
from tests.test_hybrid import _unit

SHOP = {
    "src/shop/__init__.py": "",
    "src/shop/pricing.py": (
        '"""Prices."""\n'
        "\n"
        'RATES = {"SPRING": 0.1}\n'
        "\n"
        "\n"
        "def apply_discount(total: float, code: str) -> float:\n"
        '    """Lower a total by the rate of a discount code."""\n'
        "    rate = RATES.get(code, 0.0)\n"
        "    return total * (1 - rate)\n"
        "\n"
        "\n"
        "def round_price(value: float) -> float:\n"
        "    return round(value, 2)\n"
    ),
    "src/shop/checkout.py": (
        "from shop.pricing import apply_discount, round_price\n"
        "\n"
        "\n"
        "def checkout(total: float, code: str) -> float:\n"
        '    """Checkout: the discount code lowers the total."""\n'
        "    return round_price(apply_discount(total, code))\n"
        "\n"
        "\n"
        "def quote(total: float) -> float:\n"
        '    return apply_discount(total, "")\n'
    ),
    "docs/README.md": "# Shop\n\nDiscount codes lower the total at checkout.\n",
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shop indexed into a rag.db with vectors (the docs embedded), by the real CLI."""
    work = tmp_path_factory.mktemp("symbol_answers")
    write_corpus(work, SHOP)
    done = run_cli("index", "src", "docs", "--db", "rag.db", cwd=work)
    assert done.returncode == 0, done.stderr
    assert "vectors" in done.stdout
    return work


# -- the names a question writes ---------------------------------------------------------------

def test_written_names_are_the_identifiers_a_question_writes() -> None:
    assert written_names("How does `LLM.generate()` pick its `sampling_params`?") == [
        "generate", "sampling_params"]
    assert written_names("what calls get_tokenizer and getSelector in SamplingParams") == [
        "get_tokenizer", "getSelector", "SamplingParams"]
    assert written_names("Where is `clap::Command::new` used?") == ["new"]
    assert written_names("Is `@app.route` a decorator?") == ["route"]
    # Plain words, file names, flags, paths and short names are none.
    assert written_names("How does the Scheduler work?") == []
    assert written_names("What is in `config.py`, `--max-model-len` and `a/b.rs`?") == []
    assert written_names("What does `id` or `x` mean?") == []
    assert written_names("`a`; DROP TABLE symbols; -- `x' OR 1=1`") == []


# -- the symbol leg in SQL ---------------------------------------------------------------------

def _leg_db(path: Path) -> Any:
    """Chunk 1 matches BM25 ("lora"); chunks 2 and 3 match nothing but define names; `many`
    is defined six times (more than symbol_max)."""
    conn = connect(path, create=True)
    with conn:
        conn.execute("INSERT INTO files (id, path, sha256, size, kind, n_chars, indexed_at) "
                     "VALUES (1, 'a.md', '', 0, 'markdown', 0, ''), "
                     "(2, 'src/b.py', '', 0, 'python', 0, ''), "
                     "(3, 'src/c.py', '', 0, 'python', 0, '')")
        chunks = ((1, 1, "lora adapters"), (2, 2, "def frob(): pass\ndef twiddle(): pass"),
                  (3, 3, "def frob(): return 1"))
        for chunk_id, file_id, body in chunks:
            conn.execute("INSERT INTO chunks (id, file_id, first_char, last_char, start_line, "
                         "end_line, kind, text) VALUES (?, ?, 0, 40, 1, 2, 'code', ?)",
                         (chunk_id, file_id, body))
            conn.execute("INSERT INTO chunks_fts (rowid, path, context, body) "
                         "VALUES (?, '', '', ?)", (chunk_id, body))
        conn.execute("INSERT INTO chunk_vectors (vector_id, chunk_id, embedding) "
                     "VALUES (1000, 1, vec_int8(?))", (_unit([1.0]),))
        symbols = [(2, 2, "frob"), (2, 2, "twiddle"), (3, 3, "frob")]
        symbols += [(3, 3, "many")] * 6
        names = {name: n for n, name in enumerate(dict.fromkeys(s[2] for s in symbols), 1)}
        conn.executemany("INSERT INTO symbol_names (id, qualified) VALUES (?, ?)",
                         [(n, name) for name, n in names.items()])
        for n, (file_id, chunk_id, name) in enumerate(symbols, 1):
            conn.execute("INSERT INTO symbol_defs (id, file_id, chunk_id, qualified_id, kind, "
                         "first_char, last_char, start_line, end_line) "
                         "VALUES (?, ?, ?, ?, 1, 0, 20, 1, 1)",
                         (n, file_id, chunk_id, names[name]))
    return conn


def _hybrid(conn: Any, names: list[str] | None, params: SearchParams = SearchParams(),
            filters: Filters = Filters()) -> dict[int, float]:
    rows = conn.execute(sql("search_hybrid"), {
        **params.as_sql(), **filters.as_sql(), "match": '"lora"', "query_vector": _unit([1.0]),
        "k": 10, "symbol_names": json.dumps(names) if names is not None else None})
    return {int(row[0]): float(row[7]) for row in rows}


def test_the_symbol_leg_adds_the_defining_chunks_with_their_own_weight(tmp_path: Path) -> None:
    conn = _leg_db(tmp_path / "rag.db")
    params = SearchParams()
    c, w = params.rrf_c, params.w_symbol
    assert w > 0  # on by default (benchmarks/README.md, "Symbols in retrieval")
    assert set(_hybrid(conn, None)) == {1}  # no names: BM25 and the vectors only
    found = _hybrid(conn, ["frob", "twiddle"])
    # Chunk 2 defines both names: rank 1 in the leg; chunk 3 one of them: rank 2.
    assert found[2] == pytest.approx(w / (c + 1))
    assert found[3] == pytest.approx(w / (c + 2))
    assert found[1] == _hybrid(conn, None)[1]  # the other legs' chunk keeps its score
    # A name defined more than symbol_max times points at no one definition.
    assert set(_hybrid(conn, ["many"])) == {1}
    assert set(_hybrid(conn, ["many"], SearchParams(symbol_max=6))) == {1, 3}
    # Off (w_symbol 0): the chunks may join the pool but score nothing from it.
    off = _hybrid(conn, ["frob"], SearchParams(w_symbol=0.0))
    assert off.get(2, 0.0) == 0.0 and off.get(3, 0.0) == 0.0
    # The filters apply inside the leg; names are data, not SQL or GLOB.
    assert set(_hybrid(conn, ["frob"], filters=Filters.of(paths="src/c.py"))) == {3}
    assert set(_hybrid(conn, ["frob"], filters=Filters.of(excludes="*.py"))) == {1}
    assert set(_hybrid(conn, ["fr*", "' OR 1=1 --"])) == {1}


def test_a_question_that_names_a_function_gets_its_definition(shop: Path) -> None:
    """On a real index: the chunk defining `round_price` scores more with the leg than
    without it, and a question that names nothing runs as before."""
    with RagDB(shop / "rag.db", use_cache=False) as rag:
        on = Searcher(rag.conn, SearchParams(), use_cache=False)
        off = Searcher(rag.conn, SearchParams(w_symbol=0.0), use_cache=False)
        question = "What does `round_price` return?"
        with_leg = on.search(question, 10, Mode.hybrid)
        without = off.search(question, 10, Mode.hybrid)
        defining = [h for h in with_leg if h.file_path.endswith("pricing.py")]
        assert defining and with_leg[0].file_path.endswith("pricing.py")
        before = {h.chunk_id: h.score for h in without}
        assert defining[0].score > before.get(defining[0].chunk_id, 0.0)
        plain = "how are discount codes applied"
        assert [(h.chunk_id, h.score) for h in on.search(plain, 10, Mode.hybrid)] == [
            (h.chunk_id, h.score) for h in off.search(plain, 10, Mode.hybrid)]


def test_the_symbol_leg_ranks_the_same_on_postgresql(shop: Path, pg_url: str) -> None:
    """`ragdb copy` into a real PostgreSQL, then the same questions through both engines'
    files: the same hits with the same scores, the leg included (and filtered)."""
    from tests.test_postgres_search import assert_same, compare

    done = run_cli("copy", "rag.db", pg_url, cwd=shop)
    assert done.returncode == 0, done.stderr
    texts = ["What does `round_price` return?", "how does apply_discount use RATES",
             "checkout and quote call `apply_discount`", "Where is `RATES` read?"]
    searcher = Searcher(connect(shop / "rag.db"), use_cache=False)
    for filters, least in ((Filters(), len(texts)), (Filters.of(paths="*/checkout.py"), 2)):
        pairs, answered = compare(searcher, pg_url, texts, Mode.hybrid, filters)
        assert answered >= least
        assert_same(pairs)
    lite, post = compare(searcher, pg_url, texts[:1], Mode.hybrid)[0][0]
    off = Searcher(connect(shop / "rag.db"), SearchParams(w_symbol=0.0), use_cache=False)
    unled, _ = compare(off, pg_url, texts[:1], Mode.hybrid)[0][0]
    assert [h.score for h in lite] != [h.score for h in unled]  # the leg did something


# -- who calls X, where is X used --------------------------------------------------------------

def test_the_questions_answered_from_the_references() -> None:
    assert asks_for_uses("who calls get_tokenizer?") == ("callers", "get_tokenizer")
    assert asks_for_uses("Who calls `LLM.generate()`?") == ("callers", "LLM.generate")
    assert asks_for_uses("Which functions call init_logger") == ("callers", "init_logger")
    assert asks_for_uses("callers of step") == ("callers", "step")
    assert asks_for_uses("Where is the `Scheduler` class used?") == ("references", "Scheduler")
    assert asks_for_uses("where is foo called from?") == ("references", "foo")
    assert asks_for_uses("What uses SamplingParams") == ("references", "SamplingParams")
    assert asks_for_uses("list all references to clap::Command::new") == (
        "references", "clap::Command::new")
    for other in ("how does get_tokenizer work?", "who calls the function that loads models?",
                  "where is the config used in the scheduler?", "who calls?", "where is"):
        assert asks_for_uses(other) is None, other


def test_who_calls_and_where_used_are_answered_from_the_references(shop: Path) -> None:
    done = run_cli("answer", "who calls apply_discount?", "--db", "rag.db", cwd=shop)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "2 definitions that call `apply_discount` (`ragdb callers apply_discount`):",
        "src/shop/checkout.py:6: function shop.checkout.checkout",
        "src/shop/checkout.py:10: function shop.checkout.quote"]
    done = run_cli("answer", "Where is `apply_discount` used?", "--json", "--db", "rag.db",
                   cwd=shop)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["style"] == "references" and shown["sources"] == []
    assert shown["answer"].splitlines() == [
        "3 uses of `apply_discount` (`ragdb references apply_discount`):",
        "src/shop/checkout.py:1: import shop.pricing.apply_discount (in shop.checkout)",
        "src/shop/checkout.py:6: call shop.pricing.apply_discount "
        "(in shop.checkout.checkout)",
        "src/shop/checkout.py:10: call shop.pricing.apply_discount (in shop.checkout.quote)"]
    assert shown["shown"]["total"] == 3
    # A name with no definition: the question is searched and answered as any other.
    done = run_cli("answer", "who calls discount_everything?", "--style", "extractive",
                   "--json", "--db", "rag.db", cwd=shop)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["style"] == "extractive"


# -- a function shown whole, with its callers ---------------------------------------------------

def test_the_function_the_question_names_is_shown_with_its_callers(shop: Path) -> None:
    with RagDB(shop / "rag.db", use_cache=False) as rag:
        answer = rag.answer("How does apply_discount work?", style="extractive")
    assert answer.style == "extractive"
    first = answer.text.split("\n\n[")[0]
    assert "def apply_discount(total: float, code: str) -> float:" in first
    assert "    return total * (1 - rate)" in first  # whole
    assert first.splitlines()[-1] == (
        "Called from `src/shop/checkout.py:6`, `src/shop/checkout.py:10`.")
    assert answer.shown is not None
    assert answer.shown["blocks"][0]["callers"] == first.splitlines()[-1]
    with RagDB(shop / "rag.db", use_cache=False) as rag:
        answer = rag.answer("How does round_price work?", style="extractive")
    first = answer.text.split("\n\n[")[0]
    assert "def round_price(value: float) -> float:" in first
    assert first.splitlines()[-1] == "Called from `src/shop/checkout.py:6`."


def test_which_function_a_block_is_about() -> None:
    one = Definition("apply_discount", 5, 8, ("a.py:6", "b.py:2"), 5)
    two = Definition("round_price", 11, 12, ("a.py:6",), 1)
    terms = question_terms("How does round_price work?")
    assert definition_about((one, two), terms) is two  # the one the question names
    assert definition_about((one,), question_terms("what is this")) is one  # the only one
    assert definition_about((one, two), question_terms("what is this")) is None
    assert definition_about((), terms) is None
    assert callers_line(one) == "Called from `a.py:6`, `b.py:2` and 3 more."
    assert callers_line(two) == "Called from `a.py:6`."
    assert callers_line(Definition("f", 0, 1)) == "" and callers_line(None) == ""
