"""Citation-only extractive answers: the best passages of the retrieved sources, each cited [n].

No language model writes anything: every passage is a verbatim span of a source
(`source.text[start:end]`), shown after `clean_markup` and followed by its source number. The
embedding function is a parameter (unit vectors in, as `ragdb.embed.Embedder.embed` returns),
so this module and its parts (spans, markup, answer_signals, code_window) depend on nothing but
`ragdb.tokenize` and numpy.

How a passage is scored (settings in `Settings`, global, chosen on the tuning questions: the
first 50 public docs questions, the code questions outside bench_accept's sample, half A of
the four repositories; numbers in benchmarks/EXTRACTIVE.md):

* units are sentences, list items, table rows, fenced code blocks and rst literal blocks of
  prose, and whole definitions or short blocks of code files; an introducing sentence ending
  in ':' (or naming "the following" block) travels with the block it introduces, a list or
  table right under a heading is a unit with it, and a sentence leaning on the one before
  ("This ...", "However, this limitation ...") with that one;
* score = lexical_weight * BM25 + (1 - lexical_weight) * cosine, each scaled to [0, 1] over the
  question's candidate units (BM25 over identifier-split, lightly stemmed terms, IDF over the
  units themselves, so a word common to all the sources counts little); only the
  `embed_limit` units best by BM25 and priors are embedded (embedding is nearly all the time
  on 2 cores, and embedding all units measured no better), the rest keep their BM25 part;
* priors: the search's own ranking (source n weighs 1 / (1 + rank_decay * (n - 1))), length
  (units past `soft_chars` lose score in proportion), code files (`code_weight`) and the
  answer-bearing signals of answer_signals.py (the asked kind of thing held or not, the asked
  thing's phrase, pointers, units made of the question's own words, definitions of a name the
  question writes);
* greedy choice of the best units, skipping overlaps and near-duplicates, while a unit scores at
  least `min_relative` of the best one, up to `max_passages` and `max_chars`; shown in source
  order, a table row under its header row;
* code is shown as the lines that answer (code_window.py): a chosen piece of a definition
  longer than a code unit as the run of its lines that best matches the question, under the
  signature lines it lies in, `...` marking lines left out, closing the brackets it opens;
  code a chunk cut inside a statement the same way, under `...`; the first code passage led by
  one sentence of its source's docstring or comment where the code does not show it;
* a unit cut out of its context in prose (a sentence the chunk's start cut) or code that is only
  imports or a comment banner is scored with the others but never chosen.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ragdb.generate.answer_signals import (
    Asked,
    Signals,
    Weights,
    asked,
    factor,
    signals,
    wants_targets,
)
from ragdb.generate.code_window import lead_sentence, windowed
from ragdb.generate.markup import ADMONITION as _ADMONITION
from ragdb.generate.markup import FENCE as _FENCE
from ragdb.generate.markup import HTML_COMMENT as _HTML_COMMENT
from ragdb.generate.markup import RST_DIRECTIVE as _RST_DIRECTIVE
from ragdb.generate.markup import TABLE_RULE as _TABLE_RULE
from ragdb.generate.markup import UNDERLINE as _UNDERLINE
from ragdb.generate.markup import clean_markup, literal_block
from ragdb.generate.spans import Passage, SourceText, is_code, terms
from ragdb.generate.spans import C_FAMILY as _C_FAMILY
from ragdb.generate.spans import DEF_LINE as _DEF
from ragdb.generate.spans import HASH_COMMENT as _HASH_COMMENT
from ragdb.generate.spans import balanced as _balanced
from ragdb.generate.spans import bm25 as _bm25
from ragdb.generate.spans import line_spans as _lines
from ragdb.generate.spans import trim_span as _trim

if TYPE_CHECKING:  # imported when an answer is scored: `ragdb index` loads this module too
    import numpy as np

Embed = Callable[[list[str]], "np.ndarray"]


@dataclass(frozen=True)
class Settings:
    """Global knobs (never per question). Defaults measured in benchmarks/EXTRACTIVE.md."""

    lexical_weight: float = 0.7  # share of BM25 in the score; the rest is cosine
    k1: float = 1.2
    b: float = 0.75
    rank_decay: float = 0.5  # source n weighs 1 / (1 + rank_decay * (n - 1))
    soft_chars: int = 450  # longer units lose score in proportion to their excess length
    max_unit_chars: int = 1200  # longer units are not candidates at all
    max_passages: int = 3
    max_chars: int = 1000  # total raw characters of the chosen passages (the first always goes)
    min_relative: float = 0.7  # a further passage must score this share of the best one
    duplicate_jaccard: float = 0.6  # term-set overlap above which a unit repeats a chosen one
    # Only the units best by BM25 and rank are embedded (0: all): on 2 cores embedding is
    # nearly all of an answer's time; the rest keep their BM25 half only.
    embed_limit: int = 8
    code_weight: float = 0.4  # score factor for passages from code files (answers are read)
    # Answer-bearing signals (answer_signals.py): what the question asks for, held or not.
    kind_weight: float = 0.3
    missing_kind: float = 0.2
    missing_number: float = 0.3
    focus_weight: float = 1.0
    missing_focus: float = 0.4
    pointer_penalty: float = 0.5
    restating_penalty: float = 0.6
    novelty_floor: float = 0.3
    define_weight: float = 1.0
    # Code windows (code_window.py): the least a window of a long definition shows, and the
    # most one of code cut out of its context does.
    window_min_chars: int = 300
    cut_window_chars: int = 400
    cut_weight: float = 0.6  # score factor for code cut out of its context (a fragment)
    code_lead: int = 1  # 1: a code answer leads with its docstring's or comment's sentence

    def weights(self) -> Weights:
        return Weights(kind=self.kind_weight, missing_kind=self.missing_kind,
                       missing_number=self.missing_number,
                       focus=self.focus_weight, missing_focus=self.missing_focus,
                       pointer=self.pointer_penalty, restating=self.restating_penalty,
                       novelty_floor=self.novelty_floor, defines=self.define_weight)


DEFAULT_SETTINGS = Settings()

# --------------------------------------------------------------------------------------------
# Units


@dataclass(frozen=True)
class _Unit:
    start: int
    end: int
    kind: str  # sentence, item, row, code, block (code file), joined
    prev: int  # index of the unit it may lean on, -1 when none
    # A piece of a code block longer than the cap: the whole block's span, where the shown
    # window is looked for (-1 when the unit is its whole block).
    block_start: int = -1
    block_end: int = -1
    # A table row: the span of its table's header row (the column names), shown above it.
    head_start: int = -1
    head_end: int = -1


_HEADING = re.compile(r"^[ \t]*#{1,6}(\s|$)")
_LIST_ITEM = re.compile(r"^([ \t]*)([-*+]|\d+[.)])[ \t]+\S")
_TABLE_ROW = re.compile(r"^[ \t]*\|")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z`\[*_(\"'0-9])")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|Fig|No|Dr|Mr|St)\.|\b[A-Z]\.)$")
_LEANING = re.compile(
    # "There are two ways", "It is recommended to": the pronoun stands for nothing before.
    r"^(?!There(?:'s| is| are| was| were| will| may| might| can| could| has| have)\b)"
    r"(?!It(?:'s| is) (?:(?:also|not|usually|often|generally) )?(?:recommended|possible|"
    r"important|necessary|advisable|required|worth|best|easy|common|useful|a good idea)\b)"
    r"(This|These|That|Those|It|Its|They|Their|Them|Such|However|Also|Additionally|"
    r"Furthermore|Moreover|Otherwise|Instead|Similarly|Likewise|Therefore|Thus|Hence|Then|"
    r"Here|There|In this case|In that case|In addition|As a result|For this|For that|"
    r"For example|For instance|Alternatively|But|And|Or|So|To do so|To do this|Doing so|"
    r"In this way|This way|As such|With this|With that)\b"
)
_MAX_JOIN = 1500  # an introduced block or a leaning sentence joined beyond this is dropped
_MIN_WORDS = 4  # prose units shorter than this are labels, not answers
_EMBED_CHARS = 600  # past this a unit's start says enough for its vector


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans of one paragraph; a cut inside `inline code` or after e.g. is no cut."""
    spans, first = [], start
    for match in _SENTENCE_END.finditer(text, start, end):
        head = text[first:match.start()]
        if _ABBREVIATION.search(head) or head.count("`") % 2:
            continue
        spans.append(_trim(text, first, match.start()))
        first = match.end()
    spans.append(_trim(text, first, end))
    return [s for s in spans if s[0] < s[1]]


