"""Two rules of the blocks answer read blind and kept (issue 39, benchmarks/README.md): a
two-part question whose second part the first block leaves out gets, as its second block, the
candidate that holds that part's words, in place of the margin's choice (`halves`); a docs
block cut from a longer passage starts with what its first paragraph points back at
(`leads`)."""

from __future__ import annotations

from pathlib import Path

from ragdb import RagDB
from ragdb.generate import blocks as blocks_module
from ragdb.generate.blocks import (Block, BlocksAnswerer, Located, block_terms, holds,
                                   question_parts, question_words)
from ragdb.generate.prompt import PromptSource
from ragdb.retrieve import Mode
from tests.conftest import run_cli, write_corpus

ROUTER = (
    "import re\n\n\n"
    "def match_route(routes, path):\n"
    '    """Pick the first route whose pattern matches the whole path."""\n'
    "    for route in routes:\n"
    "        if route.pattern.fullmatch(path):\n"
    "            return route\n"
    "    return None\n"
)
CHANGELOG = "# Changelog\n\nVersion 2 renamed the route table and its pattern syntax.\n"
STATUS = (
    "def method_not_allowed(request):\n"
    '    """Answer 405 when the request\'s method is not among its route\'s methods."""\n'
    "    allowed = ', '.join(request.route.methods)\n"
    "    return Response(status=405, headers={'Allow': allowed})\n"
)
FILES = {"src/router.py": ROUTER, "docs/changelog.md": CHANGELOG, "src/status.py": STATUS}
TWO_PART = ("How does match_route pick a route for a path, and which status answers a request "
            "when its method is not allowed?")


def _sources(scores: dict[str, float]) -> list[PromptSource]:
    """Each file whole as one retrieved source, in the order and with the scores given."""
    return [PromptSource(path, 0, len(FILES[path]), 1, FILES[path].count("\n"), FILES[path],
                         score=score) for path, score in scores.items()]


def _answerer() -> BlocksAnswerer:
    """The blocks answerer over whole files, read as given (no files here)."""
    return BlocksAnswerer(lambda source: Located(
        text=source.text, language="markdown" if source.file_path.endswith(".md") else "python"))


def _build(question: str, share: float = blocks_module.HALVES_SHARE,
           ranked: dict[str, float] | None = None) -> tuple[list[Block], list[str]]:
    """The blocks for `question` over `ranked` (ALONE: no second file within the margin) with
    HALVES_SHARE at `share` (above 1: the rule can never act)."""
    kept = blocks_module.HALVES_SHARE
    blocks_module.HALVES_SHARE = share
    try:
        return _answerer().build(question, _sources(ranked or ALONE))
    finally:
        blocks_module.HALVES_SHARE = kept


#: The changelog within the margin (0.9 of the top score): the margin's second block.
RANKED = {"src/router.py": 1.0, "docs/changelog.md": 0.95, "src/status.py": 0.5}
#: No second file within the margin: one block, unless the rule adds the other half's.
ALONE = {"src/router.py": 1.0, "docs/changelog.md": 0.6, "src/status.py": 0.5}


def test_a_question_parts_at_and_before_a_question_word_not_at_a_comma() -> None:
    parts = question_parts(TWO_PART)  # ("allowed" only frames, as support.FRAME says)
    assert [[token for token, _ in part] for part in parts] == [
        ["match_route", "pick", "route", "path"], ["status", "answers", "request"]]
    # A clause that sets the scene asks one thing; "default" and "option" only frame it.
    assert len(question_parts("When a flag is set twice, which value wins?")) == 1
    assert [t for t, _ in question_words("What is the default option of mlp_bias?")] == [
        "mlp_bias"]


def test_an_identifier_is_held_whole_or_by_all_its_parts() -> None:
    (_, word), = question_words("create_from_handle")
    assert holds(frozenset({"createfromhandle"}), word)
    assert holds(frozenset({"create", "from", "handle"}), word)
    assert not holds(frozenset({"create", "handle"}), word)


def test_the_second_part_is_shown_where_the_margin_chose_no_second_block() -> None:
    before, _ = _build(TWO_PART, 2.0)
    assert [b.path for b in before] == ["src/router.py"]  # no second file within the margin
    after, notes = _build(TWO_PART)
    assert [b.path for b in after] == ["src/router.py", "src/status.py"] and not notes
    assert after[0].lines == before[0].lines  # the first block is the default's
    assert after[1].number == 3 and "holds 3 of the 3 words" in after[1].rule
    assert "(status, answers, request)" in after[1].rule
    for block in after:  # verbatim, at its lines
        lines = FILES[block.path].split("\n")
        assert block.lines == lines[block.start_line - 1:block.end_line]
    assert "405" in block_terms(after[1]) and "405" not in block_terms(after[0])


