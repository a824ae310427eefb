"""BlocksAnswerer.in_project (issue 39): where the question names a project of an index
holding several (the root prior's reading, Searcher.named_projects) and a retrieved source lies
in one, only those sources are candidates for every block, the first included (readers met an
HCL answer opening with eslint code); where none does, the choice is as without it. A
question naming no project, and an index of one project, are unaffected. On rag.db and
PostgreSQL, through RagDB.answerer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ragdb import RagDB
from ragdb.generate.blocks import BlocksAnswerer
from ragdb.generate.prompt import PromptSource, prompt_source
from ragdb.retrieve import Mode
from tests.conftest import run_cli, write_corpus
from tests.test_blocks_named import FILES

NAMED = "In alpha, which route does `match_route` pick when two patterns match the path?"
UNNAMED = "Which route does `match_route` pick when two patterns match the path?"
ALPHA, BETA = "repos/alpha/src/router.py", "repos/beta/src/router.py"


def _index(tmp_path: Path, db: str = "two.db") -> str:
    """One root holding two repositories (alpha, beta), each the same small router project
    (beta's files one blank line longer: not copies, which the search would fold)."""
    write_corpus(tmp_path / "repos", {f"{r}/{p}": text + "\n" * (r == "beta")
                                      for r in ("alpha", "beta") for p, text in FILES.items()})
    done = run_cli("index", "repos", "--db", db, "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return str(tmp_path / db) if db == "two.db" else db


def _sources(rag: RagDB, question: str, *paths: str) -> list[PromptSource]:
    """The best hit of each path, in this order, all scoring the same (a ranking whose margin
    would take the second)."""
    hits = rag.search(question, 20, Mode.lexical)
    chosen = [next(h for h in hits if h.file_path == p) for p in paths]
    return [replace(prompt_source(h), score=1.0) for h in chosen]


def _paths(rag: RagDB, question: str, sources: list[PromptSource], on: bool) -> list[str]:
    answerer = rag.answerer("extractive")
    assert isinstance(answerer, BlocksAnswerer)
    answerer.in_project = on
    blocks, _, _ = answerer.chosen(question, sources)
    return [b.path for b in blocks]


def _check(rag: RagDB) -> None:
    assert rag.searcher.named_projects(NAMED) == ["repos/alpha"]
    assert rag.searcher.named_projects(UNNAMED) == []
    # Beta's file ranked first: off, it opens the answer; on, alpha's opens it, alone.
    beta_first = _sources(rag, NAMED, BETA, ALPHA)
    assert _paths(rag, NAMED, beta_first, False) == [BETA, ALPHA]
    assert _paths(rag, NAMED, beta_first, True) == [ALPHA]
    # The margin's second skips beta's file and takes alpha's docs page after it.
    three = _sources(rag, NAMED, ALPHA, BETA, "repos/alpha/docs/routing.md")
    assert _paths(rag, NAMED, three, False)[:2] == [ALPHA, BETA]
    assert _paths(rag, NAMED, three, True) == [ALPHA, "repos/alpha/docs/routing.md"]
    # No source in alpha: as without the rule (named's definition from the first's project).
    demo = _sources(rag, NAMED, "repos/beta/examples/demo.py")
    assert _paths(rag, NAMED, demo, True) == _paths(rag, NAMED, demo, False) == [
        BETA, "repos/beta/examples/demo.py"]
    # A question naming no project: unchanged.
    plain = _sources(rag, UNNAMED, BETA, ALPHA)
    assert _paths(rag, UNNAMED, plain, True) == _paths(rag, UNNAMED, plain, False) == [
        BETA, ALPHA]


def test_every_block_stays_in_the_named_project(tmp_path: Path) -> None:
    with RagDB(_index(tmp_path), use_cache=False) as rag:
        _check(rag)


def test_an_index_of_one_project_is_unaffected(tmp_path: Path) -> None:
    write_corpus(tmp_path / "proj", FILES)
    assert run_cli("index", "proj", "--db", "one.db", "--no-vectors",
                   cwd=tmp_path).returncode == 0
    asked = "In proj, which route does `match_route` pick when two patterns match the path?"
    with RagDB(tmp_path / "one.db", use_cache=False) as rag:
        assert rag.searcher.named_projects(asked) == ["proj"]
        sources = _sources(rag, asked, "proj/src/router.py", "proj/docs/routing.md")
        assert _paths(rag, asked, sources, True) == _paths(rag, asked, sources, False) == [
            "proj/src/router.py", "proj/docs/routing.md"]


def test_the_same_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    with RagDB(_index(tmp_path, pg_url), use_cache=False) as rag:
        _check(rag)
