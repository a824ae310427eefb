"""Where an answer block starts and ends (generate/blocks.py): the lines that match the
question, the branch and definition they lie in, the signature lines above them, the
paragraphs, lists and tables of a docs section. All on a file's lines (0-based indexes,
inclusive bounds), nothing but regular expressions and indentation: a cut that works the same
on any language ragdb indexes.
"""

from __future__ import annotations

import re

from ragdb.snippets import is_marker_heading
from ragdb.tokenize import analyse_terms, query_terms

#: A docs section of at most this many lines is shown whole.
DOCS_SECTION_LINES = 40
#: A docs block is the largest section holding its best line, subsections included, that fits
#: in this many lines (and the slot's limit). 60 was chosen on the tuning questions (docs:
#: reference lines shown 59% -> 65%); read blind on the 27 sample docs questions whose answer
#: it changed, both readers found it better on 6 and worse on none (benchmarks/README).
WHOLE_SECTION_LINES = 60


# -- matching the question ------------------------------------------------------------------


def _stem(term: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[:-len(suffix)]
    return term


def question_terms(question: str) -> frozenset[str]:
    return frozenset(_stem(t) for t in query_terms(question))


def line_score(line: str, terms: frozenset[str]) -> int:
    """How many of the question's distinct terms a line holds (identifiers split)."""
    return len(terms.intersection(_stem(t) for t in analyse_terms(line)))


# -- code ---------------------------------------------------------------------------------


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


_CLOSER = re.compile(r"\s*(?:[})\]]|end\b|fi\b|done\b|esac\b)")
_OPENS = re.compile(r"[{(\[:]\s*$|=>\s*\{?\s*$")


def block_end(lines: list[str], head: int, hi: int) -> int:
    """The last line of what the line `head` opens, within lines[:hi+1]: the lines indented
    under it, and a closing line at its indentation (`}`, `end`); a closer that opens again
    (`) => {`, `) -> X:` after a long parameter list) goes on."""
    level = _indent(lines[head])
    end = head
    for i in range(head + 1, hi + 1):
        if not lines[i].strip():
            continue
        if _indent(lines[i]) > level:
            end = i
            continue
        if _indent(lines[i]) == level and _CLOSER.match(lines[i]):
            end = i
            if _OPENS.search(lines[i]):
                continue
        break
    return end


def _branch(lines: list[str], at: int, lo: int, hi: int) -> tuple[int, int]:
    """The innermost branch holding line `at` within lines[lo:hi+1]: from the nearest line
    above with less indentation (its header) to its end (block_end)."""
    own = _indent(lines[at])
    for i in range(at - 1, lo - 1, -1):
        if lines[i].strip() and _indent(lines[i]) < own and not _CLOSER.match(lines[i]):
            return i, max(at, block_end(lines, i, hi))
    return lo, hi


def region(lines: list[str], lo: int, hi: int, terms: frozenset[str], limit: int,
           focus: tuple[int, int] | None = None) -> tuple[int, int]:
    """At most `limit` lines of lines[lo:hi+1] (inclusive bounds returned): all of them when
    they fit; else, around the line of `focus` (default: all) that holds most of the
    question's terms, the block that line opens and the enclosing branches, the largest that
    fits, with lines around it up to `limit` (a third above, the rest below), cut at
    statement boundaries. Never a cut through that line or its branch."""
    if hi - lo + 1 <= limit:
        return lo, hi
    f_lo, f_hi = focus if focus is not None else (lo, hi)
    best_score, neg = max((line_score(lines[i], terms), -i) for i in range(f_lo, f_hi + 1))
    best = -neg if best_score else f_lo
    a, b = best, min(hi, block_end(lines, best, hi))
    if b - a + 1 > limit:
        b = a + limit - 1
    while a > lo:
        na, nb = _branch(lines, a, lo, hi)
        if nb - na + 1 > limit or (na, nb) == (a, b):
            break
        a, b = na, max(b, nb)
    spare = limit - (b - a + 1)
    start = max(lo, a - spare // 3)
    end = min(hi, b + spare - (a - start))
    start = max(lo, min(start, end - limit + 1))
    level = _indent(lines[a])
    while start < a and (not lines[start].strip() or _indent(lines[start]) > level
                         or _CLOSER.match(lines[start])):
        start += 1  # not from the middle of a statement
    after = [i for i in range(b + 1, min(hi, end + 1) + 1) if lines[i].strip()]
    if end < hi and after and after[-1] == end + 1:
        outer = min(_indent(lines[i]) for i in after)
        cut = max(i for i in after if _indent(lines[i]) == outer) - 1
        if _indent(lines[end + 1]) > outer and cut - start + 1 >= 2 * limit // 3:
            end = cut  # a statement runs on past the end: not begun, unless it is most
    while end > b and not lines[end].strip():
        end -= 1
    return start, end


_COMMENT_LINE = re.compile(r"\s*(?://|#(?![!\[])|/\*|\*|--)")


def without_lead_in(lines: list[str], a: int, b: int) -> int:
    """The block's last line without the comment lines that end it and introduce the code
    after it (a chunk may end on the doc comment of the next definition)."""
    k = b
    while k > a and _COMMENT_LINE.match(lines[k]):
        k -= 1
    if k < b and b + 1 < len(lines) and lines[b + 1].strip() \
            and not _COMMENT_LINE.match(lines[b + 1]):
        while k > a and not lines[k].strip():
            k -= 1
        return k
    return b


def _collapse(text: str) -> str:
    return " ".join(text.split())


def signature_lines(lines: list[str], context: str, first: int, last: int) -> list[int]:
    """The file lines (0-based) where the definitions the chunk (lines first..last) lies in
    or starts begin, outermost first: each of the index's context entries (normalised
    signatures, innermost last) found above the one inside it, the innermost at or above the
    chunk's last line (a chunk may open with the doc comment above its signature), none
    indented deeper than the chunk's first line."""
    found: list[int] = []
    pos = min(last, len(lines) - 1)
    limit = _indent(lines[first]) + 1 if first < len(lines) else 1 << 30
    for entry in reversed([e for e in context.split("\n") if e.strip()]):
        wanted = _collapse(entry)
        for i in range(pos, -1, -1):
            shown = _collapse(lines[i])
            if len(shown) >= min(8, len(wanted)) and _indent(lines[i]) < limit \
                    and (wanted.startswith(shown) or shown.startswith(wanted)):
                found.append(i)
                pos, limit = i - 1, _indent(lines[i])
                break
    return sorted(found)[-3:]


def head_lines(lines: list[str], starts: list[int], context: str) -> list[int]:
    """The signature lines `starts` (signature_lines), each with the lines that carry its
    signature on to its name: a C function in GNU style (`static int` above `foo (int x)`)
    is headed by both, as its context entry runs on past the first line; at most up to the
    line that opens its parameters."""
    entries = [_collapse(e) for e in context.split("\n") if e.strip()]
    out: list[int] = []
    for i in starts:
        out.append(i)
        shown = _collapse(lines[i])
        entry = next((e for e in entries if e.startswith(shown) and len(e) > len(shown)), "")
        j = i
        while entry and "(" not in shown and j + 1 < len(lines) and j - i < 3:
            more = _collapse(shown + " " + lines[j + 1])
            if not lines[j + 1].strip() or not entry.startswith(more):
                break
            j, shown = j + 1, more
            out.append(j)
    return out


_NAME = re.compile(
    r"\s*(?:(?:pub(?:\([^)]*\))?|export|default|async|static|public|private|protected|"
    r"abstract|final|inline|unsafe|extern|declare)\s+)*"
    r"(?:def|class|fn|function|func|struct|enum|trait|interface|impl|type|module|const|let|var)"
    r"\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")


# A method's header without a keyword (`_processEntry(entry: T) {` in TypeScript, Java, C++).
_METHOD = re.compile(r"\s*(?:(?:public|private|protected|static|async|override|readonly|get|"
                     r"set|virtual|inline)\s+)*([A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*\(.*[{(]\s*$")
_CONTROL = frozenset({"if", "for", "while", "switch", "catch", "return", "with", "elif",
                      "match", "foreach", "until", "unless", "sizeof", "await", "new"})


def definition_name(line: str) -> str:
    """The name a definition's first line defines, else ''."""
    found = _NAME.match(line) or _METHOD.match(line)
    name = found.group(1) if found else ""
    return "" if name in _CONTROL else name


# A C or C++ function's signature (`static int send_request (struct payload *p, int n)`): the
# word before its parameters, after its return type. Read only on signature lines.
_C_SIGNATURE = re.compile(r"\s*(?:[A-Za-z_][\w:]*[\s*&]+)+\**([A-Za-z_][\w:~]*)\s*\(")


def head_name(signature: str) -> str:
    """The name a signature (its lines joined) defines, else ''."""
    name = definition_name(signature)
    if name:
        return name
    found = _C_SIGNATURE.match(signature)
    name = found.group(1) if found else ""
    return "" if name in _CONTROL else name


# -- docs ---------------------------------------------------------------------------------

_FENCE = re.compile(r"\s*(```|~~~)")
_ATX = re.compile(r"#{1,6}\s")
UNDERLINE = re.compile(r"([=\-~^\"'`#*+])\1{2,}\s*$")
ITEM = re.compile(r"\s*(?:[-*+]\s|\d+[.)]\s|\|)")


def headings(lines: list[str]) -> list[int]:
    """The lines that are headings (Markdown `#`, setext and reStructuredText underlines:
    the title line), outside fenced code; MkDocs' snippet markers are not (the chunker's rule)."""
    out: list[int] = []
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif fenced:
            continue
        elif _ATX.match(line) and not is_marker_heading(line):  # not `# --8<-- [start:x]`
            out.append(i)
        elif (i > 0 and UNDERLINE.match(line) and lines[i - 1].strip()
              and not ITEM.match(lines[i - 1])
              and len(line.strip()) >= len(lines[i - 1].strip()) - 1):
            out.append(i - 1)
    return out


def whole_section(lines: list[str], heads: list[int], top: int, limit: int
                  ) -> tuple[int, int, int] | None:
    """The largest section holding the heading at `top`, its own or a parent's, subsections
    included, whose paragraphs fit in `limit` lines: its heading, first and last lines; None
    where not even its own fits. A section ends before the next heading of its level or above
    (Markdown's `#`s; an underline's level is the order its character first underlines a
    title, reStructuredText's rule)."""
    order: list[str] = []
    levels: dict[int, int] = {}
    for h in heads:
        if _ATX.match(lines[h]):
            levels[h] = len(lines[h]) - len(lines[h].lstrip("#"))
        else:
            mark = lines[h + 1].strip()[0]
            order += [mark] if mark not in order else []
            levels[h] = 1 + order.index(mark)
    found = None
    for h in [h for h in heads if h <= top][::-1]:
        if found is not None and levels[h] >= levels[found[0]]:
            continue  # not a parent of the section found
        end = min((x for x in heads if x > h and levels[x] <= levels[h]), default=len(lines))
        underlined = h + 1 < len(lines) and UNDERLINE.match(lines[h + 1]) is not None
        runs = paragraphs(lines, h + 1 + underlined, end - 1)
        if not runs or runs[-1][1] - runs[0][0] + 1 > limit:
            break
        found = (h, runs[0][0], runs[-1][1])
    return found


def paragraphs(lines: list[str], lo: int, hi: int) -> list[tuple[int, int]]:
    """Runs of non-blank lines of lines[lo:hi+1], a fenced block kept whole, list items
    separated by a blank line kept in one run, a heading's underline with its title."""
    runs: list[tuple[int, int]] = []
    i = lo
    while i <= hi:
        if not lines[i].strip():
            i += 1
            continue
        start = i
        fenced = False
        while i <= hi and (lines[i].strip() or fenced):
            if _FENCE.match(lines[i]):
                fenced = not fenced
            i += 1
            # A list goes on past a blank line when the next line is an item or indented.
            if not fenced and i <= hi and not lines[i].strip() and ITEM.match(lines[start]):
                j = i
                while j <= hi and not lines[j].strip():
                    j += 1
                if j <= hi and (ITEM.match(lines[j]) or _indent(lines[j]) > 0):
                    i = j
        runs.append((start, i - 1))
    return runs


def best_paragraphs(lines: list[str], a: int, b: int, terms: frozenset[str], limit: int
                    ) -> tuple[int, int]:
    """Whole paragraphs of lines[a:b+1] within `limit` lines: the best-matching one and its
    neighbours, the better-matching neighbour first; one longer than `limit` (a long table),
    a window of it from its best line's branch."""
    runs = paragraphs(lines, a, b)
    if not runs:
        return a, a + limit - 1

    def score(run: tuple[int, int]) -> int:
        return sum(line_score(lines[i], terms) for i in range(run[0], run[1] + 1))

    best = max(range(len(runs)), key=lambda i: (score(runs[i]), -i))
    lo = hi = best
    if runs[best][1] - runs[best][0] + 1 > limit:
        return region(lines, runs[best][0], runs[best][1], terms, limit)
    while True:
        options = [i for i in (lo - 1, hi + 1) if 0 <= i < len(runs)
                   and max(runs[hi][1], runs[i][1]) - min(runs[lo][0], runs[i][0]) + 1 <= limit]
        if not options:
            break
        pick = max(options, key=lambda i: (score(runs[i]), i > hi))
        lo, hi = min(lo, pick), max(hi, pick)
    return runs[lo][0], runs[hi][1]


#: A paragraph that opens by pointing back at what is above it ("This command will do the
#: following:", "These steps...", "It then...").
_POINTS_BACK = re.compile(r"\s*(?:this|these|that|those|it|its|they|such|the above|above)\b",
                          re.I)


def with_lead(lines: list[str], lo: int, a: int, b: int, limit: int) -> tuple[int, int]:
    """A docs block cut from a longer passage (lines a..b of the passage from `lo`) with what
    its first paragraph needs above it: the paragraph (a command, a list) a first paragraph
    pointing back at it describes, and the paragraph ending in ':' that introduces a first
    fenced block or list; two paragraphs back at most, the end cut back to whole paragraphs
    to stay within `limit`. Unchanged when that would leave out the first paragraph."""
    runs = paragraphs(lines, lo, b)
    idx = next((i for i, run in enumerate(runs) if run[0] == a), None)
    if idx is None:
        return a, b
    i = idx
    while i > 0 and idx - i < 2:
        head = lines[runs[i][0]]
        introduced = ((_FENCE.match(head) or ITEM.match(head))
                      and lines[runs[i - 1][1]].rstrip().endswith(":"))
        if not (_POINTS_BACK.match(head) or introduced):
            break
        i -= 1
    if i == idx:
        return a, b
    start, end = runs[i][0], b
    if end - start + 1 > limit:
        fits = [run[1] for run in runs[i:] if run[1] - start + 1 <= limit]
        if not fits or max(fits) < runs[idx][1]:
            return a, b
        end = max(fits)
    return start, end


def heading_label(context: str, lines: list[str], top: int) -> str:
    """`(Parent › Heading)`: the last two levels of the heading path, the section shown last
    (the index's context names the headings over the chunk's first line, which may lie in
    the section before)."""
    path = [p.strip() for p in context.split(" > ") if p.strip()]
    if top >= 0:
        heading = lines[top].strip().lstrip("#").strip()
        if heading in path:
            path = path[:path.index(heading) + 1]
        elif heading:
            path = path[:-1] + [heading]
    return f"({' › '.join(path[-2:])})" if path else ""
