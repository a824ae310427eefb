"""Markdown, reStructuredText, AsciiDoc, Org, RDoc and plain text cut along their headings and
paragraphs.

Each heading starts a unit that runs to the next one, with the path of the headings above as
its context; fenced code blocks, YAML front matter and (in MDX) the import/export blocks are
not read for headings, nor MkDocs' snippet section markers (`# --8<-- [start:name]`: they
vanish from the rendered page; ragdb.snippets). Plain text is cut at its blank lines.
chunk_packing groups the units.
"""

from __future__ import annotations

import re

from ragdb.chunk_packing import _BLANK_RUN, _HEADING_BASE, _PARA, _TOP, _Unit
from ragdb.snippets import is_marker_heading, opened_at


_MD_CANDIDATE = re.compile(r"^[ \t]*[`~#=-].*$", re.M)
_FRONT_MATTER = re.compile(r"---[ \t]*\r?\n(?:[ \t]*\S.*\n)*?(?:---|\.\.\.)[ \t]*\r?$", re.M)
_MD_ATTRS = re.compile(r"\{[ \t]*[#.:][^}]*\}")
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
            if level <= 6 and (len(body) == level or body[level] in " \t") \
                    and not is_marker_heading(body):  # MkDocs' `# --8<-- [start:x]`
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
    """A heading's text without its attributes (`{#id .class}`) and closing hashes. Cut from
    the end by hand: the patterns searched at every blank of a long run of blanks took
    seconds on a line of 20,000."""
    title = raw.strip()
    if title.endswith("}"):
        at = title.rfind("{")
        if at >= 0 and _MD_ATTRS.fullmatch(title, at):
            title = title[:at].rstrip()
    if title.endswith("#"):
        kept = title.rstrip("#")
        if not kept or kept[-1] in " \t":
            title = kept
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


def markdown_units(text: str, mdx: bool = False) -> list[_Unit]:
    headings = _markdown_headings(text, mdx)
    if "8<" in text:  # a `[start:x]` snippet marker just above a heading opens its section
        headings = [(opened_at(text, start, headings[n - 1][0] + 1 if n else 0), level, title)
                    for n, (start, level, title) in enumerate(headings)]
    return _heading_units(text, headings)


_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*\r?$", re.M)


def rst_units(text: str) -> list[_Unit]:
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


# AsciiDoc: `== Title` (or Markdown's `## Title`) at a line's start; a delimited block (a line
# of four or more `-`, `.`, `+`, `/`, `=`, `*`, `_`, or a ``` fence) runs to the same line again
# and holds no headings (listings, literals, comments, examples, sidebars).
_ADOC_CANDIDATE = re.compile(r"^[=#\-.+/*_`].*$", re.M)
# (Written so that no two parts can match the same characters: a long line fails in one pass.)
_ADOC_DELIMITER = re.compile(r"(-{4,}|\.{4,}|\+{4,}|/{4,}|={4,}|\*{4,}|_{4,})[ \t]*\r?"
                             r"|(`{3,})[^`\n]*")
_ADOC_HEADING = re.compile(r"(={1,6}|#{1,6})[ \t]+(\S[^\n]*)")
# Org: `* Title`, `** Title` (stars at a line's start); `#+BEGIN_x` ... `#+END_x` hold none.
_ORG_CANDIDATE = re.compile(r"^(?:\*|[ \t]*#\+(?i:begin|end)_).*$", re.M)
_ORG_HEADING = re.compile(r"(\*+)[ \t]+(\S[^\n]*)")
_ORG_TAGS = re.compile(r":[\w@#%]+(?::[\w@#%]+)*:")
_ORG_BLOCK = re.compile(r"[ \t]*#\+(?i:(begin|end))_(\w+)")
# RDoc: `= Title`, `== Title` at a line's start (its verbatim text is indented).
_RDOC_HEADING = re.compile(r"^(={1,6})[ \t]*([^=\s][^\n]*)", re.M)


def asciidoc_units(text: str) -> list[_Unit]:
    """Sections of AsciiDoc, skipping the delimited blocks."""
    headings: list[tuple[int, int, str]] = []
    block = ""  # the delimiter of the block being skipped
    for m in _ADOC_CANDIDATE.finditer(text):
        line = m.group()
        if block:
            if line.rstrip() == block:
                block = ""
            continue
        delimiter = _ADOC_DELIMITER.fullmatch(line)
        if delimiter:
            block = delimiter.group(1) or delimiter.group(2)
            continue
        heading = _ADOC_HEADING.fullmatch(line)
        if heading:
            headings.append((m.start(), len(heading.group(1)), _heading_title(heading.group(2))))
    return _heading_units(text, headings)


def org_units(text: str) -> list[_Unit]:
    """Sections of an Org file, skipping #+BEGIN_ ... #+END_ blocks."""
    headings: list[tuple[int, int, str]] = []
    block = ""  # the name of the block being skipped, lower-cased
    for m in _ORG_CANDIDATE.finditer(text):
        line = m.group()
        marker = _ORG_BLOCK.match(line)
        if marker:
            kind, name = marker.group(1).lower(), marker.group(2).lower()
            if kind == "begin" and not block:
                block = name
            elif kind == "end" and name == block:
                block = ""
            continue
        if block:
            continue
        heading = _ORG_HEADING.fullmatch(line)
        if heading:
            title = heading.group(2).strip()
            words = title.rsplit(None, 1)
            if len(words) == 2 and _ORG_TAGS.fullmatch(words[1]):  # `* Setup  :work:`
                title = words[0]
            headings.append((m.start(), len(heading.group(1)), title))
    return _heading_units(text, headings)


def rdoc_units(text: str) -> list[_Unit]:
    """Sections of RDoc markup."""
    return _heading_units(text, [(m.start(), len(m.group(1)), m.group(2).strip())
                                 for m in _RDOC_HEADING.finditer(text)])


def paragraph_units(text: str) -> list[_Unit]:
    units: list[_Unit] = []
    prev = 0
    for m in re.finditer(_BLANK_RUN, text):
        units.append((prev, m.end(), _PARA, "", "paragraph"))
        prev = m.end()
    if prev < len(text):
        units.append((prev, len(text), _PARA, "", "paragraph"))
    return units