def _inside_block_end(text: str, lines: list[tuple[int, int]]) -> int:
    """The first line to read: past the closing fence when the chunk starts inside a block.

    A chunk cut from a long file may begin in the middle of a fenced block. With an odd number
    of fence lines and a bare first fence (no language), that fence is taken as the closing one,
    unless what precedes it introduces a block: then it opens one that runs past the chunk's end.
    """
    fences = [n for n, (s, e) in enumerate(lines) if _FENCE.match(text[s:e])]
    if not len(fences) % 2 or text[slice(*lines[fences[0]])].strip().strip("`~"):
        return 0
    before = [text[s:e] for s, e in lines[:fences[0]] if text[s:e].strip()]
    # Nothing but a heading, an admonition or an introduction before it: that fence opens a
    # block the chunk's end cuts off (`??? console "Logs"` then a bare fence).
    if not before or _HEADING.match(before[-1]) or _ADMONITION.match(before[-1]) \
            or before[-1].rstrip().endswith(":"):
        return 0
    return fences[0] + 1


# MDX: ES module statements (a block to the next blank line), lines that hold only JSX tags
# or an {expression}, and a tag whose attributes run over several lines: markup, not prose.
_MDX_ESM = re.compile(r"(?:import|export)(?:[ \t{*'\"]|$)")
_JSX_LINE = re.compile(r"[ \t]*(?:(?:</?[A-Za-z][\w.:-]*(?:\s[^<>]*)?/?>|<>|</>)[ \t]*)+$"
                       r"|[ \t]*\{.*\}[ \t]*$")
_JSX_OPEN = re.compile(r"[ \t]*<[A-Za-z][\w.:-]*(?:\s[^<>]*)?$")


