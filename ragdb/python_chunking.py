"""Python cut along its `ast` syntax tree, so a function or class stays whole when it fits.

The statements of a block are grouped up to the cap; one too large is split by its own inner
statements, each piece naming the signatures around it in `context`; a statement with no inner
block (a long literal or docstring) is cut as text. A file `ast` refuses (a syntax error, a
Python 2 file, syntax newer than the running Python) is cut along tree-sitter's Python tree
instead (ragdb.syntax_chunking), with its error tolerance: a tree mostly errors is cut as text.
"""

from __future__ import annotations

import ast
import gc
import re
import warnings
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from itertools import accumulate

from ragdb.chunk_packing import (
    _CODE_SEPS, _NONWS, _TOP, Chunk, _chunk_units, _min_len, _pack, _Piece, _trim, merge_pieces,
    pack_range, segment_units,
)

_LINE_BREAK = re.compile(r"\r\n?|\n")  # the line breaks ast counts
_BLANK_LINE = re.compile(r"^[ \t\f\v\r]*\n", re.M)
_CODE_OVERLAP_BELOW = 3  # code cut at a blank line or def needs no overlap; mid-block it does
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_INDENT = re.compile(r"[ \t]*")
_PLUS_ONE = (1).__add__


def chunk_python(text: str, cap: int) -> list[Chunk]:
    """Chunks of Python source: along its `ast` tree; along tree-sitter's when ast refuses it;
    cut as text when that tree is mostly errors too (the index run then counts a parse
    fallback: ragdb.symbols.extract reads no symbols from such a file)."""
    if len(text) <= cap:
        trimmed = _trim(text, 0, len(text))
        return [] if trimmed is None else [Chunk(trimmed[0], trimmed[1], "module", "")]
    # The tree is hundreds of thousands of objects that live and die together: the cyclic
    # collector would walk them all, several times, for nothing (a third of the parse time).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        pieces = _python_pieces(text, cap)
    finally:
        if was_enabled:
            gc.enable()
    if pieces is None:
        chunks = _tree_chunks(text, cap)
        if chunks is not None:
            return chunks
        return _chunk_units(text, [(0, len(text), _TOP, "", "text")], cap, _CODE_SEPS,
                            _CODE_OVERLAP_BELOW)
    if not pieces:  # comments only
        return _chunk_units(text, [(0, len(text), _TOP, "", "module")], cap, _CODE_SEPS,
                            _CODE_OVERLAP_BELOW)

    return merge_pieces(text, pieces, cap)


def _tree_chunks(text: str, cap: int) -> list[Chunk] | None:
    """A file ast refuses, cut along tree-sitter's Python tree; None when that tree is mostly
    errors or its parse ran out of time. Names are left to tokenize.defined_names, as for a
    file ast cut, so both index a chunk's definitions alike."""
    from ragdb.syntax_chunking import chunk_code  # here: most runs never need tree-sitter

    chunks = chunk_code(text, "python", cap)
    return None if chunks is None else [replace(c, names=()) for c in chunks]


def _line_starts(text: str) -> list[int]:
    """Offset of each line (as ast numbers them: line n starts at [n - 1]), then len(text)."""
    if "\r" in text:
        starts = [0]
        starts.extend(m.end() for m in _LINE_BREAK.finditer(text))
    else:  # the common case, without a Match object per line
        starts = list(accumulate(map(_PLUS_ONE, map(len, text.split("\n"))), initial=0))
        starts.pop()
    starts.append(len(text))
    return starts


@lru_cache(maxsize=1)
def parse_python(text: str) -> ast.Module | None:
    """The file's syntax tree; None when it does not parse. The last one is kept: the index
    run's symbols (ragdb.python_symbols) read the tree the chunker just parsed, not a second
    parse of the same text (the cache compares the very string object first)."""
    if text.startswith("\ufeff"):
        # Same offsets; the parser rejects a BOM in a str, and a space there is an unexpected
        # indent: a form feed at a line's start is not indentation to it.
        source = "\x0c" + text[1:]
    else:
        source = text
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in the parsed code are not ours
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _python_pieces(text: str, cap: int) -> list[_Piece] | None:
    """Pieces along the syntax tree; None when the text does not parse."""
    tree = parse_python(text)
    if tree is None:
        return None
    pieces: list[_Piece] = []
    if tree.body:
        _python_block(text, _line_starts(text), tree.body, 0, len(text), (), True, cap, pieces)
    return pieces


