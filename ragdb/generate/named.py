"""The definition the question names, as a block (issue 39; variant `named` of
benchmarks/bench_blocks.py, not yet the default): blind readers met answers whose first block
was a header prototype, a sample or a fuzz harness calling the name the question writes, while
the definition itself ranked lower or not at all (the symbol leg ranks it weakly: heavier
weights cost docs questions at rank 1). The ranking cannot tell a code question from a docs
one; the answer can show both: its first block and the named definition."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragdb.chunking import PROSE_FILE_KINDS
from ragdb.generate.blocks import MAX_LINES, Block, BlocksAnswerer, Located, _Candidate
from ragdb.generate.cuts import question_terms
from ragdb.generate.prompt import PromptSource
from ragdb.resources import sql
from ragdb.tokenize import written_names

#: Code that shows how to use a definition rather than being it (tests and generated code:
#: _Candidate.secondary).
SAMPLE_PATH = re.compile(r"(?:^|/)(?:examples?|samples?|demos?)/|fuzz|harness", re.I)


@dataclass(frozen=True)
class Named:
    """A definition of a name the question writes: the chunk holding its first line (the
    answer's source for it) and the line of its name (1-based)."""

    source: PromptSource
    line: int


def lookup(conn: Any, symbol_max: int) -> Callable[[str], list[Named]]:
    """The code definitions (functions, methods, classes, types) of a name, by
    sql/block_named.sql on either engine: none where the name has more than `symbol_max`
    definitions of any kind (it points at no one, as the symbol leg says); tests, samples and
    generated code only where nothing else defines it."""
    def find(name: str) -> list[Named]:
        rows = conn.execute(sql("block_named"), {"name": name, "limit": symbol_max}).fetchall()
        found = [Named(PromptSource(str(path), int(a), int(b), int(s), int(e), str(text)),
                       int(line))
                 for path, kind, a, b, s, e, text, line, total in rows
                 if int(total) <= symbol_max and str(kind) not in PROSE_FILE_KINDS]
        plain = [n for n in found if not secondary(n.source.file_path, n.source.text)]
        return plain or found
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
    """`blocks` with the definition of the first name the question writes (written_names)
    that no block shows, cut as any code block (MAX_LINES), numbered as its chunk's rank or
    after the sources: first where the first block is code that only uses the name (it
    writes the name, or lies in a test or sample), else last; at most one. The sources
    (one more where its chunk was not retrieved)."""
    out = list(sources)
    for name in written_names(question):
        defined = find(name)
        if not defined or any(shows(b, d) for b in blocks for d in defined):
            continue  # no code definition, or one of them already shown
        ranks = {(s.file_path, s.first, s.last): n for n, s in enumerate(sources, 1)}
        best = min(defined, key=lambda d: ranks.get(
            (d.source.file_path, d.source.first, d.source.last), len(sources) + 1))
        key = (best.source.file_path, best.source.first, best.source.last)
        number = ranks.get(key, len(sources) + 1)
        source = sources[number - 1] if key in ranks else best.source
        located = answerer.locate(source)
        if located.stale or located.text is None:
            continue
        block = answerer.block(_Candidate(number, source, located), question_terms(question),
                               MAX_LINES)
        if not shows(block, best):
            continue
        block.rule = f"the definition of `{name}`, which the question writes" + block.rule
        if key not in ranks:
            out.append(source)
        first = blocks[0] if blocks else None
        uses = first is not None and first.code and (
            secondary(first.path, "\n".join(first.lines))
            or re.search(rf"\b{re.escape(name)}\b", "\n".join(first.lines)) is not None)
        return ([block, *blocks] if uses else [*blocks, block]), out
    return blocks, out
