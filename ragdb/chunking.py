"""Code-aware chunking: files cut into ranges of their own text, sized for retrieval.

A chunk is a range [first, last) of the file's text, never rewritten, so a hit can always be
cited by offset. Python is cut along its syntax tree so a function or class stays whole when
it fits; Markdown, reStructuredText and plain text along headings and paragraphs.
"""

from __future__ import annotations

import ast
import gc
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import NamedTuple


@dataclass(frozen=True, slots=True)
class Chunk:
    first: int  # inclusive str offset into the file text
    last: int  # exclusive: the chunk's text is file_text[first:last]
    kind: str  # module, function, class, statements, text (Python); section, paragraph
    context: str  # enclosing signatures (Python) or heading path (prose); "" when none
    # Functions, classes and types the chunk defines, where the syntax tree names them (the
    # tree-sitter languages); Python's come from tokenize.defined_names.
    names: tuple[str, ...] = ()


_FILE_KINDS = {".py": "python", ".rst": "rst", ".txt": "text"}
# Markdown in all its spellings; MDX (Markdown with JSX and ES module lines) too.
MARKDOWN_SUFFIXES = (".md", ".mdx", ".markdown", ".mkd", ".mkdn", ".mdown", ".mdwn", ".mdtext")
_FILE_KINDS.update({suffix: "markdown" for suffix in MARKDOWN_SUFFIXES})


def file_kind(path: str) -> str | None:
    """'python', 'markdown', 'rst' or 'text' by suffix; None for files we do not index."""
    return _FILE_KINDS.get(os.path.splitext(path)[1].lower())


def is_mdx(path: str) -> bool:
    """MDX: its `import`/`export` lines and JSX tags are not Markdown headings or prose."""
    return path.lower().endswith(".mdx")


# Prose is chunked at this share of max_chunk_size: a doc section packs more distinct facts per
# character than code does, and smaller prose chunks let both BM25 and the vectors point at
# the right paragraph (measured: hybrid docs recall@5 0.91 -> 0.93; README, Performance).
PROSE_CAP_SHARE = 0.5
# Bump when chunk boundaries change for the same settings: the next run rebuilds everything.
# 4: MDX's import/export blocks are not read for headings.
CHUNKER_VERSION = "4"


def chunk_cap(kind: str, max_chunk_size: int) -> int:
    """The largest chunk for a file kind: max_chunk_size for code, half of it for prose."""
    if kind == "python":
        return max_chunk_size
    return max(1, int(max_chunk_size * PROSE_CAP_SHARE))


def chunk_text(text: str, kind: str, max_chunk_size: int = 2000, mdx: bool = False
               ) -> list[Chunk]:
    """Chunks of one file's text, in order of `first`; none longer than max_chunk_size.
    `mdx`: Markdown written as MDX (is_mdx)."""
    if max_chunk_size < 1:
        raise ValueError(f"max_chunk_size must be positive, not {max_chunk_size}")
    if not _NONWS.search(text):
        return []
    if kind == "python":
        return _chunk_python(text, max_chunk_size)
    if kind == "markdown":
        return _chunk_units(text, _markdown_units(text, mdx), max_chunk_size, _PROSE_SEPS,
                            _PARA + 1)
    if kind == "rst":
        return _chunk_units(text, _rst_units(text), max_chunk_size, _PROSE_SEPS, _PARA + 1)
    if kind == "text":
        return _chunk_units(text, _paragraph_units(text), max_chunk_size, _LINE_SEPS, _PARA + 1)
    raise ValueError(f"unknown file kind {kind!r}")


# Boundary strengths: a cut is preferred at the strongest boundary near the size target.
# Prose headings rank above paragraphs (h1 strongest), code separators have their own ranks.
_CHAR, _WORD, _LINE, _PARA = 0, 1, 2, 3
_HEADING_BASE = 4  # h6 = 4 ... h1 = 9
_TOP = 9

_Seps = tuple[tuple[re.Pattern[str], int], ...]

_NONWS = re.compile(r"\S")
_WORD_START = re.compile(r"\s(?=\S)")
_LINE_BREAK = re.compile(r"\r\n?|\n")  # the line breaks ast counts
_BLANK_LINE = re.compile(r"^[ \t\f\v\r]*\n", re.M)
_BLANK_RUN = r"\n(?:[ \t\f\v\r]*\n)+"
_DEF_START = r"(?:@|def |class |async def )"

