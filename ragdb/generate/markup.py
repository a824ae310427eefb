"""Markdown, MyST and rst as a reader should see them: links as their text, markers gone,
wrapped lines joined, and code (fenced, rst literal blocks, doctests) kept verbatim.

Shared by the extractive answerer's units (where a fence, an admonition or a literal block
starts) and its display (`clean_markup`).
"""

from __future__ import annotations

import re
from typing import Callable

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
UNDERLINE = re.compile(r"^[ \t]*([=\-~^\"'`#*+])\1{2,}[ \t]*$")
# Admonitions, mkdocs content tabs (=== "Tab") and snippet includes (--8<-- "file").
ADMONITION = re.compile(r"^[ \t]*(!!!|\?\?\?\+?|:::|===[ \t]+\"|--8<--)")
RST_DIRECTIVE = re.compile(r"^[ \t]*\.\.\s")
# A table's delimiter row, `| :--- | ---: |` or `---|---`: the whole line, nothing else.
TABLE_RULE = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{2,}:?[ \t]*\|)+[ \t]*(?::?-{2,}:?)?[ \t]*$")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)
# rst directives whose body is code, and a directive's option lines (`:linenos:`).
_RST_CODE = re.compile(r"^([ \t]*)\.\.\s+(?:code-block|code|sourcecode|doctest|testcode|"
                       r"ipython|highlight|prompt)::")
_RST_OPTION = re.compile(r"^[ \t]*:[\w-]+:")
_DOCTEST = re.compile(r"^[ \t]*>>>(?:\s|$)")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def literal_block(text: str, lines: list[tuple[int, int]], i: int,
                  base: int | None = None) -> tuple[int, int] | None:
    """(first, last) body line of an rst literal block starting at line i, else None.

    With `base` (the indentation of a line ending in "::"), the block is the lines after it
    indented deeper. Without, line i must open one: a code directive (`.. code-block:: bash`,
    its body the deeper lines after its options) or a doctest (`>>>` lines to a blank line).
    """
    def line(n: int) -> str:
        return text[lines[n][0]:lines[n][1]]

    first = i
    if base is None:
        if _DOCTEST.match(line(i)):
            last = i
            while last + 1 < len(lines) and line(last + 1).strip():
                last += 1
            return i, last
        directive = _RST_CODE.match(line(i))
        if not directive:
            return None
        base = len(directive.group(1))
        first = i + 1
        while first < len(lines) and _RST_OPTION.match(line(first)) \
                and _indent(line(first)) > base:
            first += 1
    while first < len(lines) and not line(first).strip():
        first += 1
    if first >= len(lines) or _indent(line(first)) <= base:
        return None
    last = first
    for n in range(first + 1, len(lines)):
        if line(n).strip():
            if _indent(line(n)) <= base:
                break
            last = n
    return first, last


_LINK_REF = re.compile(r"!?\[([^\]\n]+)\]\[[^\]\n]*\]")
_LINK_URL = re.compile(r"!?\[([^\]\n]*)\]\(((?:[^()\s]|\([^()\s]*\))*)(?:\s+\"[^\"]*\")?\)")
# The vLLM docs' GitHub autolinks (`<gh-file:vllm/config.py>`, `<gh-pr:7279>`).
_GH_LINK = re.compile(r"<gh-(file|dir|issue|pr):([^>\s]+)>")
_RST_LINK = re.compile(r"`([^`<\n]+?)\s*<([^>\n]+)>`_+")
# An rst reference, `os.cpu_count`_: its text.
_RST_REFERENCE = re.compile(r"`([^`<\n]+)`_{1,2}(?![\w`])")
_RST_ROLE = re.compile(r":[\w:.-]+:`~?([^`\n]+)`")
_RST_LITERAL = re.compile(r"``([^`\n]+)``")
# MyST roles, `{meth}`Command.main`` or `{func}`edit <click.edit>``: the text, as code.
_MYST_ROLE = re.compile(r"\{[\w:.-]+\}`~?([^`<\n]+?)(?:\s*<[^>\n]*>)?`")
_LEADING_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])\s")
# A blockquote's markers (`> `, nested `> > `) on each of its lines: joined as they were, a
# quoted warning read "takes >   precedence". GitHub's alert line (`> [!NOTE]`) is a marker
# like an admonition's. A doctest's `>>>` is no quote.
_QUOTE_MARKER = re.compile(r"^(?!>>>)(?:>[ \t]?)+")
_ALERT = re.compile(r"^\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\s*$", re.I)
# HTML in Markdown prose (a README's `<p class="note">`, `<strong>`): the tags go, their text
# stays; code-like ones put their text in backticks. Only HTML's own names, so a placeholder
# (`--model <name>`, `List<String>`) is left alone.
_HTML_CODE = re.compile(r"<(tt|code|kbd|samp|var)\b[^<>]*>([^<>\n]*)</\1\s*>", re.I)
_HTML_BLOCK = re.compile(
    r"</?(?:p|div|br|hr|img|details|summary|center|h[1-6]|ul|ol|li|dl|dt|dd|table|thead|tbody"
    r"|tfoot|tr|td|th|caption|blockquote|picture|source|figure|figcaption)(?:\s[^<>]*)?/?>",
    re.I)
