"""The candidates of extractive passage choice: every unit of the sources, with what decides
whether it may be shown at all.

A unit is worth showing when it is not cut out of the middle of an expression (code) or of a
sentence (prose), not a table's legend, not a file's imports or a banner comment; code cut out
of its context is shown only as the window of its lines that answers. Scoring and choosing
among the candidates is ragdb.generate.passage_choice's.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ragdb.file_types import C_FAMILY
from ragdb.generate.answer_units import Unit, introduces, source_units, unit_passage
from ragdb.generate.markup import clean_markup
from ragdb.generate.spans import HASH_COMMENT as _HASH_COMMENT
from ragdb.generate.spans import Passage, SourceText, is_code, terms
from ragdb.generate.spans import balanced as _balanced

_MIN_WORDS = 4  # prose units shorter than this are labels, not answers


@dataclass(frozen=True)
class Candidate:
    source: SourceText
    unit: Unit
    shown: str  # cleaned text, what is embedded and compared
    bag: Counter[str]
    # False for a unit not worth showing (see showable): scored with the rest, so that the
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


def unit_candidates(sources: Sequence[SourceText], max_unit_chars: int) -> list[Candidate]:
    """Every unit of every source that could answer: units longer than `max_unit_chars`,
    labels, introductions without what they introduce and questions are none; a unit cut out
    of its context or not worth showing is kept (it counts in the IDF and the scaling) but
    marked so."""
    out = []
    for source in sources:
        tail = _tail_of_sibling(source, sources)
        for unit in source_units(source):
            if unit.end - unit.start > max_unit_chars:
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
                    introduces(shown) or shown.rstrip("*_ ").endswith("?")):
                continue  # an introduction without what it introduces, or a question
            cut = _cut_code(source, unit)
            worth = cut or (showable(source, unit) and unit.start != tail)
            out.append(Candidate(source, unit, shown, bag, worth, cut))
    return out


def _tail_of_sibling(source: SourceText, sources: Sequence[SourceText]) -> int:
    """Where the source's first sentence starts when it is the end of a sentence of another
    source of the same file (chunks overlap: "Python's memory tracking misses." opens the
    chunk after "... spot native leaks that\nPython's memory tracking misses."): no unit
    starting there is shown, as none starting inside a sentence is; -1 when it is none."""
    if is_code(source):
        return -1
    text = source.text
    start = len(text) - len(text.lstrip())
    end = _SENTENCE_STOP.search(text, start)
    first = text[start:end.end() if end else len(text)].strip()
    if len(first) < 8:
        return -1
    for other in sources:
        if other is source or other.file_path != source.file_path or is_code(other):
            continue
        at = other.text.find(first)
        while at > 0:
            before = other.text[:at]
            kept = before.rstrip()
            gap = before[len(kept):].replace(" ", "").replace("\t", "")
            if kept and "\n\n" not in gap and (kept[-1].isalnum() or kept[-1] in ",;("):
                return start  # a word, not a sentence's end nor a blank line, before it
            at = other.text.find(first, at + 1)
    return -1


_SENTENCE_STOP = re.compile(r"[.!?](?=\s|$)")


_IMPORT = (r"(?:from\s+[\w.]+\s+import\s*(?:\([^)]*\)|[^\n]*)|import\s*(?:\([^)]*\)|[^\n]*)"
           r"|#\s*include\s*[<\"][^\n]*|use\s+[^;]+;[^\n]*|package\s+[\w.]+;?[^\n]*"
           r"|(?:const|let|var)\s+\w+\s*=\s*require\([^)]*\)[^\n]*)")
_IMPORTS_ONLY = re.compile(rf"\s*{_IMPORT}(?:\s+{_IMPORT})*\s*")
# What a file's head holds around its imports and says nothing about the code: comments (a
# licence, `# SPDX-...`) and, in Python, a module docstring standing as its own statement.
_DOCSTRING_STATEMENT = re.compile(r'^[ \t]*[rRbBuU]?("""|\'\'\')[\s\S]*?\1[ \t]*$', re.M)
_C_COMMENT = re.compile(r"/\*[\s\S]*?\*/|(?:^|(?<=\s))//[^\n]*")


def _imports_only(code: str, kind: str) -> bool:
    """Code that is only imports, includes or `use` lines, with comments and a module
    docstring around them (a file's head: licence, docstring, imports)."""
    if kind in C_FAMILY:
        plain = _C_COMMENT.sub("", code)
    else:
        plain = _DOCSTRING_STATEMENT.sub("", _HASH_COMMENT.sub("", code))
    return bool(_IMPORTS_ONLY.fullmatch(plain))