_PROSE_SEPS: _Seps = (
    (re.compile(_BLANK_RUN), _PARA),
    (re.compile(r"\n"), _LINE),
    (re.compile(r"\s+"), _WORD),
)
_LINE_SEPS: _Seps = _PROSE_SEPS[1:]
_CODE_SEPS: _Seps = (
    (re.compile(_BLANK_RUN + "(?=" + _DEF_START + ")"), 5),
    (re.compile(_BLANK_RUN), 4),
    (re.compile(r"\n(?=[ \t]*" + _DEF_START + ")"), 3),
    (re.compile(r"\n"), _LINE),
    (re.compile(r"\s+"), _WORD),
)
_CODE_OVERLAP_BELOW = 3  # code cut at a blank line or def needs no overlap; mid-block it does


def _min_len(cap: int) -> int:
    """Below this a chunk says too little to be found on its own, so it is merged if possible."""
    return cap // 4


def _split_range(text: str, s: int, e: int, cap: int, seps: _Seps, level: int, strength: int,
                 a_s: list[int], a_e: list[int], a_k: list[int]) -> None:
    """Append atoms (pieces no longer than cap) of text[s:e], cut at the coarsest separator."""
    if e - s <= cap:
        a_s.append(s)
        a_e.append(e)
        a_k.append(strength)
        return
    while level < len(seps):
        pattern, sep_strength = seps[level]
        # Every separator match is non-empty, so each ends after s and only the last can
        # end at e (filtering each one cost a generator step per line of a JSON table).
        cuts = [m.end() for m in pattern.finditer(text, s, e)]
        if cuts and cuts[-1] >= e:
            cuts.pop()
        level += 1
        if cuts:
            cuts.append(e)
            prev, prev_strength = s, strength
            for cut in cuts:
                if cut - prev <= cap:  # most pieces (a JSON table's lines): no call needed
                    a_s.append(prev)
                    a_e.append(cut)
                    a_k.append(prev_strength)
                else:
                    _split_range(text, prev, cut, cap, seps, level, prev_strength, a_s, a_e,
                                 a_k)
                prev, prev_strength = cut, sep_strength
            return
    # One token longer than the cap: slices of even size, so no crumb is left at its end.
    n = -(-(e - s) // cap)
    size = -(-(e - s) // n)
    for p in range(s, e, size):
        a_s.append(p)
        a_e.append(min(p + size, e))
        a_k.append(strength if p == s else _CHAR)


def _pack(a_s: list[int], a_e: list[int], a_k: list[int], lo: int, hi: int, cap: int,
          min_len: int) -> list[tuple[int, int]]:
    """Group atoms lo..hi-1 into runs of at most cap chars: evenly sized, so no tiny tail is
    left over, and ended at the strongest boundary near the target size."""
    groups: list[tuple[int, int]] = []
    last = a_e[hi - 1]
    i = lo
    while i < hi:
        cs = a_s[i]
        rest = last - cs
        if rest <= cap:
            groups.append((i, hi))
            break
        target = rest / -(-rest // cap)
        j = i + 1
        while a_e[j] - cs <= target:
            j += 1
        if a_e[j] - cs <= cap and a_e[j] - cs - target < target - (a_e[j - 1] - cs):
            j += 1
        best, best_key = j, (a_k[j], -abs(a_e[j - 1] - cs - target))
        floor = cs + max(min_len, target / 2)
        k = j - 1
        while k > i and a_e[k - 1] >= floor:
            key = (a_k[k], -abs(a_e[k - 1] - cs - target))
            if key > best_key:
                best, best_key = k, key
            k -= 1
        k = j + 1
        while k < hi and a_e[k - 1] - cs <= cap and last - a_e[k - 1] >= min_len:
            key = (a_k[k], -abs(a_e[k - 1] - cs - target))
            if key > best_key:
                best, best_key = k, key
            k += 1
        groups.append((i, best))
        i = best
    return groups


def _trim(text: str, s: int, e: int) -> tuple[int, int] | None:
    """Drop leading blank lines and trailing whitespace; None when nothing but whitespace."""
    m = _NONWS.search(text, s, e)
    if m is None:
        return None
    q = m.start()
    nl = text.rfind("\n", s, q)
    if nl >= 0:
        s = nl + 1
    elif s > 0 and text[s - 1] != "\n":
        s = q  # mid-line: the indentation is not ours to keep
    while text[e - 1].isspace():
        e -= 1
    return s, e


# --- prose: Markdown, reStructuredText, plain text -------------------------------------------

# (first, last, strength of the boundary before it, context, kind of a chunk starting the unit)
_Unit = tuple[int, int, int, str, str]


def _chunk_units(text: str, units: list[_Unit], cap: int, seps: _Seps,
                 overlap_below: int) -> list[Chunk]:
    """Chunks of text made of units (sections): whole units are grouped, a unit too large
    for the cap is split by seps, and a tiny leftover is merged with a neighbour."""
    min_len = _min_len(cap)
    a_s: list[int] = []
    a_e: list[int] = []
    a_k: list[int] = []
    a_u: list[int] = []
    segments: list[tuple[int, int]] = []
    run = -1
    for index, (s, e, strength, _, _) in enumerate(units):
        if not _NONWS.search(text, s, e):
            continue
        lo = len(a_s)
        if e - s <= cap:
            if run < 0:
                run = lo
            a_s.append(s)
            a_e.append(e)
            a_k.append(strength)
        else:
            if run >= 0:
                segments.append((run, lo))
                run = -1
            _split_range(text, s, e, cap, seps, 0, strength, a_s, a_e, a_k)
            segments.append((lo, len(a_s)))
        a_u.extend([index] * (len(a_s) - lo))
    if run >= 0:
        segments.append((run, len(a_s)))

    groups: list[tuple[int, int]] = []
    for lo, hi in segments:
        # A section starts its own chunk, unless what came before is too small to stand alone.
        if groups and a_e[groups[-1][1] - 1] - a_s[groups[-1][0]] < min_len:
            lo = groups.pop()[0]
        groups.extend(_pack(a_s, a_e, a_k, lo, hi, cap, min_len))
    merged: list[tuple[int, int]] = []
    for i, j in groups:
        if merged:
            p = merged[-1]
            if a_e[j - 1] - a_s[p[0]] <= cap and (
                    a_e[p[1] - 1] - a_s[p[0]] < min_len or a_e[j - 1] - a_s[i] < min_len):
                merged[-1] = (p[0], j)
                continue
        merged.append((i, j))

    overlap_max = min(200, cap // 10)
    chunks: list[Chunk] = []
    for i, j in merged:
        trimmed = _trim(text, a_s[i], a_e[j - 1])
        if trimmed is None:
            continue
        s, e = trimmed
        unit = units[a_u[i]]
        continued = i > 0 and a_u[i - 1] == a_u[i]
        if continued and chunks and a_k[i] < overlap_below:
            s = _overlap_start(text, s, e, chunks[-1].first, min(overlap_max, cap - (e - s)))
        kind = "paragraph" if continued and unit[4] == "section" else unit[4]
        chunks.append(Chunk(s, e, kind, unit[3]))
    return chunks


def _overlap_start(text: str, s: int, e: int, prev_first: int, budget: int) -> int:
    """An earlier start that repeats up to `budget` chars of the previous chunk's end,
    beginning at a line start if there is one in reach, else at a word start."""
    lower = max(s - budget, prev_first + 1)
    if budget <= 0 or lower >= s:
        return s
    nl = text.find("\n", lower - 1, s - 1)
    if nl >= 0:
        start = _trim(text, nl + 1, e)
        if start is not None and start[0] < s:
            return start[0]
    m = _WORD_START.search(text, lower - 1, s)
    return s if m is None else m.end()


_MD_CANDIDATE = re.compile(r"^[ \t]*[`~#=-].*$", re.M)
_FRONT_MATTER = re.compile(r"---[ \t]*\r?\n(?:[ \t]*\S.*\n)*?(?:---|\.\.\.)[ \t]*\r?$", re.M)
_MD_ATTRS = re.compile(r"[ \t]*\{[ \t]*[#.:][^}]*\}$")
_MD_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
_SETEXT_BLOCKERS = ("#", "-", "*", "+", ">", "|", "<", "`", "~", "=", "!!!", "???")
# MDX: an ES module statement starts a block that runs to the next blank line (as MDX reads it).
_MDX_CANDIDATE = re.compile(r"^(?:[ \t]*[`~#=-]|import\b|export\b).*$", re.M)
_MDX_ESM = re.compile(r"(?:import|export)(?:[ \t{*'\"]|$)")
_MDX_BLOCK_END = re.compile(r"\n[ \t]*(?:\n|$)")


def _markdown_headings(text: str, mdx: bool = False) -> list[tuple[int, int, str]]:
    """(offset of the heading's first line, level, title), skipping fenced code blocks (and
    in MDX the ES module blocks: `import`/`export` at a line's start, to the next blank line)."""
    headings: list[tuple[int, int, str]] = []
    fence = ""
    front = _FRONT_MATTER.match(text)  # YAML: its '#' lines are comments
    esm_end = -1  # MDX: the end of the import/export block being skipped
    for m in (_MDX_CANDIDATE if mdx else _MD_CANDIDATE).finditer(text, front.end() if front else 0):
        if m.start() < esm_end:
            continue
        line = m.group().rstrip()
        body = line.lstrip()
        indent = len(line) - len(body)
        if fence:
            if body.startswith(fence) and not body.strip(fence[0]):
                fence = ""
            continue
        if mdx and line.startswith(("import", "export")):
            if _MDX_ESM.match(line):
                blank = _MDX_BLOCK_END.search(text, m.end())
                esm_end = blank.start() if blank else len(text)
            continue
        if body.startswith(("```", "~~~")):
            mark = body[0]
            n = len(body) - len(body.lstrip(mark))
            if mark != "`" or "`" not in body[n:]:
                fence = mark * n
            continue
        if indent > 3:
            continue
        if body.startswith("#"):
            level = len(body) - len(body.lstrip("#"))
            if level <= 6 and (len(body) == level or body[level] in " \t"):
                headings.append((m.start(), level, _heading_title(body[level:])))
        elif len(body) >= (2 if body[0] == "=" else 3) and body == body[0] * len(body):
            heading = _setext(text, m.start(), 1 if body[0] == "=" else 2, mdx)
            if heading is not None and (not headings or heading[0] > headings[-1][0]):
                headings.append(heading)
    return headings


def _setext(text: str, underline: int, level: int, mdx: bool = False
            ) -> tuple[int, int, str] | None:
    """The heading underlined at `underline`, if the line above is a lone paragraph line
    (stricter than CommonMark, so YAML front matter and rules are not taken for headings)."""
    if underline == 0:
        return None
    start = text.rfind("\n", 0, underline - 1) + 1
    title = text[start:underline].rstrip()
    if not title or title[0] in " \t" or title.startswith(_SETEXT_BLOCKERS):
        return None
    if mdx and title.startswith("{"):  # an MDX expression, like a JSX tag ('<' above)
        return None
    if start > 0:
        before = text.rfind("\n", 0, start - 1) + 1
        if text[before:start].strip():
            return None
    return start, level, _heading_title(title)


def _heading_title(raw: str) -> str:
    title = _MD_CLOSING_HASHES.sub("", _MD_ATTRS.sub("", raw.strip()))
    return title.strip()


def _heading_units(text: str, headings: list[tuple[int, int, str]]) -> list[_Unit]:
    """One unit per heading, to the next heading; context is the path of headings above."""
    units: list[_Unit] = []
    first = headings[0][0] if headings else len(text)
    if first > 0:
        units.append((0, first, _TOP, "", "paragraph"))
    path: list[tuple[int, str]] = []
    for n, (start, level, title) in enumerate(headings):
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        end = headings[n + 1][0] if n + 1 < len(headings) else len(text)
        context = " > ".join(t for _, t in path if t)
        units.append((start, end, _HEADING_BASE + 6 - min(level, 6), context, "section"))
    return units


def _markdown_units(text: str, mdx: bool = False) -> list[_Unit]:
    return _heading_units(text, _markdown_headings(text, mdx))


_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*\r?$", re.M)


def _rst_units(text: str) -> list[_Unit]:
    """Sections of reStructuredText: a title line underlined (and maybe overlined) with one
    repeated punctuation character, after a blank line; levels in order of first use."""
    styles: dict[tuple[str, bool], int] = {}
    headings: list[tuple[int, int, str]] = []
    for m in _RST_ADORNMENT.finditer(text):
        if m.start() == 0:
            continue
        start = text.rfind("\n", 0, m.start() - 1) + 1
        title = text[start:m.start()].rstrip()
        if not title.strip() or title[0] in " \t" or _RST_ADORNMENT.fullmatch(title):
            continue
        mark = m.group(1)
        over = False
        if start > 0:
            above = text.rfind("\n", 0, start - 1) + 1
            line = text[above:start].rstrip()
            if line and line == mark * len(line) and len(line) >= 3:
                over, start = True, above
            elif line.strip():
                continue
        if headings and start <= headings[-1][0]:
            continue
        level = styles.setdefault((mark, over), len(styles) + 1)
        headings.append((start, level, title.strip()))
    return _heading_units(text, headings)


def _paragraph_units(text: str) -> list[_Unit]:
    units: list[_Unit] = []
    prev = 0
    for m in re.finditer(_BLANK_RUN, text):
        units.append((prev, m.end(), _PARA, "", "paragraph"))
        prev = m.end()
    if prev < len(text):
        units.append((prev, len(text), _PARA, "", "paragraph"))
    return units


# --- Python ----------------------------------------------------------------------------------

# (first, last, kind, context) of a chunk before trimming
_Piece = tuple[int, int, str, str]
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_INDENT = re.compile(r"[ \t]*")
_PLUS_ONE = (1).__add__


def _chunk_python(text: str, cap: int) -> list[Chunk]:
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
        return _chunk_units(text, [(0, len(text), _TOP, "", "text")], cap, _CODE_SEPS,
                            _CODE_OVERLAP_BELOW)
    if not pieces:  # comments only
        return _chunk_units(text, [(0, len(text), _TOP, "", "module")], cap, _CODE_SEPS,
                            _CODE_OVERLAP_BELOW)

    return merge_pieces(text, pieces, cap)


def merge_pieces(text: str, pieces: Sequence[_Piece], cap: int) -> list[Chunk]:
    """Syntax-tree pieces as chunks: a piece too small to stand alone joins its neighbour
    while both fit the cap (the larger one gives the kind and context); blanks are trimmed."""
    min_len = _min_len(cap)
    merged: list[_Piece] = []
    for piece in pieces:
        if merged:
            prev = merged[-1]
            prev_len, piece_len = prev[1] - prev[0], piece[1] - piece[0]
            if piece[1] - prev[0] <= cap and min(prev_len, piece_len) < min_len:
                keep = prev if prev_len >= piece_len else piece
                merged[-1] = (prev[0], piece[1], keep[2], keep[3])
                continue
        merged.append(piece)
    chunks = []
    for s, e, kind, context in merged:
        trimmed = _trim(text, s, e)
        if trimmed is not None:
            chunks.append(Chunk(trimmed[0], trimmed[1], kind, context))
    return chunks


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


def _python_pieces(text: str, cap: int) -> list[_Piece] | None:
    """Pieces along the syntax tree; None when the text does not parse."""
    if text.startswith("\ufeff"):
        source = " " + text[1:]  # same offsets; the parser rejects a BOM in a str
    else:
        source = text
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in the parsed code are not ours
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
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


class Segments(NamedTuple):
    """Units of a block in segments: runs of units that fit the cap, and single units that do
    not (`split`); a small run beside a split unit is `absorbed` into its first or last piece,
    starting it at `leads[g]` or ending it at `trails[g]`."""

    segments: list[list[int]]
    split: list[bool]
    absorbed: list[bool]
    leads: dict[int, int]
    trails: dict[int, int]


def segment_units(u_s: list[int], u_e: list[int], cap: int, min_len: int) -> Segments:
    """The one grouping rule of a block's units, for the Python and the tree-sitter chunkers."""
    segments: list[list[int]] = []
    split: list[bool] = []
    for k in range(len(u_s)):
        fits = u_e[k] - u_s[k] <= cap
        if fits and segments and not split[-1]:
            segments[-1].append(k)
        else:
            segments.append([k])
            split.append(not fits)
    absorbed = [False] * len(segments)
    leads: dict[int, int] = {}
    trails: dict[int, int] = {}
    for g in range(len(segments)):
        if not split[g]:
            continue
        if g > 0 and not split[g - 1] and not absorbed[g - 1] and (
                u_e[segments[g - 1][-1]] - u_s[segments[g - 1][0]] < min_len):
            absorbed[g - 1] = True
            leads[g] = u_s[segments[g - 1][0]]
        if g + 1 < len(segments) and not split[g + 1] and (
                u_e[segments[g + 1][-1]] - u_s[segments[g + 1][0]] < min_len):
            absorbed[g + 1] = True
            trails[g] = u_e[segments[g + 1][-1]]
    return Segments(segments, split, absorbed, leads, trails)


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


def pack_range(text: str, s: int, e: int, lead: int, trail: int, cap: int,
               seps: _Seps = _CODE_SEPS) -> list[tuple[int, int]]:
    """A single statement too large for the cap (a long literal, docstring, comment or macro)
    cut as text at `seps`, with the small runs of statements around it (see _python_block;
    the tree-sitter chunker shares it)."""
    a_s: list[int] = []
    a_e: list[int] = []
    a_k: list[int] = []
    if 0 <= lead < s:
        a_s.append(lead)
        a_e.append(s)
        a_k.append(_TOP)
    _split_range(text, s, e, cap, seps, 0, 4 if a_s else _TOP, a_s, a_e, a_k)
    if trail > e:
        a_s.append(e)
        a_e.append(trail)
        a_k.append(4)
    groups = _pack(a_s, a_e, a_k, 0, len(a_s), cap, _min_len(cap))
    return [(a_s[i], a_e[j - 1]) for i, j in groups]


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
