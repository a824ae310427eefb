"""The definition the question names, as a block (issue 39; bench_blocks' variant `named`):
readers met answers showing a prototype, sample or harness that calls the name the question
writes, not its definition. The ranking cannot tell a code question from a docs one; the
answer can show both."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ragdb.chunking import PROSE_FILE_KINDS
from ragdb.generate.blocks import MAX_LINES, Block, BlocksAnswerer, Located, _Candidate
from ragdb.generate.cuts import question_terms
from ragdb.generate.prompt import PromptSource
from ragdb.resources import sql
from ragdb.tokenize import written_names

#: Code that shows how to use a definition (tests and generated code: _Candidate.secondary).
SAMPLE_PATH = re.compile(r"(?:^|/)(?:examples?|samples?|demos?)/|fuzz|harness", re.I)


class Named(NamedTuple):
    source: PromptSource  # the chunk holding the definition's first line
    line: int  # the line of its name, 1-based


def lookup(conn: Any, symbol_max: int) -> Callable[[str], list[Named]]:
    """A name's code definitions (sql/block_named.sql, either engine): none where it has more
    than `symbol_max` of any kind (it points at no one, as the symbol leg says); tests, samples
    and generated code only where nothing else defines it."""
    def find(name: str) -> list[Named]:
        rows = conn.execute(sql("block_named"), {"name": name, "limit": symbol_max}).fetchall()
        found = [Named(PromptSource(str(p), int(a), int(b), int(s), int(e), str(t)), int(n))
                 for p, kind, a, b, s, e, t, n, total in rows
                 if int(total) <= symbol_max and str(kind) not in PROSE_FILE_KINDS]
        return [d for d in found if not secondary(d.source.file_path, d.source.text)] or found
    return find


def secondary(path: str, text: str) -> bool:
    """Whether code lies in a test, a sample or a harness, or is generated."""
    return SAMPLE_PATH.search(path) is not None or bool(
        _Candidate(0, PromptSource(path, 0, 0, 0, 0, text), Located()).secondary)


def shows(block: Block, named: Named) -> bool:
    """Whether a block shows the line of the definition's name (in its lines or heads)."""
    return block.path == named.source.file_path and (
        block.start_line <= named.line <= block.end_line
        or any(n == named.line for n, _ in block.heads))


def with_named(answerer: BlocksAnswerer, find: Callable[[str], list[Named]], question: str,
               sources: Sequence[PromptSource], blocks: list[Block]
               ) -> tuple[list[Block], list[PromptSource]]:
    """`blocks` and the definition of the first name the question writes that no block shows,
    cut as the first slot cuts code, [n] its chunk's rank or after the sources (one more):
    first where the first block is code that only uses the name, else last. At most one."""
    def key(s: PromptSource) -> tuple[str, int, int]:
        return s.file_path, s.first, s.last
    ranks = {key(s): n for n, s in enumerate(sources, 1)}
    for name in written_names(question):
        defined = find(name)
        if not defined or any(shows(b, d) for b in blocks for d in defined):
            continue
        best = min(defined, key=lambda d: ranks.get(key(d.source), len(sources) + 1))
        number = ranks.get(key(best.source), len(sources) + 1)
        source = sources[number - 1] if number <= len(sources) else best.source
        located = answerer.locate(source)
        if located.stale or located.text is None:
            continue
        block = answerer.block(_Candidate(number, source, located), question_terms(question),
                               MAX_LINES)
        if not shows(block, best):
            continue
        block.rule = f"the definition of `{name}`, which the question writes" + block.rule
        first = blocks[0] if blocks else None
        uses = first is not None and first.code and (
            secondary(first.path, "\n".join(first.lines))
            or re.search(rf"\b{re.escape(name)}\b", "\n".join(first.lines)) is not None)
        return ([block, *blocks] if uses else [*blocks, block]), [
            *sources, *([source] if number > len(sources) else [])]
    return blocks, list(sources)
