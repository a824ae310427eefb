"""What an extractive answer may quote: a source's text cut into units, each a verbatim span.

Units are sentences, list items, table rows, fenced code blocks and rst literal blocks of
prose, and whole definitions or short blocks of code files; an introducing sentence ending in
':' (or naming "the following" block) travels with the block it introduces, a list or table
right under a heading is a unit with it, and a sentence leaning on the one before ("This ...",
"For comparison, ...", "However, this limitation ...") with that one; where there is none, a
leading connective ("Then, ") is left out of the unit, or the sentence is. passage_choice
scores and chooses among them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ragdb.generate.markup import ADMONITION as _ADMONITION
from ragdb.generate.markup import FENCE as _FENCE
from ragdb.generate.markup import HTML_COMMENT as _HTML_COMMENT
from ragdb.generate.markup import RST_DIRECTIVE as _RST_DIRECTIVE
from ragdb.generate.markup import TABLE_RULE as _TABLE_RULE
from ragdb.generate.markup import UNDERLINE as _UNDERLINE
from ragdb.generate.markup import literal_block
from ragdb.generate.spans import Passage, SourceText, is_code
from ragdb.generate.spans import DEF_LINE as _DEF
from ragdb.generate.spans import line_spans as _lines
from ragdb.generate.spans import trim_span as _trim


@dataclass(frozen=True)
class Unit:
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
    r"In this way|This way|As such|With this|With that|For comparison|By comparison|"
    r"In comparison|In contrast|By contrast|On the other hand|Conversely|Nevertheless|"
    r"Nonetheless|Even so|Meanwhile)\b"
)
# An opening phrase that points back at what was said before it ("To facilitate this, ...",
# "For these reasons, ...", "In cases like this, ...", "In other words, ..."), up to its comma;
# "In this guide, ..." points at its own document, which needs nothing before it.
_LEANING_PHRASE = re.compile(
    r"^(?:(?:To \w+|In|For|Because of|Due to|After|Before|Despite|Given|Like|Unlike|Besides|"
    r"Beyond|Apart from|Other than|Based on|On top of|Instead of|Along with|Compared to|"
    r"Compared with|Similar to|Once|Unless|Without|With) "
    r"(?:(?:all|both|each|either|any|one|some|most|many|none) of )?"
    r"(?:this|that|these|those|them|it|such|cases? like (?:this|that|these))"
    r"(?:[ \t]+(?!(?:document|documentation|page|guide|section|tutorial|docs?|file|repository|"
    r"repo|project|blog|post|chapter|article|example|release|version)\b)[a-z][\w-]*)?"
    r"|In other words|That said|That is|As (?:mentioned|noted|described|explained|discussed|"
    r"shown|stated|seen|such|a consequence|above)(?: (?:above|before|earlier|previously))?"
    r"|Consequently|Accordingly)\s*,")
_MAX_JOIN = 1500  # an introduced block or a leaning sentence joined beyond this is dropped


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

    A chunk cut from a long file may begin in the middle of a fenced block. A bare first fence
    (no language) followed by one that names a language (it opens a block) is the closing one;
    with an odd number of fence lines and a bare first fence, that fence is taken as the closing
    one too, unless what precedes it introduces a block: then it opens one that runs past the
    chunk's end.
    """
    fences = [n for n, (s, e) in enumerate(lines) if _FENCE.match(text[s:e])]
    if not fences or text[slice(*lines[fences[0]])].strip().strip("`~"):
        return 0
    # The next fence names a language (```python): it opens a block (a closing fence names
    # none), so the bare one before it closed one, whatever precedes it (a `# {"a": 1}` line
    # of the block's output reads like a heading).
    if len(fences) > 1 and text[slice(*lines[fences[1]])].strip().strip("`~"):
        return fences[0] + 1
    if not len(fences) % 2:
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


def _prose_units(text: str, mdx: bool = False) -> list[Unit]:
    """Sentences, list items, table rows and fenced blocks, with introductions joined.
    `mdx`: MDX's import/export blocks and JSX tag lines are skipped, as markup."""
    lines = _lines(text)
    units: list[Unit] = []
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
        units.append(Unit(start, end, kind, prev))
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


def introduces(sentence: str) -> bool:
    return bool(_INTRODUCING_END.search(sentence))


