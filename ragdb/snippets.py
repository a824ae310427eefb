"""MkDocs snippets (pymdownx.snippets, `--8<--`): pages built from other files' sections.

A page includes a file, or a named section of one, with a line `--8<-- "path:name"` (or a
block: `--8<--` alone, one path a line, `--8<--`); the included file marks its sections with
`--8<-- [start:name]` and `--8<-- [end:name]` lines, often written as a Markdown H1
(`# --8<-- [start:name]`) or an HTML comment. The markers vanish from the rendered page, so
the chunker never takes them for headings (prose_chunking) and an answer shows what an
include line brings in, not the line (generate/blocks.py). The rules follow
pymdownx.snippets' own patterns (a `;` before the scissors escapes a line).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

#: A section marker anywhere on its line: `# --8<-- [start:name]`, `<!-- --8<-- [end:x] -->`.
# (Not after a dash: a long run of dashes is read once, not once from each of its dashes.)
SECTION_MARKER = re.compile(r"(?<![;-])-+8<-+[ \t]+\[[ \t]*(start|end)[ \t]*:[ \t]*"
                            r"([a-z][-_0-9a-z]*)[ \t]*\]", re.I)
_INCLUDE = re.compile(r"-+8<-+[ \t]+(\"(?:\\\"|[^\"\n\r])+?\"|'(?:\\'|[^'\n\r])+?')")
_BLOCK = re.compile(r"-+8<-+")
# `path`, `path:name` or `path:first:last` (line numbers, 1-based, either may be empty).
_SPEC = re.compile(r"(.*?)(?::([0-9]*)(?::([0-9]*))?|:([a-z][-_0-9a-z]*))?", re.I)
# What may stand around include lines on a page: a content tab's title (`=== "CUDA"`), an
# admonition's or a collapsible block's first line (`!!! note`, `???+ tip "Title"`), the
# fence of the code block the included lines are shown in.
# A page made only of includes has no text of its own besides its headings and anchors
# (`[](){ #build-from-source }`, `{ #id }`).
_WRAPPER = re.compile(r"(?:===\+?|!!!|\?\?\?\+?)(?:[ \t].*)?|(?:`{3,}|~{3,})[ \t]*[\w+.-]*"
                      r"|(?:\[\]\(\))?\{[ \t]*#[^}]*\}")
_HEADING = re.compile(r"#{1,6}[ \t]+(.*?)[ \t#]*")


def is_marker_heading(title: str) -> bool:
    """A heading's title that is a snippet section marker, not a heading."""
    return SECTION_MARKER.search(title) is not None


def opened_at(text: str, start: int, floor: int = 0) -> int:
    """Where the section beginning at offset `start` (a heading's line) opens when `[start:x]`
    marker lines stand just above it (blank lines between allowed): at the first of them, as
    a region's opening marker belongs to the region it names; else `start`. Never before
    `floor` (the previous heading)."""
    opened = start
    end = start
    while end > floor:
        begin = text.rfind("\n", floor, end - 1) + 1
        line = text[begin:end]
        m = SECTION_MARKER.search(line)
        if m is not None and m.group(1).lower() == "start":
            opened = begin
        elif line.strip():
            break
        if begin <= floor:
            break
        end = begin
    return max(opened, floor)


def includes(lines: Sequence[str]) -> list[tuple[str, str]]:
    """The snippets (`path` or `path:name`) a run of lines includes when that is all it
    holds, apart from blank lines, headings, anchors, tab titles, admonition lines and code
    fences, each with the title of the heading above it in the run ('' if none); else []."""
    found: list[tuple[str, str]] = []
    block = False
    title = ""
    for line in lines:
        body = line.strip()
        if not body:
            continue
        if _BLOCK.fullmatch(body):
            block = not block
        elif block:
            if not body.startswith(";"):
                found.append((body, title))
        elif (m := _INCLUDE.fullmatch(body)) is not None:
            found.append((m.group(1)[1:-1], title))
        elif (m := _HEADING.fullmatch(body)) is not None and not line[0].isspace():
            title = m.group(1)
        elif not _WRAPPER.fullmatch(body):
            return []
    return found


def target(including: str, spec: str) -> tuple[list[str], str]:
    """The indexed paths an include may name, most likely first, and the rest of the spec
    (':name', ':3:9' or ''). A snippet's path is relative to the site's base path, usually
    the repository root: any folder holding the including page, the nearest first (an index
    root holds it too, so the roots are among them)."""
    m = _SPEC.fullmatch(spec.strip())
    path = m.group(1) if m else spec
    if not path or "://" in path or posixpath.isabs(path):
        return [], ""
    folders = []
    folder = posixpath.dirname(including)
    while folder not in folders:
        folders.append(folder)
        folder = posixpath.dirname(folder)
    return [posixpath.normpath(posixpath.join(f, path)) for f in folders], spec.strip()[len(path):]


def section(lines: Sequence[str], rest: str) -> tuple[int, int] | None:
    """Lines (0-based, inclusive) a spec's rest selects: the named section between its start
    and end markers (to the end of the file without one), lines first..last, or the whole
    file; None where the name is not found or nothing is left."""
    m = _SPEC.fullmatch(rest)
    if not rest or m is None:
        lo, hi = 0, len(lines) - 1
    elif m.group(4):
        lo = next((i + 1 for i, x in enumerate(lines) if _marks(x, "start", m.group(4))), -1)
        if lo < 0:
            return None
        hi = next((i - 1 for i in range(lo, len(lines)) if _marks(lines[i], "end", m.group(4))),
                  len(lines) - 1)
    else:
        lo = int(m.group(2)) - 1 if m.group(2) else 0
        hi = int(m.group(3)) - 1 if m.group(3) else len(lines) - 1
        lo, hi = max(0, lo), min(hi, len(lines) - 1)
    return (lo, hi) if lo <= hi and any(x.strip() for x in lines[lo:hi + 1]) else None


def _marks(line: str, kind: str, name: str) -> bool:
    m = SECTION_MARKER.search(line)
    return m is not None and m.group(1).lower() == kind and m.group(2) == name