_HTML_INLINE = re.compile(
    r"</?(?:span|strong|b|em|i|u|s|a|sup|sub|small|big|mark|ins|del|font|abbr|cite|q|nobr"
    r"|wbr)(?:\s[^<>]*)?/?>", re.I)
# The entities HTML prose writes most, shown as the characters they stand for.
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "nbsp": " ", "#39": "'"}
_HTML_ENTITY = re.compile(r"&(lt|gt|amp|quot|nbsp|#39);", re.I)
# YARD's references in prose: `{file:docs/Tags.md meta-data tags}` (its title, else the
# file), `{tag:!macro}` (the tag as written in a docstring).
_YARD_REF = re.compile(r"\{(file|url|include):(\S+?)(?:\s+([^{}\n]+?))?\}|\{tag:([!\w.-]+)\}")


def _gh_link_text(match: re.Match[str]) -> str:
    kind, target = match.groups()
    if kind in ("file", "dir"):
        return f"`{target}`"
    return f"{'issue' if kind == 'issue' else 'pull request'} #{target}"


def _with_target(match: re.Match[str]) -> str:
    text, target = match.group(1), match.group(2)
    return f"{text} ({target})" if target and target not in text else text


def _yard_ref_text(match: re.Match[str]) -> str:
    kind, target, title, tag = match.groups()
    if tag is not None:
        return f"`@{tag}`"
    return title or f"`{target}`"


# Inline code: a run of backticks to the next run of the same length. What is inside is
# shown as written ("the `<br>` tag" keeps its tag).
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")


def _outside_code(line: str, change: Callable[[str], str]) -> str:
    """`change` applied to the prose of a line only, never to its inline code spans."""
    if "`" not in line:
        return change(line)
    pieces: list[str] = []
    position = 0
    for code in _INLINE_CODE.finditer(line):
        pieces += [change(line[position:code.start()]), code.group(0)]
        position = code.end()
    return "".join(pieces + [change(line[position:])])


def _tags_out(prose: str) -> str:
    plain = _HTML_CODE.sub(r"`\2`", _YARD_REF.sub(_yard_ref_text, prose))
    return _HTML_BLOCK.sub(" ", _HTML_INLINE.sub("", plain))


def _entities_out(prose: str) -> str:
    plain = _HTML_ENTITY.sub(lambda m: _ENTITIES[m.group(1).lower()], prose)
    return re.sub(r"[ \t]{2,}", " ", plain)


def _without_html(line: str) -> str:
    """HTML tags out of a prose line, their text kept (_HTML_BLOCK, _HTML_INLINE); the
    spaces they leave collapsed. Inline code is code: its tags stay."""
    if "<" not in line and "{" not in line:
        return line
    plain = _outside_code(line, _tags_out)
    if plain == line:
        return line
    return _outside_code(plain, _entities_out).strip()


def _markdown_links_as_text(prose: str, targets: bool) -> str:
    prose = _GH_LINK.sub(_gh_link_text, prose)
    prose = _LINK_REF.sub(r"\1", prose)
    return _LINK_URL.sub(_with_target if targets else r"\1", prose)