def _join(text: str, units: list[Unit], groups: list[tuple[int, int, str]],
          headings: dict[int, tuple[int, int]] | None = None) -> list[Unit]:
    """Introductions joined to what they introduce; leaning sentences joined to their support.

    A joined unit replaces the parts that may not stand alone: an introduction ending in ':'
    and a code block that has one; list items and table rows also stay candidates alone. A
    list or table right under a heading is also a candidate with its heading ("Requirements"
    then the list): the heading says what the items are.
    """
    out: list[Unit] = []
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
                out.append(Unit(start, end, "joined", -1))
            continue
        if p_last <= p_first or p_kind not in ("para", "list"):
            continue
        intro = units[p_last - 1]
        pointing = _POINTS_AHEAD.search(text[intro.start:intro.end])
        if not introduces(text[intro.start:intro.end]) and not pointing:
            continue
        # "Then, vLLM supports the following ...:" shown without the sentence before it.
        intro = replace(intro, start=_past_connective(text, intro.start, intro.end))
        # "This can take several minutes:" leans on the sentence before it ("... you'll
        # need to build vLLM from source."): the block comes with the sentence it stands on.
        said = text[intro.start:intro.end]
        if intro.kind == "sentence" and (_LEANING.match(said) or _refers_back(said)):
            support = _support(text, units, p_last - 1, first=p_first)
            if support >= p_first:
                intro = replace(intro, start=units[support].start)
        end = units[first].end
        for k in range(first, last):  # as much of the list or table as fits
            if units[k].end - intro.start > _MAX_JOIN:
                break
            end = units[k].end
        if end - intro.start <= _MAX_JOIN or kind != "code":
            out.append(Unit(intro.start, end, "joined", -1))
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
            # An opening phrase pointing back ("To facilitate this, ...") is joined with the
            # sentence it stands on where the chunk has it, and shown as it is where not: its
            # content words still answer ("For these reasons, it's best not to ...").
            if leaning or refers or _LEANING_PHRASE.match(sentence):
                support = _support(text, units, index, extra=leaning and refers)
                if support >= 0 and unit.end - units[support].start <= _MAX_JOIN:
                    unit = Unit(units[support].start, unit.end, "joined", -1)
                elif leaning:
                    start = _past_connective(text, unit.start, unit.end)
                    rest = text[start:unit.end]
                    if start == unit.start or _LEANING.match(rest) or _refers_back(rest):
                        continue
                    unit = replace(unit, start=start)
        out.append(unit)
    return sorted(out, key=lambda u: (u.start, u.end))


# A connective that only links a sentence to the one before it ("Then, ", "Also, "): what
# follows it stands alone, and is what a passage without that sentence shows, when it begins
# a sentence of its own (a capital, a name like `vLLM`; "Also, in some cases" does not).
_CONNECTIVE = re.compile(r"(?:Then|Also|Additionally|Furthermore|Moreover|In addition|Next|"
                         r"Finally|Lastly|Besides|Likewise|Similarly|However),[ \t\n]+"
                         r"(?![a-z]+\b)(?=[A-Za-z`\[*_(\"'0-9])")


def _past_connective(text: str, start: int, end: int) -> int:
    """Where a sentence starts past its leading connective; `start` when it has none."""
    match = _CONNECTIVE.match(text, start, end)
    return match.end() if match else start


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


def _support(text: str, units: list[Unit], index: int, extra: bool = False,
             first: int = 0) -> int:
    """The sentence a leaning one stands on: back over up to two leaning ones, else -1; with
    `extra` (a leaning sentence that also points back inside: "However, this limitation ...")
    one sentence further, where there is one. A sentence opening on a phrase that points back
    ("To facilitate this, ...") is passed over for the one it stands on, and is the support
    where there is none before it (from unit `first` on)."""
    fallback = -1
    for _ in range(3):
        index = units[index].prev
        if index < first:
            return fallback
        sentence = text[units[index].start:units[index].end]
        if not _LEANING.match(sentence) and not _refers_back(sentence):
            if _LEANING_PHRASE.match(sentence):
                fallback = index
                continue
            if extra and units[index].prev >= first:
                return units[index].prev
            return index
    return fallback


def _code_units(text: str, max_chars: int) -> list[Unit]:
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
    units: list[Unit] = []
    for block in blocks:
        pieces = _split_block(text, lines, block, max_chars)
        whole = (-1, -1) if len(pieces) == 1 else (lines[block[0]][0], lines[block[-1]][1])
        for s, e in pieces:
            s, e = _trim(text, s, e)
            if s < e:
                units.append(Unit(s, e, "block", -1, *whole))
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


def source_units(source: SourceText, max_code_chars: int = 600) -> list[Unit]:
    """The units of one source, in text order (HTML comments blanked, offsets kept)."""
    text = _HTML_COMMENT.sub(lambda m: " " * len(m.group()), source.text)
    if is_code(source):
        return _code_units(text, max_code_chars)
    return _prose_units(text, mdx=source.file_path.lower().endswith(".mdx"))


def unit_passage(source: SourceText, unit: Unit, score: float = 0.0) -> Passage:
    """A unit as the passage that shows it (code keeps its first line's indentation)."""
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
    return [unit_passage(source, unit) for unit in source_units(source)]