def _mdx_markup_end(text: str, lines: list[tuple[int, int]], i: int) -> int:
    """The line after the MDX markup starting at line i; i when line i is prose."""
    line = text[lines[i][0]:lines[i][1]]
    if _MDX_ESM.match(line):
        while i < len(lines) and text[lines[i][0]:lines[i][1]].strip():
            i += 1
        return i
    if _JSX_LINE.match(line):
        return i + 1
    if _JSX_OPEN.match(line):
        for j in range(i + 1, min(len(lines), i + 50)):
            rest = text[lines[j][0]:lines[j][1]].rstrip()
            if not rest:
                break
            if rest.endswith(">"):
                return j + 1
    return i


def _prose_units(text: str, mdx: bool = False) -> list[_Unit]:
    """Sentences, list items, table rows and fenced blocks, with introductions joined.
    `mdx`: MDX's import/export blocks and JSX tag lines are skipped, as markup."""
    lines = _lines(text)
    units: list[_Unit] = []
    # Each element: (unit index range start, end, structural kind) in document order.
    groups: list[tuple[int, int, str]] = []
    headings: dict[int, tuple[int, int]] = {}  # group index of a heading -> its span
    para: list[int] = []  # line numbers of the paragraph being gathered
    last_prose = -1  # index of the last prose unit since the last heading, for leaning
    i = _inside_block_end(text, lines)

    def add(start: int, end: int, kind: str, prev: int) -> int:
        start, end = _trim(text, start, end)
        if start >= end:
            return -1
        units.append(_Unit(start, end, kind, prev))
        return len(units) - 1

    def flush() -> None:
        nonlocal last_prose
        if not para:
            return
        first_unit = len(units)
        for s, e in _sentences(text, lines[para[0]][0], lines[para[-1]][1]):
            index = add(s, e, "sentence", last_prose)
            if index >= 0:
                last_prose = index
        if len(units) > first_unit:
            groups.append((first_unit, len(units), "para"))
        para.clear()

    def code_block(start: int, end: int, kind: str) -> None:
        """A block shown as code (a fence, an rst literal block, a doctest): one unit."""
        nonlocal last_prose
        flush()
        index = add(start, end, kind, -1)
        if index >= 0:
            groups.append((index, index + 1, "code"))
        last_prose = -1

    while i < len(lines):
        ls, le = lines[i]
        line = text[ls:le]
        fence = _FENCE.match(line)
        if fence:
            flush()
            mark = fence.group(1)
            j = i + 1
            while j < len(lines):
                close = text[lines[j][0]:lines[j][1]].strip()
                if close.startswith(mark[0] * len(mark)) and not close.strip(mark[0]):
                    break
                j += 1
            if j < len(lines):  # a block cut off by the chunk's end is no candidate
                code_block(ls, lines[j][1], "code")
            last_prose = -1
            i = j + 1
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        if mdx:
            after = _mdx_markup_end(text, lines, i)
            if after > i:
                flush()
                last_prose = -1
                i = after
                continue
        below = text[lines[i + 1][0]:lines[i + 1][1]] if i + 1 < len(lines) else ""
        # An rst title's underline; a line of backticks is a fence, not an underline.
        underlined = _UNDERLINE.match(below) and not below.strip().startswith("`") \
            and not para \
            and line.strip()
        if _HEADING.match(line) or underlined:
            flush()
            headings[len(groups)] = (ls, lines[i + 1][1] if underlined else le)
            groups.append((len(units), len(units), "heading"))
            last_prose = -1
            i += 2 if underlined else 1
            continue
        literal = literal_block(text, lines, i)
        if literal is not None:  # rst `.. code-block::`, a doctest: code, not sentences
            body_start, body_end = literal
            code_block(lines[body_start][0], lines[body_end][1], "literal")
            i = body_end + 1
            continue
        if _ADMONITION.match(line) or _RST_DIRECTIVE.match(line) or _UNDERLINE.match(line):
            flush()
            last_prose = -1
            i += 1
            continue
        if _TABLE_ROW.match(line):
            flush()
            first_unit = len(units)
            head = (-1, -1)
            while i < len(lines) and _TABLE_ROW.match(text[lines[i][0]:lines[i][1]]):
                row = text[lines[i][0]:lines[i][1]]
                header = i + 1 < len(lines) and _TABLE_RULE.match(
                    text[lines[i + 1][0]:lines[i + 1][1]])  # column names are no answer
                if header:
                    head = lines[i]
                if not header and not _TABLE_RULE.match(row) and re.search(r"[^\W_]", row):
                    index = add(lines[i][0], lines[i][1], "row", -1)
                    if index >= 0 and head[0] >= 0:
                        units[index] = replace(units[index], head_start=head[0],
                                               head_end=head[1])
                i += 1
            groups.append((first_unit, len(units), "table"))
            last_prose = -1
            continue
        item = _LIST_ITEM.match(line)
        if item:
            flush()
            first_unit = len(units)
            while i < len(lines):
                item = _LIST_ITEM.match(text[lines[i][0]:lines[i][1]])
                if not item:
                    break
                j = i + 1
                while j < len(lines):
                    nxt = text[lines[j][0]:lines[j][1]]
                    if (not nxt.strip() or _LIST_ITEM.match(nxt) or _FENCE.match(nxt)
                            or _HEADING.match(nxt) or _TABLE_ROW.match(nxt)
                            or _ADMONITION.match(nxt)):
                        break
                    j += 1
                index = add(lines[i][0], lines[j - 1][1], "item", -1)
                i = j
                # Items separated by one blank line still form one list.
                if (index >= 0 and i + 1 < len(lines) and not text[lines[i][0]:lines[i][1]].strip()
                        and _LIST_ITEM.match(text[lines[i + 1][0]:lines[i + 1][1]])):
                    i += 1
            if len(units) > first_unit:
                groups.append((first_unit, len(units), "list"))
            last_prose = -1
            continue
        para.append(i)
        i += 1
        if line.rstrip().endswith("::"):  # rst: an indented literal block follows
            literal = literal_block(text, lines, i, len(line) - len(line.lstrip()))
            if literal is not None:
                body_start, body_end = literal
                code_block(lines[body_start][0], lines[body_end][1], "literal")
                i = body_end + 1
    flush()
    return _join(text, units, groups, headings)


