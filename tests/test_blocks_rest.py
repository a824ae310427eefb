"""Issue 39's `rest` candidate (BlocksAnswerer.rest, cuts.region's `rest`): a long definition
whose question words lie in its docstring or signature was cut a third above and the rest
below, and stopped before the branch that answers; with `rest` the block runs on through the
rest of the definition first. On a corpus of its own indexed by the real `ragdb index`, every
block verbatim at its path:start-end; the default (rest 0) unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import bench_blocks
from ragdb import RagDB
from ragdb.generate.blocks import MAX_LINES, BlocksAnswerer
from ragdb.retrieve import Mode
from tests.conftest import run_cli, write_corpus
from tests.test_blocks import assert_verbatim


def _tagged() -> str:
    """A 110-line function: the question's words in its docstring, the no-tag branch 60 lines
    below them."""
    doc = [f"    Note {i}: the union's members are registered once, in order." for i in range(20)]
    setup = [f"    hook_{i} = converter.lookup(members[{i}])" for i in range(45)]
    tail = [f"    registry_{i} = converter.register(members[{i}])" for i in range(30)]
    return ("def structure_tagged(payload, members, default=None):\n"
            '    """Structure a payload into one of the union\'s members by its tag.\n\n'
            + "\n".join(doc) + "\n\n"
            "    When the payload has no tag key and a default class was given, the default\n"
            "    class structures it.\n"
            '    """\n'
            + "\n".join(setup) + "\n"
            "    if TAG_KEY in payload:\n"
            "        return hooks[payload[TAG_KEY]](payload)\n"
            "    if default is not None:\n"
            "        return structure_default(payload, default)\n"
            "    raise MissingTag(payload)\n"
            + "\n".join(tail) + "\n    return registry_0\n")


def _scan() -> str:
    """A C file: a short function, then one whose signature holds the question's words and
    whose `return n` (what it returns) ends a long loop."""
    loop = [f"    step_{i} = advance(reg, start, {i});" for i in range(60)]
    return ("extern int\nsearch_with_param(regex_t* reg, const UChar* str)\n{\n"
            + "\n".join(f"  int unused_{i} = {i};" for i in range(20))
            + "\n  return search_in_range(reg, str);\n}\n\n"
            "extern int\nscan_matches(regex_t* reg, const UChar* str,\n"
            "             int (*scan_callback)(int, int, void*), void* callback_arg)\n{\n"
            "  int n = 0;\n  while (1) {\n"
            + "\n".join(loop) + "\n"
            "    if (step_0 < 0) break;\n"
            "    n++;\n"
            "  }\n"
            "  return n;  /* the number of matches */\n"
            "}\n")


CORPUS = {"src/unions.py": _tagged(), "src/scan.c": _scan()}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("blocks_rest")
    write_corpus(root / "proj", CORPUS)
    done = run_cli("index", "proj", "--db", "rag.db", "--no-vectors", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture(scope="module")
def rag(indexed: Path) -> Iterator[RagDB]:
    with RagDB(indexed / "rag.db", use_cache=False) as db:
        yield db


def _answer(rag: RagDB, question: str, rest: int) -> tuple[str, dict[str, Any]]:
    was = BlocksAnswerer.rest
    BlocksAnswerer.rest = rest
    try:
        answer = rag.answer(question, k=5, mode="lexical")
    finally:
        BlocksAnswerer.rest = was
    assert answer.shown is not None
    return answer.text, answer.shown


def _line(path: str, text: str) -> int:
    """The 1-based number of the line of CORPUS[path] that holds `text`."""
    return next(i for i, x in enumerate(CORPUS[path].split("\n"), 1) if text in x)


QUESTION = ("In structure_tagged, what happens to a payload with no tag key when a default "
            "class was given?")


def test_today_stops_before_the_no_tag_branch_and_rest_shows_it(rag: RagDB,
                                                                indexed: Path) -> None:
    branch = _line("src/unions.py", "return structure_default(payload, default)")
    before, shown = _answer(rag, QUESTION, 0)
    block = shown["blocks"][0]
    assert block["file_path"] == "proj/src/unions.py"
    assert block["end_line"] < branch  # the default's cut: the docstring, then it stops
    assert "return structure_default" not in before
    assert_verbatim(indexed, before, shown["blocks"])

    after, shown = _answer(rag, QUESTION, 80)
    block = shown["blocks"][0]
    assert block["file_path"] == "proj/src/unions.py"
    assert block["start_line"] <= _line("src/unions.py", "has no tag key") < branch \
        < block["end_line"]
    assert block["end_line"] - block["start_line"] + 1 <= 80
    assert block["signature_lines"] == [1]  # def structure_tagged(...), then `...`
    assert "def structure_tagged(payload, members, default=None):\n    ...\n" in after
    assert "raise MissingTag(payload)" in after  # the branches after it too
    assert_verbatim(indexed, after, shown["blocks"])


def test_rest_at_the_default_limit_only_moves_the_lines_above_below(rag: RagDB,
                                                                    indexed: Path) -> None:
    text, shown = _answer(rag, QUESTION, MAX_LINES)
    block = shown["blocks"][0]
    assert block["end_line"] - block["start_line"] + 1 <= MAX_LINES
    assert block["start_line"] == _line("src/unions.py", "has no tag key")
    assert_verbatim(indexed, text, shown["blocks"])


def test_a_c_function_named_in_its_signature_runs_on_to_its_return(rag: RagDB,
                                                                   indexed: Path) -> None:
    question = "What does scan_matches return after scan_callback, with callback_arg?"
    before, shown = _answer(rag, question, 0)
    block = shown["blocks"][0]
    assert block["file_path"] == "proj/src/scan.c"
    assert "return n;" not in before
    after, shown = _answer(rag, question, 80)
    block = shown["blocks"][0]
    assert block["file_path"] == "proj/src/scan.c"
    assert "return n;  /* the number of matches */" in after
    assert "search_in_range" not in after  # not the function before it
    assert_verbatim(indexed, after, shown["blocks"])


def test_bench_blocks_sets_rest_for_its_answer_only(rag: RagDB) -> None:
    hits = rag.search(QUESTION, 5, Mode.lexical)
    found = bench_blocks.answer_with(rag, bench_blocks.REST, QUESTION, hits, 5)
    assert BlocksAnswerer.rest == 0 and BlocksAnswerer.longer == 0
    assert found.shown is not None
    assert "return structure_default" in found.text
    plain = bench_blocks.answer_with(rag, bench_blocks.BLOCKS, QUESTION, hits, 5)
    assert "return structure_default" not in plain.text
