"""The variant `named` of the blocks answer (issue 39, ragdb/generate/named.py): a question
that writes a name defined in the code gets that definition as a block, verbatim at its lines,
where no block shows it; first where the first block only uses the name (a sample, a test, a
caller, and shows no definition of another name the question writes), else after the others;
at most one; never a test's, a sample's or another repository's; on rag.db and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from ragdb import RagDB
from ragdb.generate import named
from ragdb.generate.blocks import Block, BlocksAnswerer
from ragdb.generate.prompt import PromptSource, prompt_source
from ragdb.retrieve import Filters, Mode
from ragdb.source_files import SourceFiles
from tests.conftest import run_cli, write_corpus
from tests.test_blocks_halves import ROUTER

DEMO = (
    "from router import match_route\n\n\n"
    "def main():\n"
    "    found = match_route(ROUTES, '/users/7')\n"
    "    print('route for /users/7:', found)\n"
)
FAKE = ("def match_route(routes, path):\n    return routes[0]\n\n\n"
        "def fake_routes():\n    return []\n")
GUIDE = "# Routing\n\nRoutes are tried in order; the first whose pattern matches wins.\n"
# README.md: a root holding files of its own is one project (sql/search_projects.sql).
FILES = {"src/router.py": ROUTER, "examples/demo.py": DEMO, "tests/fakes.py": FAKE,
         "docs/routing.md": GUIDE, "README.md": "# Router\n"}
QUESTION = "Which route does `match_route` pick when two patterns match the path?"


def _index(tmp_path: Path, db: str = "rag.db") -> str:
    write_corpus(tmp_path / "proj", FILES)
    done = run_cli("index", "proj", "--db", db, "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return str(tmp_path / db) if db == "rag.db" else db


def _answer(rag: RagDB, only: str, symbol_max: int = 5, question: str = QUESTION
            ) -> tuple[list[Block], list[PromptSource], list[PromptSource]]:
    """The blocks over the hits of `only` (a ranking where the definition was not retrieved),
    with the named definition's block: (blocks, sources before, sources after)."""
    hits = [h for h in rag.search(question, 10, Mode.lexical) if h.file_path.endswith(only)]
    assert hits
    sources = [prompt_source(h) for h in hits]
    files = SourceFiles(rag.conn)
    answerer = BlocksAnswerer(files, files.included)
    blocks, _ = answerer.build(question, sources)
    shown, after = named.with_named(answerer, question, sources, blocks,
                                    named.Lookup(rag.conn, symbol_max))
    return shown, sources, after


def _lookups(rag: RagDB) -> None:
    """Defined twice, once in a test's fake: the source's definition alone is looked up, and
    none that the search's filters leave out."""
    (found,) = named.Lookup(rag.conn, 5)("match_route")
    assert found.source.file_path == "proj/src/router.py" and found.line == 4
    for filters in (Filters.of(excludes="proj/src/*"), Filters.of("examples/*"),
                    Filters.of(langs="markdown")):
        assert named.Lookup(rag.conn, 5, filters)("match_route") == []
    assert len(named.Lookup(rag.conn, 5, Filters.of("src/"))("match_route")) == 1


def _verbatim(tmp_path: Path, block: Block) -> None:
    lines = (tmp_path / block.path).read_text().split("\n")
    assert block.lines == lines[block.start_line - 1:block.end_line]


def test_the_definition_comes_first_after_a_sample_that_calls_it(tmp_path: Path) -> None:
    with RagDB(_index(tmp_path), use_cache=False) as rag:
        _lookups(rag)
        blocks, before, after = _answer(rag, "examples/demo.py")
    assert [b.path for b in blocks] == ["proj/src/router.py", "proj/examples/demo.py"]
    assert blocks[0].number == len(before) + 1 and len(after) == len(before) + 1
    assert after[-1].file_path == "proj/src/router.py"
    assert "the definition of `match_route`" in blocks[0].rule
    for block in blocks:
        _verbatim(tmp_path, block)
    assert "def match_route(routes, path):" in blocks[0].lines


def test_after_a_docs_block_and_never_twice(tmp_path: Path) -> None:
    with RagDB(_index(tmp_path), use_cache=False) as rag:
        blocks, _, _ = _answer(rag, "docs/routing.md")
        assert [b.path for b in blocks] == ["proj/docs/routing.md", "proj/src/router.py"]
        _verbatim(tmp_path, blocks[1])
        # Already shown: nothing is added.
        shown, before, after = _answer(rag, "src/router.py")
        assert [b.path for b in shown] == ["proj/src/router.py"] and after == before
        # A name defined more often than symbol_max points at no one definition.
        blocks, before, after = _answer(rag, "examples/demo.py", symbol_max=1)
        assert [b.path for b in blocks] == ["proj/examples/demo.py"] and after == before