def _links_as_text(line: str, targets: bool = False) -> str:
    """Links as their text; with `targets`, a link's target after it: `full example
    (examples/online_serving/structured_outputs.md)`, what a "where" question asks for.
    A Markdown link inside inline code is code, left as written."""
    line = _outside_code(line, lambda prose: _markdown_links_as_text(prose, targets))
    line = _RST_LINK.sub(_with_target if targets else r"\1", line)
    return _RST_REFERENCE.sub(r"\1", line)


def _literals_fenced(text: str) -> str:
    """rst literal blocks and doctests as fenced blocks of their lines, dedented, so that they
    are shown as code and never joined into a sentence (markdown fences are left alone)."""
    lines: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        lines.append((pos, pos + len(line)))
        pos += len(line) + 1
    out: list[str] = []
    fence = ""
    i = 0
    while i < len(lines):
        line = text[lines[i][0]:lines[i][1]]
        opening = FENCE.match(line)
        if fence or opening:
            if opening and not fence:
                fence = opening.group(1)
            elif fence and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = ""
            out.append(line)
            i += 1
            continue
        block = literal_block(text, lines, i)
        if block is None:
            i += 1
            if not line.rstrip().endswith("::") or RST_DIRECTIVE.match(line):
                out.append(line)
                continue
            # rst: "Example::" reads "Example:", "Example ::" reads "Example", "::" nothing.
            head = line.rstrip()[:-2]
            if head.strip():
                out.append(head.rstrip() + ("" if head.endswith((" ", "\t")) else ":"))
            block = literal_block(text, lines, i, _indent(line))
            if block is None:
                continue
        first, last = block
        body = [text[lines[n][0]:lines[n][1]] for n in range(first, last + 1)]
        width = min(_indent(b) for b in body if b.strip())
        out += ["```"] + [b[width:].rstrip() for b in body] + ["```"]
        i = last + 1
    return "\n".join(out)


def clean_markup(text: str, link_targets: bool = False) -> str:
    """Markdown and rst markup a reader should not see; fenced code kept fenced and verbatim.

    Links keep their text (and their target after it, with `link_targets`), admonition
    markers and heading hashes go, admonition bodies lose their indentation, wrapped prose
    lines are joined and a table row loses its outer pipes.
    """
    text = _literals_fenced(HTML_COMMENT.sub("", text))
    out: list[str] = []
    fence = ""
    fence_indent = 0
    previous_row = False
    for line in text.split("\n"):
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                out.append(fence)
                fence = ""
            else:
                cut = min(fence_indent, len(line) - len(line.lstrip()))
                out.append(line[cut:].rstrip())
            continue
        opening = FENCE.match(line)
        if opening:
            fence = opening.group(1)
            fence_indent = len(line) - len(line.lstrip())
            out.append(stripped)
            continue
        if ADMONITION.match(line) or UNDERLINE.match(line):
            continue
        if RST_DIRECTIVE.match(line) or TABLE_RULE.match(line):
            continue
        stripped = _QUOTE_MARKER.sub("", stripped).strip()
        if _ALERT.match(stripped):
            continue
        stripped = _links_as_text(re.sub(r"^#{1,6}\s+", "", stripped), link_targets)
        stripped = _without_html(stripped)
        stripped = _MYST_ROLE.sub(r"`\1`", _RST_ROLE.sub(r"`\1`", stripped))
        stripped = _RST_LITERAL.sub(r"`\1`", stripped)
        row = stripped.startswith("|")
        if row:
            stripped = " | ".join(c.strip() for c in stripped.strip("|").split("|"))
        if not stripped:
            if out and out[-1] != "":
                out.append("")
            continue
        previous = out[-1] if out else ""
        # A wrapped line joins the one before, a list item's lazy continuation included; a
        # new item, a table row or anything after a fence or a row starts a line of its own.
        if (previous and not previous.startswith(("```", "~~~")) and not row
                and not previous_row and not _LEADING_MARKER.match(stripped)):
            # Link text wrapped onto this line (`[security\npolicy](url)`) is whole only now.
            out[-1] = _links_as_text(previous + " " + stripped, link_targets)
        else:
            out.append(stripped)
        previous_row = row
    if fence:
        out.append(fence)
    return "\n".join(out).strip()
