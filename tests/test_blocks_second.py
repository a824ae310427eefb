"""Issue 39's `second` candidate (BlocksAnswerer.second, a bench_blocks variant): where the
default shows one block, a second joins, the best-ranked source not shown whose block shows no
line of the first, another section of the same file included; where the default shows two,
nothing changes. On a corpus of its own indexed by the real `ragdb index`, every block
verbatim at its path:start-end; the default (second off) unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import bench_blocks
from ragdb import RagDB
from ragdb.generate.blocks import NEXT_BEST, SECOND_LINES, BlocksAnswerer
from ragdb.generate.prompt import prompt_source
from ragdb.retrieve import Mode
from ragdb.source_files import SourceFiles
from tests.conftest import run_cli, write_corpus
from tests.test_blocks import assert_verbatim


def _section(title: str, topic: str, lines: int) -> str:
    """A docs section of `lines` paragraphs, each a sentence on `topic`."""
    body = "\n\n".join(f"Paragraph {i} on {topic}: the setting number {i} is read once at "
                       f"start and kept until the process ends." for i in range(lines))
    return f"## {title}\n\n{body}\n"


GUIDE = ("# Cache guide\n\n"
         + _section("Eviction", "eviction: the cache evicts the least recently used entries "
                    "when the eviction limit is reached", 8) + "\n"
         + _section("Warming", "warming: the cache loads the entries of warm.txt", 30))
FAILOVER = ("## Failover\n\nA replica takes over after the quorum of three monitors agrees "
            "that the primary is gone; a monitor votes after two missed heartbeats.\n")
# README.md: a root holding files of its own is one project (sql/search_projects.sql).
CORPUS = {"README.md": "# Cache\n", "docs/cache.md": GUIDE, "docs/failover_a.md": FAILOVER,
          "docs/failover_b.md": FAILOVER.replace("## Failover", "## Replica failover"),
          "src/app.py": "def main():\n    return 0\n",
          "src/sweep.py": "def drop_stale(store):\n    return [k for k in store if k]\n"}
ONE = "How do I make the cache evict entries when the eviction limit is reached?"
NAMED = "How do I make the cache evict entries when the limit is reached, with `drop_stale`?"
TWO = "How many monitors must agree before a replica takes over from the primary?"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("blocks_second")
    write_corpus(root / "proj", CORPUS)
    done = run_cli("index", "proj", "--db", "rag.db", "--no-vectors", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture(scope="module")
def rag(indexed: Path) -> Iterator[RagDB]:
    with RagDB(indexed / "rag.db", use_cache=False) as db:
        yield db


def _answer(rag: RagDB, question: str, second: bool) -> tuple[str, dict[str, Any]]:
    was = BlocksAnswerer.second
    BlocksAnswerer.second = second
    try:
        answer = rag.answer(question, k=5, mode="lexical")
    finally:
        BlocksAnswerer.second = was
    assert answer.shown is not None
    return answer.text, answer.shown


def _line(text: str) -> int:
    """The 1-based number of the line of GUIDE that holds `text`."""
    return next(i for i, x in enumerate(GUIDE.split("\n"), 1) if text in x)


def test_one_block_gets_the_next_best_section_of_the_same_file(rag: RagDB,
                                                               indexed: Path) -> None:
    before, shown = _answer(rag, ONE, False)
    (first,) = shown["blocks"]  # one file ranks: the default shows one section
    assert first["file_path"] == "proj/docs/cache.md"
    warming = _line("## Warming")
    assert first["start_line"] < warming and first["end_line"] < warming
    assert_verbatim(indexed, before, shown["blocks"])

    after, shown = _answer(rag, ONE, True)
    assert shown["blocks"][0] == first
    assert len(shown["blocks"]) == 2
    extra = shown["blocks"][1]
    # The best-ranked source whose block shows no line of the first: by the ranking itself.
    hits = rag.search(ONE, 5, Mode.lexical)
    rank = next(n for n, h in enumerate(hits, 1)
                if h.file_path != first["file_path"] or h.start_line > first["end_line"]
                or h.end_line < first["start_line"])
    assert extra["n"] == rank and hits[rank - 1].file_path == "proj/docs/cache.md"
    assert extra["file_path"] == "proj/docs/cache.md"
    assert extra["start_line"] > first["end_line"] and extra["start_line"] >= warming
    assert extra["end_line"] - extra["start_line"] + 1 <= SECOND_LINES
    assert extra["rule"] == f"rank {rank}: {NEXT_BEST}"
    assert after.startswith(before.split("\n\n[")[0])  # the first block as it was
    assert_verbatim(indexed, after, shown["blocks"])


def test_two_blocks_stay_as_they_are(rag: RagDB, indexed: Path) -> None:
    before, shown = _answer(rag, TWO, False)
    assert len(shown["blocks"]) == 2  # two files, one score: the margin's second block
    assert {b["file_path"] for b in shown["blocks"]} == {"proj/docs/failover_a.md",
                                                         "proj/docs/failover_b.md"}
    after, again = _answer(rag, TWO, True)
    assert after == before and again == shown
    assert_verbatim(indexed, after, again["blocks"])


def _docs_only(rag: RagDB, question: str, second: bool) -> tuple[str, dict[str, Any]]:
    """The answer over the docs' hits alone (a ranking where the definition the question
    names was not retrieved), as RagDB makes it."""
    hits = [h for h in rag.search(question, 10, Mode.lexical) if h.file_path.endswith(".md")]
    was = BlocksAnswerer.second
    BlocksAnswerer.second = second
    try:
        answer = rag.answer_from(question, hits[:5], k=5, mode=Mode.lexical, style="extractive")
    finally:
        BlocksAnswerer.second = was
    assert answer.shown is not None
    return answer.text, answer.shown


def test_where_named_adds_its_definition_second_gives_way(rag: RagDB, indexed: Path) -> None:
    before, shown = _docs_only(rag, NAMED, False)
    assert [b["file_path"] for b in shown["blocks"]] == ["proj/docs/cache.md",
                                                         "proj/src/sweep.py"]
    assert shown["blocks"][1]["rule"].startswith("the definition of `drop_stale`")
    after, again = _docs_only(rag, NAMED, True)
    assert after == before and again == shown
    # Without `named`, the same ranking gets `second`'s block: it gave way above.
    files = SourceFiles(rag.conn)
    answerer = BlocksAnswerer(files, files.included)
    answerer.second = True
    hits = [h for h in rag.search(NAMED, 10, Mode.lexical) if h.file_path.endswith(".md")]
    blocks, _ = answerer.build(NAMED, [prompt_source(h) for h in hits[:5]])
    assert len(blocks) == 2 and NEXT_BEST in blocks[1].rule
    assert_verbatim(indexed, after, again["blocks"])


def test_bench_blocks_sets_second_for_its_answer_only(rag: RagDB) -> None:
    hits = rag.search(ONE, 5, Mode.lexical)
    found = bench_blocks.answer_with(rag, bench_blocks.SECOND, ONE, hits, 5)
    assert BlocksAnswerer.second is False
    assert found.shown is not None and len(found.shown["blocks"]) == 2
    plain = bench_blocks.answer_with(rag, bench_blocks.BLOCKS, ONE, hits, 5)
    assert plain.shown is not None and len(plain.shown["blocks"]) == 1