# A fenced block holding only snippet includes (`--8<-- "protocol.py:extra-params"`): the code
# a reader would want is in another file, and the block shows a directive instead.
_INCLUDE_ONLY_BLOCK = re.compile(
    r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(?:[ \t]*(?:--8<--[^\n]*)?\n)*?[ \t]*--8<--[^\n]*\n"
    r"(?:[ \t]*(?:--8<--[^\n]*)?\n)*[ \t]*\1[ \t]*$", re.M)


# Code that is only comment lines: `#`, `//` or the lines of a `/* ... */` block.
_COMMENT_LINES = re.compile(r"(?:[ \t]*(?:#|//|/\*|\*)[^\n]*(?:\n|$)|[ \t]*\n)+")


# A table's legend ("- ✅︎ indicates that the method is supported", "* 🚧 means ..."): what a
# mark in the table means, which says nothing without the table.
_LEGEND = re.compile(r"\s*(?:[-*+]\s+)?[^\w\s]{1,4}\s+(?:indicates|means|denotes|marks|"
                     r"represents|stands for)\b")


# A list item that points at what came before the list ("In the example above, the plugin
# value is ..."): shown alone, the example it explains is missing.
_POINTS_ABOVE = re.compile(r"\b(?:the(?:\s+[\w-]+){1,3}\s+above|aforementioned)\b", re.I)


def showable(source: SourceText, unit: Unit) -> bool:
    """Worth showing: not cut out of the middle of an expression (code) or of a sentence
    (prose), not a table's legend, and not only imports or snippet includes (module paths
    share many words with a question about the module, but tell a reader nothing)."""
    if is_code(source):
        code = source.text[unit.start:unit.end]
        if source.kind not in C_FAMILY and _leaves_its_block(source.text, unit.start, code):
            return False
        words = re.findall(r"[A-Za-z]{2,}", re.sub(r"\S*://\S*", "", code))
        if _COMMENT_LINES.fullmatch(code) and len(words) < 12:
            return False  # a banner or a licence line (`# ruff: noqa`), not an answer
        return _balanced(code, source.kind) and not _imports_only(code, source.kind)
    if _starts_mid_sentence(source.text, unit.start, unit.kind):
        return False
    raw = source.text[unit.start:unit.end]
    if unit.kind in ("item", "sentence") and _LEGEND.match(clean_markup(raw)):
        return False
    if unit.kind == "item" and _POINTS_ABOVE.search(raw):
        return False  # "3. **Plugin value**: ... In the example above, ...": the list's tail
    return "--8<--" not in raw or not _INCLUDE_ONLY_BLOCK.search(raw)


def _cut_code(source: SourceText, unit: Unit) -> bool:
    """Code of a code file cut out of its context (it closes a bracket it did not open, leaves
    an unclosed one, or leaves the block it starts in), and not only imports."""
    if not is_code(source):
        return False
    code = source.text[unit.start:unit.end]
    if _imports_only(code, source.kind):
        return False
    leaves = source.kind not in C_FAMILY and _leaves_its_block(source.text, unit.start, code)
    return leaves or not _balanced(code, source.kind)


def _leaves_its_block(text: str, start: int, code: str) -> bool:
    """Code that starts deeper than a later line: it begins inside a block it then leaves (a
    chunk cut in the middle of a function, `    return x` then `return None`; CMake's `list(...)`
    then `else()`). Not for the brace languages, whose closing lines sit one level up: there a
    brace closed that the span did not open says the same (_balanced)."""
    first = start - (text.rfind("\n", 0, start) + 1)
    return any(len(line) - len(line.lstrip()) < first
               for line in code.split("\n")[1:] if line.strip())


def fallback_passages(sources: Sequence[SourceText]) -> list[Passage]:
    """The first sentence(s) of the best-ranked source that has any text: showable units when
    any source has one, else the first unit there is (an answer is never empty)."""
    for only_showable in (True, False):
        for source in sources:
            units = [u for u in source_units(source) if u.kind != "code"] or source_units(source)
            if only_showable:
                units = [u for u in units if showable(source, u)]
            if not units:
                continue
            chosen = [units[0]]
            if units[0].end - units[0].start < 80 and len(units) > 1:
                chosen.append(units[1])
            return [unit_passage(source, u) for u in chosen]
    return []