# How a sentence that introduces the block after it ends. A sentence cannot end in a comma or
# an "e.g.": one that does runs on into the block ("The following table lists the
# implementations at the time of writing," then the table; "with the chat model, e.g." then
# the command).
_INTRODUCING_END = re.compile(r"(?::|,|\b(?:e\.g|i\.e)\.?,?)[*_ ]*$")


def _introduces(sentence: str) -> bool:
    return bool(_INTRODUCING_END.search(sentence))


def _join(text: str, units: list[_Unit], groups: list[tuple[int, int, str]],
          headings: dict[int, tuple[int, int]] | None = None) -> list[_Unit]:
    """Introductions joined to what they introduce; leaning sentences joined to their support.

    A joined unit replaces the parts that may not stand alone: an introduction ending in ':'
    and a code block that has one; list items and table rows also stay candidates alone. A
    list or table right under a heading is also a candidate with its heading ("Requirements"
    then the list): the heading says what the items are.
    """
    out: list[_Unit] = []
    dropped: set[int] = set()
    for g, (first, last, kind) in enumerate(groups):
        if kind not in ("code", "list", "table") or g == 0 or last <= first:
            continue
        p_first, p_last, p_kind = groups[g - 1]
        if headings and g - 1 in headings and kind in ("list", "table"):
            start = _trim(text, *headings[g - 1])[0]
            end = max((units[k].end for k in range(first, last)
                       if units[k].end - start <= _MAX_JOIN), default=-1)
            if end > 0:
                out.append(_Unit(start, end, "joined", -1))
            continue
        if p_last <= p_first or p_kind not in ("para", "list"):
            continue
        intro = units[p_last - 1]
        pointing = _POINTS_AHEAD.search(text[intro.start:intro.end])
        if not _introduces(text[intro.start:intro.end]) and not pointing:
            continue
        end = units[first].end
        for k in range(first, last):  # as much of the list or table as fits
            if units[k].end - intro.start > _MAX_JOIN:
                break
            end = units[k].end
        if end - intro.start <= _MAX_JOIN or kind != "code":
            out.append(_Unit(intro.start, end, "joined", -1))
        dropped.add(p_last - 1)
        if kind == "code":
            dropped.add(first)
    for index, unit in enumerate(units):
        if index in dropped:
            continue
        if unit.kind == "sentence":
            sentence = text[unit.start:unit.end]
            leaning = bool(_LEANING.match(sentence))
            refers = _refers_back(sentence)
            if leaning or refers:
                support = _support(text, units, index, extra=leaning and refers)
                if support >= 0 and unit.end - units[support].start <= _MAX_JOIN:
                    unit = _Unit(units[support].start, unit.end, "joined", -1)
                elif leaning:
                    continue
        out.append(unit)
    return sorted(out, key=lambda u: (u.start, u.end))


# A sentence pointing at what follows it ("The following code configures ...", "as shown
# below") introduces the block after it, as one ending in ':' does.
_POINTS_AHEAD = re.compile(r"\b(?:the following|as follows|(?:shown|given|listed|described) "
                           r"below|like this)\b", re.I)
# A demonstrative inside a sentence ("However, this limitation will be fixed", "how these APIs
# can be used", "the linear layers above"): what it points at was said before. A sentence's
# pointing at its own document ("this page", "this guide") or "such as" is no such case.
_REFERS_BACK = re.compile(
    r"\b(?:this|these|those|such)\s+(?!(?:document|documentation|page|guide|section|tutorial|"
    r"docs?|file|repository|repo|project|blog|post|chapter|article|as|that|a|an)\b)[a-z][\w-]*"
    r"|\b(?:the(?:\s+\w+){1,3}\s+above|aforementioned|the former|the latter)\b", re.I)


def _refers_back(sentence: str) -> bool:
    """A demonstrative past the sentence's first word (a first "This" is _LEANING's)."""
    words = sentence.split(maxsplit=1)
    return len(words) == 2 and bool(_REFERS_BACK.search(sentence, len(sentence) - len(words[1])))


def _support(text: str, units: list[_Unit], index: int, extra: bool = False) -> int:
    """The sentence a leaning one stands on: back over up to two leaning ones, else -1; with
    `extra` (a leaning sentence that also points back inside: "However, this limitation ...")
    one sentence further, where there is one."""
    for _ in range(3):
        index = units[index].prev
        if index < 0:
            return -1
        sentence = text[units[index].start:units[index].end]
        if not _LEANING.match(sentence) and not _refers_back(sentence):
            if extra and units[index].prev >= 0:
                return units[index].prev
            return index
    return -1


