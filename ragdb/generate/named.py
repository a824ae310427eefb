"""The definition the question names, as a block (issue 39; in every door's answer):
readers met answers showing a prototype, sample or harness that calls the name the question
writes, not its definition. The ranking cannot tell a code question from a docs one; the
answer can show both."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from ragdb.chunking import PROSE_FILE_KINDS
from ragdb.generate.blocks import MAX_LINES, Block, BlocksAnswerer, Located, _Candidate
from ragdb.generate.cuts import question_terms
from ragdb.generate.prompt import PromptSource
from ragdb.resources import sql
from ragdb.retrieve import NO_FILTERS, Filters
from ragdb.tokenize import written_names

#: Code that shows how to use a definition (tests and generated code: _Candidate.secondary).
SAMPLE_PATH = re.compile(r"(?:^|/)(?:examples?|samples?|demos?)/|fuzz|harness", re.I)


class Named(NamedTuple):
    source: PromptSource  # the chunk holding the definition's first line
    line: int  # the line of its name, 1-based


class Lookup(NamedTuple):
    """A name's code definitions (sql/block_named.sql, either engine), called as
    `lookup(name, near)`: none where it has more than `symbol_max` of any kind (it points at no
    one, as the symbol leg says); never one in tests, samples or generated code (issue 39:
    greenlet's `switch()` got a test's `switch` first), nor, where the index holds several
    projects (sql/search_projects.sql: its roots, a folder of repositories' each repository),
    one outside the project of `near` (the first block's file; YARD's `merge` got another
    repository's Go `merge()`), nor one in a file the search's `filters` leave out."""
    conn: Any
    symbol_max: int
    filters: Filters = NO_FILTERS

    def __call__(self, name: str, near: str = "") -> list[Named]:
        held = [str(p) for _, p in self.conn.execute(sql("search_projects")).fetchall()
                if near.startswith(f"{p}/")]
        rows = self.conn.execute(sql("block_named"), {
            "name": name, "limit": self.symbol_max, "project": max(held, key=len, default=""),
            **self.filters.as_sql()}).fetchall()
        return [Named(PromptSource(str(p), int(a), int(b), int(s), int(e), str(t)), int(n))
                for p, kind, a, b, s, e, t, n, total in rows
                if int(total) <= self.symbol_max and str(kind) not in PROSE_FILE_KINDS
                and not secondary(str(p), str(t))]

    def lines(self, name: str, path: str) -> set[int]:
        """The name lines of the definitions of `name` in the file `path` (any number)."""
        rows = self.conn.execute(sql("block_named_in"), {"name": name, "path": path})
        return {int(n) for (n,) in rows.fetchall()}


def secondary(path: str, text: str) -> bool:
    """Whether code lies in a test, a sample or a harness, or is generated."""
    return SAMPLE_PATH.search(path) is not None or bool(
        _Candidate(0, PromptSource(path, 0, 0, 0, 0, text), Located()).secondary)


def shows(block: Block, path: str, line: int) -> bool:
    """Whether a block shows line `line` of `path` (a definition's name: in its lines or
    heads)."""
    return block.path == path and (block.start_line <= line <= block.end_line
                                   or any(n == line for n, _ in block.heads))


def with_named(answerer: BlocksAnswerer, question: str, sources: Sequence[PromptSource],
               blocks: list[Block], find: Lookup) -> tuple[list[Block], list[PromptSource]]:
    """`blocks` and the definition of the first name the question writes that no block shows,
    cut as the first slot cuts code, [n] its chunk's rank or after the sources (one more):
    first where the first block is code that only uses the name (shows no definition of
    another name the question writes: YARD's `RegistryStore#save` stays first), else last.
    At most one."""
    def key(s: PromptSource) -> tuple[str, int, int]:
        return s.file_path, s.first, s.last
    ranks = {key(s): n for n, s in enumerate(sources, 1)}
    names = written_names(question)
    for name in names:
        defined = find(name, blocks[0].path if blocks else "")
        if not defined or any(shows(b, d.source.file_path, d.line)
                              for b in blocks for d in defined):
            continue
        best = min(defined, key=lambda d: ranks.get(key(d.source), len(sources) + 1))
        number = ranks.get(key(best.source), len(sources) + 1)
        source = sources[number - 1] if number <= len(sources) else best.source
        located = answerer.locate(source)
        if located.stale or located.text is None:
            continue
        block = answerer.block(_Candidate(number, source, located), question_terms(question),
                               MAX_LINES)
        if not shows(block, best.source.file_path, best.line):
            continue
        block.rule = f"the definition of `{name}`, which the question writes" + block.rule
        first = blocks[0] if blocks else None
        uses = first is not None and first.code and (
            secondary(first.path, "\n".join(first.lines))
            or re.search(rf"\b{re.escape(name)}\b", "\n".join(first.lines)) is not None
        ) and not any(shows(first, first.path, n) for other in names if other != name
                      for n in find.lines(other, first.path))
        return ([block, *blocks] if uses else [*blocks, block]), [
            *sources, *([source] if number > len(sources) else [])]
    return blocks, list(sources)