def _span(node: ast.AST) -> tuple[int, int]:
    """First and last line (1-based) of a statement, its decorators included."""
    if isinstance(node, ast.match_case):
        return node.pattern.lineno, _span(node.body[-1])[1]
    assert isinstance(node, (ast.stmt, ast.excepthandler))
    first = node.lineno
    if isinstance(node, (*_DEFS, ast.ClassDef)):
        for decorator in node.decorator_list:
            first = min(first, decorator.lineno)
    return first, node.end_lineno or node.lineno


def _children(node: ast.AST) -> list[ast.AST]:
    found: list[ast.AST] = []
    for field in ("body", "handlers", "orelse", "finalbody", "cases"):
        value = getattr(node, field, None)
        if isinstance(value, list):
            found.extend(value)
    return found


def _indent(text: str, starts: list[int], line: int) -> int:
    s = starts[line - 1]
    m = _INDENT.match(text, s, starts[line])
    return 0 if m is None else m.end() - s


def _python_block(text: str, starts: list[int], nodes: Sequence[ast.AST], s: int, e: int,
                  context: tuple[str, ...], top: bool, cap: int, out: list[_Piece],
                  lead: int = -1, trail: int = -1) -> None:
    """Pieces of text[s:e], which holds `nodes` (the statements of one block): statements
    that fit are grouped, one too large is split by its own inner statements.

    text[lead:s] and text[e:trail] are small runs of statements of the enclosing block, next to
    this one: they are packed with the pieces here rather than left as chunks too small to find.
    """
    spans = sorted((_span(node) + (node,) for node in nodes), key=lambda t: t[0])
    firsts: list[int] = []
    lasts: list[int] = []
    members: list[list[ast.AST]] = []
    for first, last, node in spans:
        if lasts and first <= lasts[-1]:  # statements sharing a line stay together
            lasts[-1] = max(lasts[-1], last)
            members[-1].append(node)
        else:
            firsts.append(first)
            lasts.append(last)
            members.append([node])

    # Lines between two statements go with the next one (its comments and decorators),
    # except comments indented deeper than it, which end the previous block.
    bounds = [s]
    for k in range(1, len(firsts)):
        line = lasts[k - 1] + 1
        depth = _indent(text, starts, firsts[k]) if line < firsts[k] else 0
        for gap_line in range(firsts[k] - 1, line - 1, -1):
            if _NONWS.search(text, starts[gap_line - 1], starts[gap_line]):
                if _indent(text, starts, gap_line) > depth:
                    line = gap_line + 1
                    break
        bounds.append(min(max(starts[line - 1], bounds[-1]), e))
    bounds.append(e)
    # Each statement's range without the blank lines around it, so that "fits" means fits.
    # Strength of the boundary before it: cut before a def or class, else at a blank line,
    # rather than inside a run of statements.
    u_s: list[int] = []
    u_e: list[int] = []
    u_k: list[int] = []
    grouped: list[list[ast.AST]] = []
    for k, group in enumerate(members):
        trimmed = _trim(text, bounds[k], bounds[k + 1])
        if trimmed is None:
            continue
        if isinstance(group[0], (*_DEFS, ast.ClassDef)):
            strength = 3
        elif _BLANK_LINE.search(text, bounds[k], max(bounds[k], starts[firsts[k] - 1])):
            strength = 2
        else:
            strength = 1
        if trimmed[1] - trimmed[0] > cap:
            own = _trim(text, max(trimmed[0], starts[firsts[k] - 1]),
                        min(trimmed[1], starts[lasts[k]]))
            if own is not None and own[1] - own[0] <= cap:
                # Comments around a statement that fits are no reason to split the statement.
                before = _trim(text, trimmed[0], own[0])
                after = _trim(text, own[1], trimmed[1])
                for part, part_strength, part_group in (
                        (before, strength, []), (own, 1 if before else strength, group),
                        (after, 1, [])):
                    if part is not None:
                        u_s.append(part[0])
                        u_e.append(part[1])
                        u_k.append(part_strength)
                        grouped.append(part_group)
                continue
        u_s.append(trimmed[0])
        u_e.append(trimmed[1])
        u_k.append(strength)
        grouped.append(group)
    members = grouped
    around = _trim(text, lead, s) if 0 <= lead < s else None
    if around is not None:
        u_s.insert(0, around[0])
        u_e.insert(0, around[1])
        u_k.insert(0, _TOP)
        members.insert(0, [])
    around = _trim(text, e, trail) if trail > e else None
    if around is not None:
        u_s.append(around[0])
        u_e.append(around[1])
        u_k.append(2)
        members.append([])

    segments, split, absorbed, leads, trails = segment_units(u_s, u_e, cap, _min_len(cap))

    ctx = "\n".join(context)
    for g, segment in enumerate(segments):
        if absorbed[g]:
            continue
        if not split[g]:
            _python_run(segment, u_s, u_e, u_k, members, ctx, top, cap, out)
            continue
        k = segment[0]
        group = members[k]
        inner = _children(group[0]) if len(group) == 1 else []
        if not inner:
            for a, b in pack_range(text, u_s[k], u_e[k], leads.get(g, -1), trails.get(g, -1),
                                   cap):
                out.append((a, b, "statements", ctx))
            continue
        node = group[0]
        head = len(out)
        if not isinstance(node, (*_DEFS, ast.ClassDef)):
            _python_block(text, starts, inner, u_s[k], u_e[k], context, False, cap, out,
                          leads.get(g, -1), trails.get(g, -1))
            continue
        _python_block(text, starts, inner, u_s[k], u_e[k], context + (_signature(
            text, starts, node),), False, cap, out, leads.get(g, -1), trails.get(g, -1))
        # The piece with the def or class line says what it is; pieces holding only the
        # neighbouring statements packed along live outside it.
        outside = "module" if top else "statements"
        def_at = starts[node.lineno - 1]
        for n in range(head, len(out)):
            a, b, _, c = out[n]
            if b <= def_at or a >= u_e[k]:
                out[n] = (a, b, outside, ctx)
            elif a <= def_at:
                out[n] = (a, b, "class" if isinstance(node, ast.ClassDef) else "function", c)