def _code_units(text: str, max_chars: int) -> list[_Unit]:
    """Definitions and blank-line separated blocks at the chunk's outer indentation.

    A definition longer than max_chars is split at blank lines (its head with the docstring
    first), then at lines, so no unit is cut inside a line.
    """
    lines = _lines(text)
    indents = [len(text[s:e]) - len(text[s:e].lstrip()) for s, e in lines if text[s:e].strip()]
    if not indents:
        return []
    base = min(indents)
    blocks: list[list[int]] = []
    blank_before = True
    for n, (s, e) in enumerate(lines):
        line = text[s:e]
        if not line.strip():
            blank_before = True
            continue
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        starts_def = bool(_DEF.match(body)) or body.startswith("@")
        previous = text[slice(*lines[blocks[-1][-1]])].strip() if blocks else ""
        follows_header = previous.startswith(("@", "#"))
        closing = body[0] in ")]}"
        new = indent <= base and not closing and (
            blank_before or (starts_def and not follows_header))
        if new or not blocks:
            blocks.append([n])
        else:
            blocks[-1].append(n)
        blank_before = False
    units: list[_Unit] = []
    for block in blocks:
        pieces = _split_block(text, lines, block, max_chars)
        whole = (-1, -1) if len(pieces) == 1 else (lines[block[0]][0], lines[block[-1]][1])
        for s, e in pieces:
            s, e = _trim(text, s, e)
            if s < e:
                units.append(_Unit(s, e, "block", -1, *whole))
    return units


def _split_block(
    text: str, lines: list[tuple[int, int]], block: list[int], max_chars: int
) -> list[tuple[int, int]]:
    """A block as it is, or in pieces of whole lines up to max_chars, cut at blank lines first."""
    start, end = lines[block[0]][0], lines[block[-1]][1]
    if end - start <= max_chars:
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    piece_start = start
    last_blank_end = -1
    for n in range(block[0], block[-1] + 1):
        s, e = lines[n]
        if e - piece_start > max_chars and s > piece_start:
            cut = last_blank_end if last_blank_end > piece_start else s
            pieces.append((piece_start, cut))
            piece_start = cut
        if not text[s:e].strip():
            last_blank_end = e
    pieces.append((piece_start, end))
    return pieces


def _units(source: SourceText, max_code_chars: int = 600) -> list[_Unit]:
    text = _HTML_COMMENT.sub(lambda m: " " * len(m.group()), source.text)
    if is_code(source):
        return _code_units(text, max_code_chars)
    return _prose_units(text, mdx=source.file_path.lower().endswith(".mdx"))


def _passage(source: SourceText, unit: _Unit, score: float = 0.0) -> Passage:
    code = is_code(source) or unit.kind == "literal"  # an rst literal block is code too
    line_start = source.text.rfind("\n", 0, unit.start) + 1
    indent = source.text[line_start:unit.start] if code else ""
    if indent.strip():
        indent = ""
    context = ((unit.head_start, source.text[unit.head_start:unit.head_end]),) \
        if unit.head_start >= 0 else ()
    return Passage(source.number, source.text[unit.start:unit.end], unit.start, unit.end,
                   score, code, indent, context)


def split_passages(source: SourceText) -> list[Passage]:
    """Candidate passages of one source, in text order (they may overlap), score 0."""
    return [_passage(source, unit) for unit in _units(source)]


# --------------------------------------------------------------------------------------------
# Scoring and choice


