"""The cutting rules every chunker shares: what a chunk is, and how a range of text becomes
chunks no longer than the cap.

A range too long is split at its strongest separators (blank runs, lines, words) into atoms;
atoms are packed into evenly sized runs that end at the strongest boundary near the target;
leading blank lines and trailing whitespace are trimmed; a leftover too small to be found on
its own is merged with a neighbour. The prose, Python and tree-sitter chunkers (prose_chunking,
python_chunking, syntax_chunking) only say where their units and boundaries are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True, slots=True)
class Chunk:
    first: int  # inclusive str offset into the file text
    last: int  # exclusive: the chunk's text is file_text[first:last]
    kind: str  # module, function, class, statements, text (Python); section, paragraph
    context: str  # enclosing signatures (Python) or heading path (prose); "" when none
    # Functions, classes and types the chunk defines, where the syntax tree names them (the
    # tree-sitter languages); Python's come from tokenize.defined_names. Prose: the titles of
    # the sections the chunk holds after the one it starts in (its context is that one's path).
    names: tuple[str, ...] = ()


# Boundary strengths: a cut is preferred at the strongest boundary near the size target.
# Prose headings rank above paragraphs (h1 strongest), code separators have their own ranks.
_CHAR, _WORD, _LINE, _PARA = 0, 1, 2, 3
_HEADING_BASE = 4  # h6 = 4 ... h1 = 9
_TOP = 9

_Seps = tuple[tuple[re.Pattern[str], int], ...]

_NONWS = re.compile(r"\S")
_WORD_START = re.compile(r"\s(?=\S)")
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
        chunks.append(Chunk(s, e, kind, unit[3], _titles(units, a_u[i] + 1, a_u[j - 1] + 1)))
    return chunks


def _titles(units: list[_Unit], lo: int, hi: int) -> tuple[str, ...]:
    """The titles of the sections among units[lo:hi] (the last part of each heading path).

    Small sections are packed together, and a chunk's context is the heading path of the
    first only: indexed with it (ragdb.indexing), the others' titles still find the chunk
    (`##### OPT_UTC_Z` packed under `OPT_STRICT_INTEGER`)."""
    return tuple(unit[3].rpartition(" > ")[2] for unit in units[lo:hi]
                 if unit[4] == "section" and unit[3])


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


# (first, last, kind, context) of a chunk before trimming
_Piece = tuple[int, int, str, str]


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
