"""What every part of the extractive answerer shares: a source, a passage, and the terms and
BM25 it compares them by.

A leaf module (nothing here imports from the answerer), so that passage choice
(`extractive`), code windows (`code_window`) and answer signals (`answer_signals`) can each
live in a module of its own.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragdb.chunking import PROSE_FILE_KINDS
from ragdb.file_types import C_FAMILY
from ragdb.tokenize import STOPWORDS, analyse_terms

if TYPE_CHECKING:  # imported when an answer is scored: `ragdb index` loads this module too
    import numpy as np


@dataclass(frozen=True)
class SourceText:
    """One retrieved source as the answer numbers it (1-based, in search order)."""

    number: int
    file_path: str
    kind: str  # file kind (python, markdown, rst, text) or a chunk kind (function, section...)
    text: str


@dataclass(frozen=True)
class Passage:
    """A verbatim span of source `number`: `text == source.text[start:end]`, before cleaning."""

    number: int
    text: str
    start: int
    end: int
    score: float
    code: bool = False  # raw code from a code file: shown fenced, not cleaned as prose
    indent: str = ""  # whitespace before `start` on its line, so code keeps its shape
    # (offset, text) of whole source lines shown before the passage, verbatim: for code, the
    # signature lines (`class ...:`, `def ...(`) of the definition a window of lines lies in;
    # for a table row, its table's header row.
    context: tuple[tuple[int, str], ...] = ()
    # Code only: lines before the passage are left out (its chunk begins inside a statement
    # or a block): shown as `...` above it.
    elided: bool = False
    # Code only: the definition goes on past the passage (lines left out after it): shown as
    # `...` below it, at this column (the first left-out line's indentation); -1: it does not.
    elided_after: int = -1
    # Prose only: links shown with their targets (it answers "where", or it points elsewhere).
    link_targets: bool = False
    # Code of a code file: ragdb's own line naming what the block shows (the file, and the
    # definition when the lines show or lie in one), shown above the block; not a quote.
    label: str = ""


CODE_KINDS = frozenset({"python", "module", "function", "class", "statements", "code"})
#: File and chunk kinds that are prose; any other language (Go, CUDA, YAML, JSON...) is code.
PROSE_KINDS = PROSE_FILE_KINDS | {"section", "paragraph"}
_BUILD_FILE = re.compile(
    r"(\.py|\.pyi|\.toml|\.cfg|\.ini|\.cmake|\.sh|\.ya?ml|/CMakeLists\.txt|/Makefile|"
    r"/Dockerfile[^/]*|\.dockerfile|/requirements[^/]*\.txt|/requirements/[^/]+\.(txt|in))$"
)


def is_code(source: SourceText) -> bool:
    """Code files are split into definitions and blocks, never into sentences."""
    return (source.kind in CODE_KINDS or source.kind not in PROSE_KINDS
            or bool(_BUILD_FILE.search("/" + source.file_path)))


def line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line, end before its newline."""
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without surrounding whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def stem(term: str) -> str:
    """Plural and -ing/-ed forms folded: `adapters` meets `adapter` without a stemmer."""
    if len(term) > 4 and term.endswith("ies"):
        return term[:-3] + "y"
    if len(term) > 3 and term.endswith("s") and not term.endswith(("ss", "us", "is")):
        return term[:-1]
    if len(term) > 5 and term.endswith("ing"):
        return term[:-3]
    if len(term) > 4 and term.endswith("ed"):
        return term[:-2]
    return term


def terms(text: str) -> list[str]:
    """Informative, lightly stemmed terms of a text: what BM25 compares."""
    return [stem(t) for t in analyse_terms(text, plain=True)
            if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]


def idf(n: int, df: int) -> float:
    """BM25's IDF of a term in `df` of `n` units (never negative)."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def bm25(query: set[str], docs: list[Counter[str]], k1: float, b: float) -> np.ndarray:
    """BM25 of each unit with IDF over the units: a word in every source counts little."""
    import numpy as np

    n = len(docs)
    if not n or not query:
        return np.zeros(n)
    lengths = np.array([sum(d.values()) for d in docs], dtype=float)
    avg = max(1.0, float(lengths.mean()))
    scores = np.zeros(n)
    for term in query:
        tf = np.array([d.get(term, 0) for d in docs], dtype=float)
        df = int((tf > 0).sum())
        if not df:
            continue
        scores += idf(n, df) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths / avg))
    return scores


#: A Python definition's first line (after decorators).
DEF_LINE = re.compile(r"(async\s+def|def|class)\s")
# A line that opens or continues control flow, or closes a block, in any language: never a
# definition's signature.
CONTROL = re.compile(r"\s*(?:[)\]}]|(?:if|elif|else|elseif|for|foreach|while|switch|case|"
                     r"default|do|try|catch|except|finally|with|return|match|endif|endforeach|"
                     r"endwhile|endfunction|endmacro|end|fi|done|esac|then)\b)")
# A comment line of Python/shell/CMake, or of the C family.
HASH_LINE = re.compile(r"[ \t]*#[ \t]?")
SLASH_LINE = re.compile(r"[ \t]*(?://+|/\*+|\*(?!/))[ \t]?")
OPENING, CLOSING = "([{", ")]}"

_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
HASH_COMMENT = re.compile(r"(?:^|(?<=\s))#.*$", re.M)
_SLASH_COMMENT = re.compile(r"(?:^|(?<=\s))//.*$", re.M)


def balanced(code: str, language: str) -> bool:
    """No bracket closed that the span did not open, none left open: the span is not cut out
    of the middle of an expression (a chunk of a long file may begin or end inside one)."""
    comment = _SLASH_COMMENT if language in C_FAMILY else HASH_COMMENT
    depth = 0
    for char in comment.sub("", _STRING.sub("", code)):
        if char in OPENING:
            depth += 1
        elif char in CLOSING:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def depth_changes(lines: list[str], language: str) -> list[int]:
    """How much each line opens (+) or closes (-) brackets, strings and comments left out."""
    comment = _SLASH_COMMENT if language in C_FAMILY else HASH_COMMENT
    out = []
    for line in lines:
        code = comment.sub("", _STRING.sub("", line))
        out.append(sum(c in OPENING for c in code) - sum(c in CLOSING for c in code))
    return out