def test_never_in_place_of_the_margins_choice() -> None:
    # Read blind, the answers where it replaced the margin's block were worse (3 of 3).
    assert [b.path for b in _build(TWO_PART, ranked=RANKED)[0]] == [
        "src/router.py", "docs/changelog.md"]


def test_one_clause_or_a_first_block_that_holds_both_parts_changes_nothing() -> None:
    one = "How does match_route pick a route for a path?"
    assert [b.path for b in _build(one)[0]] == ["src/router.py"]
    # The second part already in the first block: nothing is added.
    both = "How does match_route pick a route for a path, and what does it return for none?"
    assert [b.path for b in _build(both)[0]] == ["src/router.py"]


def test_a_block_that_holds_fewer_than_half_of_the_missing_words_is_not_shown() -> None:
    # status.py holds 1 (status) of the 5 words of the second part: not at 0.5; at 0.1, yes.
    question = ("How does match_route pick a route for a path, and which status goes with "
                "a teapot refusing coffee brewing?")
    assert [b.path for b in _build(question)[0]] == ["src/router.py"]
    assert [b.path for b in _build(question, 0.1)[0]] == ["src/router.py", "src/status.py"]


def test_the_answer_shows_the_other_half_from_a_real_index_verbatim(tmp_path: Path) -> None:
    """The answer's second block is the other half's, from a real index, the files' lines."""
    write_corpus(tmp_path / "proj", FILES)
    done = run_cli("index", "proj", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with RagDB(tmp_path / "rag.db", use_cache=False) as rag:
        hits = rag.search(TWO_PART, 5, Mode.lexical)
        found = rag.answer_from(TWO_PART, hits, k=5, mode=Mode.lexical, style="extractive")
    assert found.shown is not None
    paths = [b["file_path"] for b in found.shown["blocks"]]
    assert "proj/src/status.py" in paths
    for block in found.shown["blocks"]:
        lines = (tmp_path / block["file_path"]).read_text().split("\n")
        assert "\n".join(lines[block["start_line"] - 1:block["end_line"]]).strip() \
            in found.text


# -- `leads`: a cut docs block starts with what its first paragraph points at ---

PAGE = [
    "## Build from source",            # 0
    "",
    "Other matters come first.",       # 2
    "",
    "Run the build:",                  # 4
    "",
    "```bash",                         # 6
    "python setup.py develop",
    "```",                             # 8
    "",
    "This command will do the following:",  # 10
    "",
    "1. Compile the kernels.",         # 12
    "2. Install the package.",
    "",
    "Closing words.",                  # 15
]


def test_a_block_that_points_back_starts_with_the_command_and_its_introduction() -> None:
    from ragdb.generate.cuts import with_lead

    # "This command ..." points back at the fence; "Run the build:" introduces the fence.
    assert with_lead(PAGE, 2, 10, 13, 60) == (4, 13)
    # Within 10 lines the end is cut back to whole paragraphs, never before the first one's.
    assert with_lead(PAGE, 2, 10, 15, 10) == (4, 13)
    assert with_lead(PAGE, 2, 10, 13, 5) == (10, 13)  # it would leave out the list: unchanged
    # A block that starts at the passage, or with a paragraph that points at nothing, stays.
    assert with_lead(PAGE, 2, 2, 13, 60) == (2, 13)
    assert with_lead(PAGE, 2, 15, 15, 60) == (15, 15)


def test_a_cut_docs_block_starts_with_its_command_verbatim() -> None:
    text = "\n".join(["# Install", ""] + [f"Filler paragraph {i} about packaging.\n"
                                          for i in range(40)] + PAGE[4:]) + "\n"
    source = PromptSource("docs/install.md", text.index("This command"), len(text),
                          text[:text.index("This command")].count("\n") + 1,
                          text.count("\n"), text, score=1.0)

    answerer = BlocksAnswerer(lambda s: Located(text=s.text, language="markdown"))
    (lead,), _ = answerer.build("What does the build command do?", [source])
    assert lead.lines[0] == "Run the build:" and "python setup.py develop" in lead.lines
    assert lead.lines == text.split("\n")[lead.start_line - 1:lead.end_line]