def test_never_a_tests_nor_another_repositorys(tmp_path: Path) -> None:
    # A name only a test defines gets no block (greenlet's `switch()` got a test's first).
    with RagDB(_index(tmp_path), use_cache=False) as rag:
        assert named.Lookup(rag.conn, 5)("fake_routes") == []
    # One root holding two repositories: only the first block's repository's definition.
    write_corpus(tmp_path / "repos", {f"{r}/{p}": text for r in ("app", "other")
                                      for p, text in FILES.items()})
    assert run_cli("index", "repos", "--db", "two.db", "--no-vectors",
                   cwd=tmp_path).returncode == 0
    with RagDB(tmp_path / "two.db", use_cache=False) as rag:
        find = named.Lookup(rag.conn, 5)
        assert len(find("match_route")) == 2
        (found,) = find("match_route", "repos/app/examples/demo.py")
        assert found.source.file_path == "repos/app/src/router.py"


def test_a_first_block_defining_another_written_name_stays_first(tmp_path: Path) -> None:
    # The demo defines `main`, which the question writes: it is what was asked about.
    asked = "What does `main` print after `match_route` picks the route for /users/7?"
    with RagDB(_index(tmp_path), use_cache=False) as rag:
        blocks, _, _ = _answer(rag, "examples/demo.py", question=asked)
    assert [b.path for b in blocks] == ["proj/examples/demo.py", "proj/src/router.py"]


def test_the_same_definition_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    with RagDB(_index(tmp_path, pg_url), use_cache=False) as rag:
        _lookups(rag)
        blocks, _, _ = _answer(rag, "examples/demo.py")
    assert [b.path for b in blocks] == ["proj/src/router.py", "proj/examples/demo.py"]
    _verbatim(tmp_path, blocks[0])


def test_every_door_lists_the_definition_it_adds(tmp_path: Path) -> None:
    """The definition the search did not retrieve is numbered after the hits: the answer's JSON
    (HTTP, `ragdb answer --json`) and MCP list it as that source, and a dataset's answers cite
    it past the retrieved ranks, never as a retrieved source's rank (a skipped source shifted
    it). The search's filters hold for it too (`--path`, `--exclude`, `--lang`)."""
    from ragdb.answering import added_sources, answer_json
    from ragdb.mcp_server import _added
    from ragdb.schemas import MinimalSearchResults, MinimalSource, StudentSearchResults

    with RagDB(_index(tmp_path), use_cache=False) as rag:
        hits = [h for h in rag.search(QUESTION, 10, Mode.lexical)
                if h.file_path.endswith("examples/demo.py")]
        answer = rag.answer_from(QUESTION, hits, k=10, mode=Mode.lexical, style="extractive")
        n = len(answer.hits) + 1
        assert [(m, s.file_path) for m, s in added_sources(answer)] == [(n, "proj/src/router.py")]
        assert n in answer.cited and f"[{n}] `proj/src/router.py:" in answer.text
        body = answer_json(answer, lambda _chunk: None)
        assert [s["n"] for s in body["sources"]] == list(range(1, n + 1))
        assert body["sources"][-1]["file_path"] == "proj/src/router.py"
        assert body["sources"][-1]["cited"] and body["sources"][-1]["rank"] is None
        assert n in [c["n"] for c in body["citations"]]
        assert [(s.rank, s.file_path) for s in _added(answer)] == [(n, "proj/src/router.py")]

        # A file the filters leave out is not added either.
        for filters in (Filters.of(excludes="proj/src/*"), Filters.of("proj/examples/*")):
            kept = rag.answer_from(QUESTION, hits, k=10, mode=Mode.lexical, style="extractive",
                                   filters=filters)
            assert "router.py" not in kept.text and not added_sources(kept)
        searched = rag.answer(QUESTION, 3, Mode.lexical, filters=Filters.of("proj/examples/*"),
                              style="extractive")
        assert "router.py" not in searched.text and not added_sources(searched)

        hit = answer.hits[0]
        gone = MinimalSource(file_path="proj/gone.py", first_character_index=0,
                             last_character_index=10)
        found = MinimalSource(file_path=hit.file_path, first_character_index=hit.first,
                              last_character_index=hit.last)
        results = StudentSearchResults(k=2, search_results=[MinimalSearchResults(
            question_id="q", question=QUESTION, question_str=QUESTION,
            retrieved_sources=[gone, found])])
        saved = rag.answer_dataset(results, tmp_path / "answers.json", style="extractive")
    text = saved.search_results[0].answer
    # The demo is retrieved rank 2; the definition, [2] among the one resolved source, is [3].
    assert "[2] `proj/examples/demo.py:" in text and "[3] `proj/src/router.py:" in text