def _python_run(run: list[int], u_s: list[int], u_e: list[int], u_k: list[int],
                members: list[list[ast.AST]], ctx: str, top: bool, cap: int,
                out: list[_Piece]) -> None:
    """Consecutive statements that each fit, grouped into pieces up to the cap."""
    a_s = [u_s[k] for k in run]
    a_e = [u_e[k] for k in run]
    a_k = [u_k[k] for k in run]
    for i, j in _pack(a_s, a_e, a_k, 0, len(run), cap, _min_len(cap)):
        group = members[run[i]]
        if j - i == 1 and len(group) == 1 and isinstance(group[0], ast.ClassDef):
            kind = "class"
        elif j - i == 1 and len(group) == 1 and isinstance(group[0], _DEFS):
            kind = "function"
        else:
            kind = "module" if top else "statements"
        out.append((a_s[i], a_e[j - 1], kind, ctx))


def _drop_comment(line: str) -> str:
    """The line without its trailing comment, when no string could hold the '#'."""
    at = line.find("#")
    if at >= 0 and "'" not in line[:at] and '"' not in line[:at]:
        line = line[:at]
    return line.rstrip()


_SIG_OPEN = re.compile(r"([(\[{]) ")
_SIG_CLOSE = re.compile(r",? ([)\]}])")


def _signature(text: str, starts: list[int], node: ast.FunctionDef | ast.AsyncFunctionDef
               | ast.ClassDef) -> str:
    """The def or class line(s) as written, one line even when the header spans several."""
    first = node.lineno
    last = max(first, _span(node.body[0])[0] - 1)
    lines = [_drop_comment(text[starts[n - 1]:starts[n]]) for n in range(first, last + 1)]
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    if len(lines) == 1:
        signature = lines[0]
    else:
        indent = lines[0][:len(lines[0]) - len(lines[0].lstrip())]
        parts = [ln.strip() for ln in lines if ln.strip()]
        signature = indent + _SIG_CLOSE.sub(r"\1", _SIG_OPEN.sub(r"\1", " ".join(parts)))
    return signature if len(signature) <= 200 else signature[:197] + "..."
