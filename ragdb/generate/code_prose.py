"""What code says about itself, shown with it: the lead sentence (the first sentence of the
docstring or comment of the definition the shown code lies in) and the label line that names the
file and definition over a code block (ragdb's own words, never a quote).
"""

from __future__ import annotations

import re

from ragdb.file_types import C_FAMILY
from ragdb.generate.spans import (
    CONTROL,
    DEF_LINE,
    HASH_LINE,
    SLASH_LINE,
    Passage,
    SourceText,
    depth_changes,
    trim_span,
)


# A docstring's opening quotes.
_DOCSTRING = re.compile(r"[ \t]*[rRuUbBfF]{0,2}(\"\"\"|''')[ \t]*")
# A sentence's end: a full stop before a space or the end, not after e.g. or i.e.
_STOP = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)[.!](?=\s|$)")
_NOT_PROSE = re.compile(r"TODO|FIXME|XXX|HACK|noqa|type:\s*ignore|pragma|https?://|SPDX|"
                        r"Copyright|^(?:Args|Returns|Raises|Example|Note)s?:", re.I)


def lead_sentence(source: SourceText, passage: Passage) -> Passage | None:
    """One sentence of the source's own prose that says what the shown code does: the first
    sentence of the docstring of the definition the code lies in, else of the comment just
    above it; None when there is none or the code shows it already. Verbatim: the sentence's
    span of the source, shown as prose before the code."""
    text = source.text
    first = text.rfind("\n", 0, passage.start) + 1
    # The signature lines it lies in, innermost first, then the definitions it shows.
    heads = [start for start, _ in reversed(passage.context)]
    pos = first
    for line in text[first:passage.end].split("\n"):
        if DEF_LINE.match(line.lstrip()):
            heads.append(pos)
        pos += len(line) + 1
    for start in heads:
        found = _docstring_sentence(text, start)
        if found is not None and passage.start <= found[0] < passage.end:
            return None  # the code shows its docstring already
        if found is not None:
            return Passage(passage.number, text[found[0]:found[1]], found[0], found[1],
                           passage.score)
    found = _comment_sentence(text, first, source.kind in C_FAMILY)
    if found is not None:
        return Passage(passage.number, text[found[0]:found[1]], found[0], found[1],
                       passage.score)
    return None


def _docstring_sentence(text: str, header: int) -> tuple[int, int] | None:
    """The first sentence of the docstring under the definition whose first line starts at
    `header` (its header may run over several lines, to the line ending in ':')."""
    pos, depth = header, 0
    while True:
        end = text.find("\n", pos)
        if end < 0:
            return None
        depth += depth_changes([text[pos:end]], "python")[0]
        if depth <= 0 and text[pos:end].rstrip().endswith(":"):
            break
        pos = end + 1
    line_start = end + 1
    match = _DOCSTRING.match(text, line_start)
    if not match:
        return None
    close = text.find(match.group(1), match.end())
    body_end = close if close >= 0 else len(text)
    paragraph_end = text.find("\n\n", match.end(), body_end)
    return _sentence(text, match.end(), paragraph_end if paragraph_end >= 0 else body_end)


def _comment_sentence(text: str, line_start: int, c_family: bool) -> tuple[int, int] | None:
    """The first sentence of the comment lines just above the line at `line_start`: one line
    of a `//` comment, or `#` lines (shown with their marks dropped, as prose)."""
    marker = SLASH_LINE if c_family else HASH_LINE
    lines: list[tuple[int, int]] = []
    end = line_start - 1
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end]
        if not marker.match(line) or not line.strip().strip("#/*").strip():
            break
        lines.insert(0, (start, end))
        end = start - 1
    if not lines:
        return None
    first = marker.match(text, lines[0][0])
    assert first is not None
    span = _sentence(text, first.end(), lines[0][1] if c_family else lines[-1][1])
    if span is not None and text[span[1] - 1] not in ".!":
        return None  # a comment that goes on (below, or in the code shown): no sentence
    return span


def _sentence(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The first whole sentence of text[start:end], of four words or more, that is prose."""
    s, e = trim_span(text, start, end)
    if s >= e or not (text[s].isupper() or text[s] == "`"):
        return None
    stop = _STOP.search(text, s, e)
    if stop is not None:
        e = stop.end()
    sentence = text[s:e]
    if len(re.findall(r"[A-Za-z]{2,}", sentence)) < 4 or _NOT_PROSE.search(sentence):
        return None
    return s, e


# A definition's first line in Python, the C family, Rust, Go, TypeScript...: its keyword
# (after modifiers) and the name it defines.
_NAMED = re.compile(
    r"[ \t]*(?:(?:pub(?:\([^)]*\))?|export|default|async|static|public|private|protected|"
    r"abstract|final|inline|unsafe|extern|virtual|declare)\s+)*"
    r"(?:def|class|fn|function|func|struct|enum|trait|interface|impl|type|macro|module)\s+"
    r"([A-Za-z_$][\w$]*)")
_PREAMBLE = re.compile(r"[ \t]*(?:@|#\[|#(?!\w)|//|/\*|\*|$)")


#: A label line as code_label writes it (a benchmark's verbatim check leaves it out).
LABEL = re.compile(r"From `[^`\n]+`(?:, `[^`\n]+`)*:")


# A method's header without a keyword (`_processEntry(entry: LayoutShift) {` in TypeScript,
# Java, C++): its name before the parameters.
_METHOD = re.compile(r"[ \t]*(?:(?:public|private|protected|static|async|override|readonly|"
                     r"get|set|virtual|inline|const)\s+)*(?:[\w:<>*&\[\]]+\s+)*?"
                     r"([A-Za-z_$~][\w$]*)\s*(?:<[^>]*>)?\s*\(")


def _header_name(line: str) -> re.Match[str] | None:
    """The name a signature line (code_window's context) of a brace language defines, where
    it is not a control statement's line (CMake's `set(X` and a call's first line are none)."""
    if CONTROL.match(line) or not line.rstrip().endswith("{"):
        return None
    return _METHOD.match(line)


def code_label(source: SourceText, passage: Passage) -> str:
    """ragdb's own words naming what a code block shows, not a quote: `From `path`, `name`:`
    with the definition the lines lie in (its signature lines, outermost first, dotted) and
    those that begin in them (`From `p`, `A.f`, `A.g`:`, up to three); `From `path`:` when
    they name none."""
    def level(line: str) -> int:
        return len(line) - len(line.lstrip())

    # (indentation, name, shown): the definitions the line being read lies in.
    stack = [(level(line), m.group(1), False) for _, line in passage.context
             if (m := _NAMED.match(line) or _header_name(line))]
    names: list[str] = []
    lines = [x for x in (passage.indent + passage.text).split("\n") if x.strip()]
    if stack and lines and not _NAMED.match(lines[0]):
        names.append(".".join(x[1] for x in stack[-3:]))  # it begins inside the last one
    for line in lines:
        match = _NAMED.match(line)
        if match is None:
            continue
        while stack and stack[-1][0] >= level(line):
            stack.pop()
        inside_shown = any(x[2] for x in stack)  # a method of a class shown whole: no name
        stack.append((level(line), match.group(1), True))
        if not inside_shown:
            names.append(".".join(x[1] for x in stack[-3:]))
    # A class whose methods are named is named by them (`A.f`, not `A` and `A.f`).
    names = [x for x in dict.fromkeys(names)
             if not any(y.startswith(x + ".") for y in names)][:3]
    return "From " + ", ".join(f"`{x}`" for x in [source.file_path] + names) + ":"