def _scaled(values: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1]; all equal gives zeros (no unit is preferred)."""
    if not len(values):
        return values
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-9:
        import numpy as np

        return np.zeros_like(values)
    return (values - low) / (high - low)


@dataclass(frozen=True)
class _Candidate:
    source: SourceText
    unit: _Unit
    shown: str  # cleaned text, what is embedded and compared
    bag: Counter[str]
    # False for a unit not worth showing (see _showable): scored with the rest, so that the
    # IDF and the scaling do not depend on it, but never shown.
    showable: bool = True
    # Code cut out of its context (a chunk begins inside a statement or block): shown only as
    # the window of its lines that answers, marked as having lines left out before it.
    cut: bool = False
    window: Passage | None = None  # how cut code is shown (its bag and text are the window's)


_MID_SENTENCE = re.compile(r"[,.;:)\]]|\(?[a-z]+\b(?![-_./(`])")


def _starts_mid_sentence(text: str, start: int, kind: str) -> bool:
    """The unit's first words continue a sentence it does not hold: the chunk's start was moved
    back to a word inside one (`(which contain info on tile shapes...) can perform ...`), or a
    paragraph goes on with a sentence a code block interrupted (`then you must update ...`
    after the error it quotes). A name written in lower case (`vLLM`, `pip`...) in a sentence
    of its own is no such case unless it is all lower-case letters, which a sentence's first
    word rarely is."""
    if text[:start].strip() and kind not in ("sentence", "joined"):
        return False
    return bool(_MID_SENTENCE.match(text, start))


def _candidates(sources: Sequence[SourceText], settings: Settings) -> list[_Candidate]:
    out = []
    for source in sources:
        for unit in _units(source):
            if unit.end - unit.start > settings.max_unit_chars:
                continue
            raw = source.text[unit.start:unit.end]
            code = is_code(source) or unit.kind == "literal"
            if unit.head_start >= 0:  # a row under its column names
                raw = source.text[unit.head_start:unit.head_end] + "\n" + raw
            shown = raw if code else clean_markup(raw)
            bag = Counter(terms(shown))
            words = len(re.findall(r"[A-Za-z]{2,}", shown))
            if words < 3 or (unit.kind not in ("block", "literal") and words < _MIN_WORDS):
                continue  # a path, a heading-like line or a lone word is no answer
            if unit.kind not in ("block", "literal") and (
                    _introduces(shown) or shown.rstrip("*_ ").endswith("?")):
                continue  # an introduction without what it introduces, or a question
            cut = _cut_code(source, unit)
            out.append(_Candidate(source, unit, shown, bag, cut or _showable(source, unit), cut))
    return out


_LISTED = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)]|\|)[ \t]*\S", re.M)


def _signals(ask: Asked, candidate: _Candidate) -> Signals:
    """The answer-bearing signals of one candidate (see answer_signals)."""
    unit = candidate.unit
    listed = unit.kind in ("item", "row") or len(_LISTED.findall(candidate.shown)) >= 2
    text = candidate.source.text
    head = text[unit.block_start:unit.block_end].split("\n", 1)[0] \
        if 0 <= unit.block_start < unit.start else ""
    return signals(ask, candidate.shown, text[unit.start:unit.end],
                   code=is_code(candidate.source) or unit.kind == "literal", listed=listed,
                   head=head, bag=set(candidate.bag))


# One import, include or use statement of Python, C and C++, JavaScript and TypeScript, Go, Rust
# or Java (a package line too), with what follows it on its line.
_IMPORT = (r"(?:from\s+[\w.]+\s+import\s*(?:\([^)]*\)|[^\n]*)|import\s*(?:\([^)]*\)|[^\n]*)"
           r"|#\s*include\s*[<\"][^\n]*|use\s+[^;]+;[^\n]*|package\s+[\w.]+;?[^\n]*"
           r"|(?:const|let|var)\s+\w+\s*=\s*require\([^)]*\)[^\n]*)")
_IMPORTS_ONLY = re.compile(rf"\s*{_IMPORT}(?:\s+{_IMPORT})*\s*")


# A fenced block holding only snippet includes (`--8<-- "protocol.py:extra-params"`): the code
# a reader would want is in another file, and the block shows a directive instead.
_INCLUDE_ONLY_BLOCK = re.compile(
    r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(?:[ \t]*(?:--8<--[^\n]*)?\n)*?[ \t]*--8<--[^\n]*\n"
    r"(?:[ \t]*(?:--8<--[^\n]*)?\n)*[ \t]*\1[ \t]*$", re.M)


# Code that is only comment lines: `#`, `//` or the lines of a `/* ... */` block.
_COMMENT_LINES = re.compile(r"(?:[ \t]*(?:#|//|/\*|\*)[^\n]*(?:\n|$)|[ \t]*\n)+")


def _showable(source: SourceText, unit: _Unit) -> bool:
    """Worth showing: not cut out of the middle of an expression (code) or of a sentence
    (prose), and not only imports or snippet includes (module paths share many words with a
    question about the module, but tell a reader nothing)."""
    if is_code(source):
        code = source.text[unit.start:unit.end]
        if source.kind not in _C_FAMILY and _leaves_its_block(source.text, unit.start, code):
            return False
        words = re.findall(r"[A-Za-z]{2,}", re.sub(r"\S*://\S*", "", code))
        if _COMMENT_LINES.fullmatch(code) and len(words) < 12:
            return False  # a banner or a licence line (`# ruff: noqa`), not an answer
        return _balanced(code, source.kind) and not _IMPORTS_ONLY.fullmatch(
            _HASH_COMMENT.sub("", code) if source.kind not in _C_FAMILY else code)
    if _starts_mid_sentence(source.text, unit.start, unit.kind):
        return False
    raw = source.text[unit.start:unit.end]
    return "--8<--" not in raw or not _INCLUDE_ONLY_BLOCK.search(raw)


def _cut_code(source: SourceText, unit: _Unit) -> bool:
    """Code of a code file cut out of its context (it closes a bracket it did not open, leaves
    an unclosed one, or leaves the block it starts in), and not only imports."""
    if not is_code(source):
        return False
    code = source.text[unit.start:unit.end]
    plain = _HASH_COMMENT.sub("", code) if source.kind not in _C_FAMILY else code
    if _IMPORTS_ONLY.fullmatch(plain):
        return False
    leaves = source.kind not in _C_FAMILY and _leaves_its_block(source.text, unit.start, code)
    return leaves or not _balanced(code, source.kind)


def _leaves_its_block(text: str, start: int, code: str) -> bool:
    """Code that starts deeper than a later line: it begins inside a block it then leaves (a
    chunk cut in the middle of a function, `    return x` then `return None`; CMake's `list(...)`
    then `else()`). Not for the brace languages, whose closing lines sit one level up: there a
    brace closed that the span did not open says the same (_balanced)."""
    first = start - (text.rfind("\n", 0, start) + 1)
    return any(len(line) - len(line.lstrip()) < first
               for line in code.split("\n")[1:] if line.strip())


def _fallback(sources: Sequence[SourceText]) -> list[Passage]:
    """The first sentence(s) of the best-ranked source that has any text: showable units when
    any source has one, else the first unit there is (an answer is never empty)."""
    for only_showable in (True, False):
        for source in sources:
            units = [u for u in _units(source) if u.kind != "code"] or _units(source)
            if only_showable:
                units = [u for u in units if _showable(source, u)]
            if not units:
                continue
            chosen = [units[0]]
            if units[0].end - units[0].start < 80 and len(units) > 1:
                chosen.append(units[1])
            return [_passage(source, u) for u in chosen]
    return []


def _overlaps(a: _Candidate, b: _Candidate) -> bool:
    return (a.source.number == b.source.number
            and a.unit.start < b.unit.end and b.unit.start < a.unit.end)


def _duplicate(a: _Candidate, b: _Candidate, threshold: float) -> bool:
    x, y = set(a.bag), set(b.bag)
    if not x or not y:
        return a.shown == b.shown
    return len(x & y) / len(x | y) >= threshold or a.shown in b.shown or b.shown in a.shown


def select_passages(
    question: str,
    sources: Sequence[SourceText],
    embed: Embed | None = None,
    *,
    settings: Settings = DEFAULT_SETTINGS,
    on_passage: Callable[[Passage], None] | None = None,
) -> list[Passage]:
    """The best passages for the question, in source order; [] only when no source has text.

    Without `embed` the score is BM25 alone. `on_passage` sees each passage as it is settled,
    in the order they are returned, so a caller can stream them.
    """
    query = set(terms(question))
    candidates = [_as_window(c, query, settings) if c.cut else c
                  for c in _candidates(sources, settings)]
    passages: list[Passage] = []
    if candidates:
        score = _scores(question, candidates, embed, settings)
        ask = asked(question)
        order = sorted((i for i, c in enumerate(candidates) if c.showable), key=lambda i: -score[i])
        chosen: list[_Candidate] = []
        best, used = 0.0, 0
        for i in order:
            c = candidates[i]
            if score[i] <= 0 or len(chosen) >= settings.max_passages:
                break
            if chosen and (score[i] < settings.min_relative * best
                           or used + c.unit.end - c.unit.start > settings.max_chars):
                continue
            if any(_overlaps(c, o) or _duplicate(c, o, settings.duplicate_jaccard)
                   for o in chosen):
                continue
            shown = _display(c, float(score[i]), query, settings, ask)
            # Two pieces of one block may give one window: the second is not shown.
            if shown is None or any(_overlapping(p, shown) for p in passages):
                continue
            if not chosen:
                best = float(score[i])
            chosen.append(c)
            passages.append(shown)
            used += c.unit.end - c.unit.start
    if not passages:
        passages = _fallback(sources)
    passages = _rows_merged(passages)
    passages.sort(key=lambda p: (p.number, p.start))
    if settings.code_lead:
        passages = _with_lead(passages, sources)
    if on_passage is not None:
        for passage in passages:
            on_passage(passage)
    return passages


def _scores(question: str, candidates: list[_Candidate], embed: Embed | None,
            settings: Settings) -> np.ndarray:
    """Each candidate's score: BM25 and cosine, times the rank, answer-signal, code and length
    priors (see the module's docstring)."""
    import numpy as np

    query = set(terms(question))
    lexical = _scaled(_bm25(query, [c.bag for c in candidates], settings.k1, settings.b))
    prior = np.array([1 / (1 + settings.rank_decay * (max(1, c.source.number) - 1))
                      for c in candidates])
    ask, weights = asked(question), settings.weights()
    prior = prior * np.array([factor(ask, _signals(ask, c), weights) for c in candidates])
    if embed is not None:
        shortlist = np.argsort(-(lexical * prior), kind="stable")
        if settings.embed_limit > 0:
            shortlist = shortlist[: settings.embed_limit]
        texts = [question] + [candidates[i].shown[:_EMBED_CHARS] for i in shortlist]
        vectors = np.asarray(embed(texts))
        dense = np.zeros(len(candidates))
        dense[shortlist] = _scaled(vectors[1:] @ vectors[0])
        score = settings.lexical_weight * lexical + (1 - settings.lexical_weight) * dense
    else:
        score = lexical
    score = score * prior
    if settings.code_weight != 1.0:
        score = score * np.array([settings.code_weight if is_code(c.source) else 1.0
                                  for c in candidates])
    for i, c in enumerate(candidates):
        if c.cut:
            score[i] *= settings.cut_weight
        excess = (c.unit.end - c.unit.start) - settings.soft_chars
        if excess > 0:
            score[i] *= settings.soft_chars / (settings.soft_chars + excess)
    return score


def _display(c: _Candidate, score: float, query: set[str], settings: Settings,
             ask: Asked) -> Passage | None:
    """How a chosen candidate is shown: code cut out of its context as the window of its lines
    that answers (None when no line does), a piece of a long definition as its window under
    the signature, anything else as it is."""
    unit = c.unit
    if unit.block_start >= 0:
        window = windowed(c.source, (unit.start, unit.end), (unit.block_start, unit.block_end),
                          score, query, settings.k1, min_chars=settings.window_min_chars)
        if window is not None or c.cut:
            return window
    elif c.cut:
        return replace(c.window, score=score) if c.window is not None else None
    passage = _passage(c.source, unit, score)
    if not passage.code and wants_targets(ask, c.shown):
        passage = replace(passage, link_targets=True)
    return passage


def _as_window(c: _Candidate, query: set[str], settings: Settings) -> _Candidate:
    """Code cut out of its context, scored as what it would show: the window of its lines
    that answers (not showable when no line does)."""
    unit = c.unit
    if unit.block_start >= 0:
        return c  # a piece of a long definition: shown as the definition's window
    span = (unit.start, unit.start + min(unit.end - unit.start, settings.cut_window_chars))
    window = windowed(c.source, span, (unit.start, unit.end), 0.0, query, settings.k1, cut=True)
    if window is None:
        return replace(c, showable=False)
    return replace(c, shown=window.text, bag=Counter(terms(window.text)), window=window)


def _with_lead(passages: list[Passage], sources: Sequence[SourceText]) -> list[Passage]:
    """In source order, the first code passage of a code file led by one sentence of its
    source's own prose (the docstring or comment that says what the code does), where there
    is one and the code does not show it: shown right before the code."""
    by_number = {s.number: s for s in sources}
    ordered = sorted(passages, key=lambda p: (p.number, p.start))
    for n, passage in enumerate(ordered):
        source = by_number.get(passage.number)
        if source is None or not passage.code or not is_code(source):
            continue
        lead = lead_sentence(source, passage)
        if lead is not None and not any(_overlapping(lead, p) for p in ordered
                                        if p is not passage):
            return ordered[:n] + [lead] + ordered[n:]
        break
    return ordered


def _overlapping(a: Passage, b: Passage) -> bool:
    """Two passages of one source share text: their spans, or one's span and the other's
    context lines (a window under `def f(` and a window that is that line)."""
    if a.number != b.number:
        return False

    def meets(start: int, end: int, other: Passage) -> bool:
        return any(start < e and s < end for s, e in
                   [(other.start, other.end)] + [(s, s + len(x)) for s, x in other.context])

    return meets(a.start, a.end, b) or meets(b.start, b.end, a)


def _rows_merged(passages: list[Passage]) -> list[Passage]:
    """Rows of one table shown once under its column names: the last row keeps the others
    (and the header) as its context lines, in source order."""
    tables: dict[tuple[int, int], list[Passage]] = {}
    for passage in passages:
        if not passage.code and passage.context:
            tables.setdefault((passage.number, passage.context[0][0]), []).append(passage)
    out = [p for p in passages if p.code or not p.context]
    for rows in tables.values():
        rows.sort(key=lambda p: p.start)
        last = rows[-1]
        context = rows[0].context + tuple((p.start, p.text) for p in rows[:-1])
        out.append(replace(last, context=context, score=max(p.score for p in rows)))
    return out


# --------------------------------------------------------------------------------------------
# The answer


def _shown(passage: Passage) -> str:
    if passage.code:
        lines: list[str] = []
        offset = -1  # where the line after the last shown one starts
        for start, line in passage.context:
            if lines and start != offset:
                lines.append(_elision(line))
            lines.append(line)
            offset = start + len(line) + 1
        window = (passage.indent + passage.text).split("\n")
        if (lines and passage.start - len(passage.indent) != offset) \
                or (passage.elided and not lines):
            lines.append(_elision(window[0]))
        lines += window
        width = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
        body = "\n".join(x[width:].rstrip() for x in lines)
        return f"```\n{body}\n```"
    # A table row under its column names: both verbatim lines of the source.
    return clean_markup("\n".join([line for _, line in passage.context] + [passage.text]),
                        passage.link_targets)


def _elision(line: str) -> str:
    """`...` at the indentation of the line that follows it: lines left out."""
    return line[:len(line) - len(line.lstrip())] + "..."


def compose_pieces(passages: Sequence[Passage]) -> Iterator[str]:
    """Each passage as shown with its citation, one piece at a time (for streaming)."""
    for n, passage in enumerate(passages):
        shown = _shown(passage)
        cite = f"[{passage.number}]"
        ends_in_block = shown.rstrip().endswith(("```", "~~~"))
        piece = f"{shown}\n{cite}" if ends_in_block else f"{shown} {cite}"
        yield piece if n == 0 else "\n\n" + piece


def compose(passages: Sequence[Passage]) -> tuple[str, list[int]]:
    """The answer text and the source numbers it cites, in order of first citation."""
    text = "".join(compose_pieces(passages))
    cited = list(dict.fromkeys(p.number for p in passages))
    return text, cited


@dataclass(frozen=True)
class ExtractiveAnswer:
    text: str
    cited: list[int]
    passages: list[Passage]


def answer(
    question: str,
    sources: Sequence[SourceText],
    embed: Embed | None = None,
    *,
    settings: Settings = DEFAULT_SETTINGS,
) -> ExtractiveAnswer:
    """Select and compose in one call."""
    passages = select_passages(question, sources, embed, settings=settings)
    text, cited = compose(passages)
    return ExtractiveAnswer(text, cited, passages)
