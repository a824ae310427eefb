"""Code shown as the lines that answer: a window of a long definition under its signature.

A definition longer than a code unit is cut into pieces, and the piece chosen for the block's
terms may hold none of the lines that answer (the head of a class, asked for a parameter
further down). `windowed` shows instead the run of the definition's whole lines that best
matches the question, under the signature lines (`class ...:`, `def ...(`) it lies in.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter

from ragdb.file_types import C_FAMILY
from ragdb.generate.spans import (
    CLOSING,
    CONTROL,
    DEF_LINE,
    HASH_COMMENT,
    HASH_LINE,
    SLASH_LINE,
    Passage,
    SourceText,
    bm25,
    depth_changes,
    line_spans,
    terms,
    trim_span,
)


def _signature(text: str, lines: list[tuple[int, int]], first: int, best: int,
               python: bool) -> list[int]:
    """The header lines (`class ...:`, `def ...(`, `fn ...{`) that line `best` lies in, from
    the block's first line on, outermost first: each earlier line indented less than the one
    before it, keeping only definitions (no `if`, `for`... of the body), the nearest three."""
    def indent(n: int) -> int:
        line = text[slice(*lines[n])]
        return len(line) - len(line.lstrip())

    found, level = [], indent(best)
    for n in range(best - 1, first - 1, -1):
        line = text[slice(*lines[n])]
        if not line.strip() or indent(n) >= level or line.lstrip()[0] in CLOSING + "{":
            continue  # `) -> None:` or a lone `{` ends a header: the line above opened it
        level = indent(n)
        header = DEF_LINE.match(line.strip()) if python else not CONTROL.match(line)
        if header:
            found.append(n)
    return sorted(found[:3])


# A line that sets a name: an assignment (`self.x = `, `x: int = `), a parameter's default, a
# constant (`pub(crate) const X: Opt = `, `static const int X = `, `#define X`), a binding
# (`let`/`const`/`var`).
_SETS = re.compile(
    r"[ \t]*(?:#[ \t]*define[ \t]+([A-Za-z_]\w*)|(?:(?:pub(?:\([^)]*\))?|export|static|const|"
    r"let|var|final|mut|constexpr|readonly)\s+)*(?:[A-Za-z_][\w:<>*&]*\s+(?=[\w*&]))*?"
    r"(?:self\.|this\.)?([A-Za-z_$][\w$]*)\s*(?::(?!=)[^=\n]*)?=(?!=))")
_NOT_SET = re.compile(r"\s*(?:if|elif|while|for|return|assert|and|or|not|case|yield)\b")


def _defined_name(line: str, query: set[str]) -> str | None:
    """The name `line` sets, where the question asks about it: a name of two words or more
    (`mixtral_supported`, `UTC_Z`) that the question names (`indices_type`) or whose words it
    holds all (`mixtral_supported` as "supported for Mixtral"); a one-word name (`mode`,
    `q_weight`) is no more the question's than any of its uses."""
    match = _SETS.match(line)
    if match is None or _NOT_SET.match(line):
        return None
    name = match.group(1) or match.group(2)
    if re.match(r"\s*" + re.escape(name) + r"\b", line[match.end():]):
        return None  # `indices_type=indices_type,`: a call passing it on sets nothing
    words = set(terms(name))
    if len(words) < 2:
        return None
    joined = max(words, key=len)
    parts = words - {joined}  # `q_weight` has one word of its own, `weight`: none to ask by
    if joined not in query and not (len(parts) >= 2 and parts <= query):
        return None
    return name


def defines_asked(line: str, query: set[str]) -> bool:
    """Whether `line` sets a name the question asks about (see _defined_name)."""
    return _defined_name(line, query) is not None


#: How long a statement setting an asked name may be to be shown beside the code using it.
SETTING_CHARS = 400
_WORD = re.compile(r"[A-Za-z_$][\w$]*")


def setting_passage(source: SourceText, uses: str, query: set[str], score: float,
                    shown: list[tuple[int, int]]) -> Passage | None:
    """The module-level statement of `source` that first sets a name the question asks about
    and the code `uses` (shown) names, outside the spans `shown` of `source` already on
    view: a module constant (`_MAX_IMAGE_SIZE = 9999999`) for the method passing it on, with the
    statements just above it that set the names it is made of (`..._MAP = {4: ...}` for
    `... = list(..._MAP.keys())`). Whole statements only, within SETTING_CHARS; None when
    there is none."""
    text = source.text
    used = set(_WORD.findall(uses))
    lines = line_spans(text)

    def line(n: int) -> str:
        return text[slice(*lines[n])]

    def indent(n: int) -> int:
        return len(line(n)) - len(line(n).lstrip())

    done: set[str] = set()
    depth_before = itertools.accumulate(depth_changes([line(n) for n in range(len(lines))],
                                                      source.kind), initial=0)
    for n, opened in zip(range(len(lines)), depth_before):
        # A module's own statement only (a constant, a table): a line inside a definition or
        # a call (a parameter's default, a local) means nothing shown apart from it.
        if indent(n) or opened:
            continue
        name = _defined_name(line(n), query)
        if name is None or name not in used or name in done:
            continue
        done.add(name)  # its first setting only: a later one is no default
        last, depth = n, depth_changes([line(n)], source.kind)[0]
        while depth > 0 and last + 1 < len(lines) and lines[last + 1][1] - lines[n][0] \
                <= SETTING_CHARS:
            last += 1
            depth += depth_changes([line(last)], source.kind)[0]
        if depth:
            continue  # a statement longer than SETTING_CHARS, or unbalanced
        first, made_of = n, set(_WORD.findall(text[lines[n][0]:lines[last][1]])) - {name}
        k = n - 1
        while k >= 0 and line(k).strip() and lines[last][1] - lines[k][0] <= SETTING_CHARS:
            if not indent(k) and not _CLOSER.match(line(k)):
                match = _SETS.match(line(k))
                if match is None or (match.group(1) or match.group(2)) not in made_of:
                    break
                changes = depth_changes([line(m) for m in range(k, n)], source.kind)
                if min(itertools.accumulate(changes)) >= 0 and sum(changes) == 0:
                    first = k
            k -= 1
        start, end = lines[first][0], lines[last][1]
        if any(s < end and start < e for s, e in shown):
            continue
        return Passage(source.number, text[start:end], start, end, score, True)
    return None


_CLOSER = re.compile(r"\s*(?:[)\]}][)\]};,]*\s*$|(?:endif|endforeach|endwhile|endfunction|"
                     r"endmacro|end|fi|done|esac|elseif)\b|else\b(?!\s*:)|}\s*else\b)")

#: How far past its budget a window may grow to close a bracket it opened (or open one it
#: closes): a statement is shown whole when it is a little longer than the budget.
_REACH = 300
_REACH_BACK = 150


# How code names an operating system in a branch's condition (`if WIN:`, `sys.platform ==
# "darwin"`, `#if defined(PSUTIL_LINUX)`); keys as answer_signals' _PLATFORM_WORDS.
_PLATFORM_CODE = {
    "windows": re.compile(r"\b_?WIN(?:32|64|DOWS)?\b|_WIN(?:32|64)\b|\bMS_WINDOWS\b|"
                          r"\bIS_WINDOWS\b|_WINDOWS\b|[\"']win32[\"']|[\"']nt[\"']|"
                          r"\bis_windows\b|\bWindows\b"),
    "macos": re.compile(r"darwin|DARWIN|__APPLE__|\bMACOS\b|_OSX\b|\bOSX\b|\bmacos\b|"
                        r"\bis_mac"),
    "linux": re.compile(r"linux|LINUX"),
    "bsd": re.compile(r"bsd|BSD"),
    "sunos": re.compile(r"sunos|SUNOS|solaris|SOLARIS"),
    "aix": re.compile(r"\baix\b|\bAIX\b"),
}
_CONDITION = re.compile(r"\s*(?:}\s*)?(?:if|elif|else\s+if)\b")
_PRE_IF = re.compile(r"\s*#\s*(?:if|ifdef|elif)\b")
_PRE_NEXT = re.compile(r"\s*#\s*(?:elif|else|endif)\b")
_PRE_OPEN = re.compile(r"\s*#\s*if")
_NEGATED = re.compile(r"\bnot\b|!(?!=)|#\s*ifndef")


def platform_branches(text: str, lines: list[tuple[int, int]]
                      ) -> list[tuple[int, int, frozenset[str]]]:
    """(condition line, last line, operating systems) of each branch whose condition names
    an operating system and negates nothing: an `if`/`elif` with the lines indented under it
    (Python, and brace code as it is laid out), a `#if`/`#ifdef`/`#elif` to its next
    `#elif`/`#else`/`#endif` of the same nesting."""
    def line(n: int) -> str:
        return text[slice(*lines[n])]

    def indent(n: int) -> int:
        return len(line(n)) - len(line(n).lstrip())

    out = []
    for n in range(len(lines)):
        condition = line(n)
        pre = bool(_PRE_IF.match(condition))
        if not pre and not _CONDITION.match(condition) or _NEGATED.search(condition):
            continue
        named = frozenset(k for k, p in _PLATFORM_CODE.items() if p.search(condition))
        if not named:
            continue
        last, depth = n, 0
        for m in range(n + 1, len(lines)):
            if pre:
                if depth == 0 and _PRE_NEXT.match(line(m)):
                    break
                depth += bool(_PRE_OPEN.match(line(m))) - bool(
                    re.match(r"\s*#\s*endif\b", line(m)))
            elif line(m).strip() and indent(m) <= indent(n):
                break
            last = m
        out.append((n, last, named))
    return out


def windowed(source: SourceText, span: tuple[int, int], block: tuple[int, int], score: float,
             query: set[str], k1: float, *, min_chars: int = 0,
             cut: bool = False, platforms: frozenset[str] = frozenset(),
             whole_chars: int = 0) -> Passage | None:
    """A piece of a long code block, shown as the run of the block's whole lines that best
    matches the question (BM25 over lines), as long as the piece (at least `min_chars`), after
    the signature lines of the definition it lies in, instead of the piece the block was cut
    into: the piece was chosen for the block's terms, which may lie lines away from its own
    start. The run closes the brackets it opens and opens those it closes where that takes
    less than _REACH more characters, so that it does not stop inside a statement. `cut`: the
    block is a chunk's code that begins inside a statement or block; the window is marked as
    having lines left out before it. `platforms`: the operating systems the question names;
    a branch for another one scores nothing, the condition of one for an asked one as the best
    line. A window inside a definition that goes on past it is grown to the definition's end
    where that takes at most _TAIL_REACH more characters and the whole is within
    `whole_chars` (the rest of a check: `kill(pid, 0)` and its errno cases after the PID 0
    case). None when no line holds a question term."""
    text = source.text
    block_start, block_end = block
    lines = [(s + block_start, e + block_start)
             for s, e in line_spans(text[block_start:block_end])]
    # A term once per line: `self.beta_fast = beta_fast` names it twice, and says no more.
    bags = [Counter(set(terms(text[s:e]))) for s, e in lines]
    # The block's first line (its signature) is shown in any case: the window is chosen for
    # the question's other terms (asked for `beta_fast` of `YaRNScaling...`, for `beta_fast`).
    # Lines are all short: no length normalisation (b = 0), so the same terms score the same
    # on any line and the earliest run of equals wins (a name's definition before its uses).
    scores = bm25(query - (set() if cut else set(bags[0])), bags, k1, 0.0)
    # A line that sets a name the question asks about (`mixtral_supported = [`, a parameter's
    # `indices_type: Optional[torch.dtype] = None,`, `const UTC_Z: Opt = 1 << 7;`) outranks
    # the lines that only use it: the value asked for is there.
    # Only the first line setting each name: its default, not every later reassignment.
    first_set: dict[str, int] = {}
    for n, (s, e) in enumerate(lines):
        # The first line is shown in any case, as the signature (`export const f = (`).
        name = _defined_name(text[s:e], query) if n or cut else None
        if name is not None:
            first_set.setdefault(name, n)
    defines = sorted(first_set.values())
    if defines and float(scores.max()) > 0:
        scores[defines] += float(scores.max())
    elsewhere: set[int] = set()  # lines of a branch for an operating system not asked
    if platforms:
        # A branch for another operating system holds no answer (`if WIN:` asked about
        # Linux); the condition of a branch for the one asked leads to the lines that answer.
        branches = platform_branches(text, lines)
        top = float(scores.max())
        for n, last, named in branches:
            if not named & platforms:
                scores[n:last + 1] = 0.0
                elsewhere.update(range(n, last + 1))
        for n, last, named in branches:
            if named & platforms and top > 0:
                scores[n] = max(float(scores[n]), top)
    partial = not text[:block_start].strip() and lines and (
        cut or depth_changes([text[slice(*lines[0])]], source.kind)[0] < 0)
    if partial:
        # A chunk that begins inside a statement may begin inside its line too
        # (`12.8 AND SCALED_MM_ARCHS)`): its first line is never shown, not even as a
        # signature line.
        lines, scores = lines[1:], scores[1:]
        elsewhere = {n - 1 for n in elsewhere if n}
    if not len(scores) or float(scores.max()) <= 0:
        return None
    budget = max(span[1] - span[0], min_chars)
    # The run of whole lines within the budget holding the most question-term score, the
    # earliest of equals; then grown to the budget, the line after first (what a line leads
    # to comes after it).
    best_sum, low, high = -1.0, 0, 0
    for first in range(len(lines)):
        last = first
        while last + 1 < len(lines) and lines[last + 1][1] - lines[first][0] <= budget:
            last += 1
        total = float(scores[first:last + 1].sum())
        if total > best_sum + 1e-9:
            best_sum, low, high = total, first, last
    while scores[low] <= 0 and low < high:
        low += 1
    while scores[high] <= 0 and high > low:
        high -= 1
    best = low
    grown = True
    while grown:
        grown = False
        for step in (1, -1):
            n = high + 1 if step > 0 else low - 1
            if 0 <= n < len(lines) and n not in elsewhere \
                    and lines[max(n, high)][1] - lines[min(n, low)][0] <= budget:
                low, high = min(low, n), max(high, n)
                grown = True
    # The window does not begin inside a block it then leaves (the tail of an `else()`
    # before `endif()`), nor with lines that only close what came before it (`endif()`, `}`).

    def indent(n: int) -> int:
        line = text[slice(*lines[n])]
        return len(line) - len(line.lstrip()) if line.strip() else 10 ** 6

    start = low
    for k in range(start + 1, high):
        if _CLOSER.match(text[slice(*lines[k])]) and indent(k) <= indent(start) \
                and scores[k + 1:high + 1].sum() >= scores[low:k + 1].sum():
            low = k + 1  # a block the window began inside ends here; the answer is below
    scored = [n for n in range(low, high + 1) if scores[n] > 0]
    while scored and low < scored[-1] and (not text[slice(*lines[low])].strip()
                                           or _CLOSER.match(text[slice(*lines[low])])):
        low += 1
    best = max(best, low)
    # Never cut back past the last line that holds a question term.
    keep = max(n for n in range(low, high + 1) if scores[n] > 0) if scores[low:high + 1].max() > 0 \
        else best
    # The line that sets an asked name the window uses, a few lines above it, is taken too
    # (`mixtral_supported = [...]` above `... not in mixtral_supported`).
    shown_terms = {t for n in range(low, high + 1) for t in bags[n]}
    above = [n for n in defines if n < low and lines[high][1] - lines[n][0] <= budget + _REACH
             and _defined_name(text[slice(*lines[n])], shown_terms)]
    if above and not (partial and above[0] == 0):
        low = best = above[0]
    low, high = _whole_statements(text, lines, low, high, keep, source.kind, budget + _REACH)
    python = source.kind in ("python", "module", "function", "class", "statements") \
        or source.file_path.endswith((".py", ".pyi"))
    low, high = _whole_blocks(text, lines, low, high, python, source.kind in C_FAMILY,
                              budget + _REACH, first=1 if partial else 0)
    high = _to_the_end(text, lines, low, high, whole_chars, elsewhere)
    start, end = trim_span(text, lines[low][0], lines[high][1])
    start, end = _without_bare_comment_lines(text, start, end)
    if start >= end or not _WORD.search(text, start, end):
        return None  # nothing left but punctuation (a lone `#` of a comment block)
    first_line = text.rfind("\n", 0, start) + 1
    low = next(n for n, (s, e) in enumerate(lines) if s <= start <= e)
    heads = [n for n in _signature(text, lines, 0, best, python) if n < low]
    context = tuple((lines[n][0], text[slice(*lines[n])]) for n in heads)
    lead = text[first_line:start]
    # A window that closes a bracket it does not open (`],` then `)` of a call begun above),
    # or leaves the block it begins in (an `else()` branch's tail, then `endif()`), has lines
    # left out before it, marked as such.
    shown = (text[first_line:start] + text[start:end]).split("\n")
    closes = min(itertools.accumulate(depth_changes(shown, source.kind)), default=0) < 0 \
        or any(len(x) - len(x.lstrip()) < len(shown[0]) - len(shown[0].lstrip())
               for x in shown[1:] if x.strip())
    # A window inside a definition that goes on past it (lines deeper than the window's
    # outermost one, or a bracket it leaves open) is followed by a `...` line.
    end_line = next(n for n, (s, e) in enumerate(lines) if s <= end <= e)
    rest = next((text[slice(*lines[n])] for n in range(end_line + 1, len(lines))
                 if text[slice(*lines[n])].strip()), None)
    outermost = min(len(x) - len(x.lstrip()) for x in shown if x.strip())
    after = -1
    if rest is not None and (len(rest) - len(rest.lstrip()) > outermost
                             or sum(depth_changes(shown, source.kind)) > 0):
        after = max(outermost, len(rest) - len(rest.lstrip()))
    return Passage(source.number, text[start:end], start, end, score, True,
                   "" if lead.strip() else lead, context, elided=cut or closes,
                   elided_after=after)


_BARE_COMMENT = re.compile(r"[ \t]*(?:#|//+|--)[ \t]*")


def _without_bare_comment_lines(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without the comment markers standing alone on its first and last lines (the
    `#` that spaces a Ruby doc comment says nothing at a window's edge)."""
    while start < end:
        eol = text.find("\n", start, end)
        if eol < 0 or not _BARE_COMMENT.fullmatch(text, start, eol):
            break
        start, end = trim_span(text, eol + 1, end)
    while start < end:
        bol = text.rfind("\n", start, end)
        if bol < 0 or not _BARE_COMMENT.fullmatch(text, bol + 1, end):
            break
        start, end = trim_span(text, start, bol)
    return start, end


#: How much further a window may grow to take the rest of the definition it lies in.
_TAIL_REACH = 450


def _to_the_end(text: str, lines: list[tuple[int, int]], low: int, high: int,
                whole_chars: int, elsewhere: set[int]) -> int:
    """The last line of the run low..high grown to the end of what it lies in (the lines after
    it indented deeper than its outermost line, and a closing line at that indentation), where
    that is at most _TAIL_REACH more characters and the whole run at most `whole_chars`; else
    `high`. A check's last cases (`if (errno == ESRCH)`, `return -1;`) come after the ones a
    budget-long window shows. It stops before a line of `elsewhere` (a branch for an
    operating system not asked)."""
    def line(n: int) -> str:
        return text[slice(*lines[n])]

    def indent(n: int) -> int:
        return len(line(n)) - len(line(n).lstrip())

    shown = [n for n in range(low, high + 1) if line(n).strip()]
    if not shown or whole_chars <= 0:
        return high
    outermost = min(indent(n) for n in shown)
    # A window showing a definition's head at its outermost level ends with that definition;
    # one of statements of a body goes on to the body's end.
    headed = any(indent(n) == outermost and (
        DEF_LINE.match(line(n).strip()) or line(n).rstrip().endswith("{")
        and not CONTROL.match(line(n))) for n in shown)
    end, n = high, high + 1
    while n < len(lines) and n not in elsewhere:
        if line(n).strip():
            closer = bool(_CLOSER.match(line(n)))
            if indent(n) < outermost or indent(n) == outermost and (closer or headed):
                if closer:
                    end = n  # the closing line of what the window lies in
                break
            end = n
        n += 1
    if end == high or lines[end][1] - lines[high][1] > _TAIL_REACH \
            or lines[end][1] - lines[low][0] > whole_chars:
        return high
    return end


def _whole_statements(text: str, lines: list[tuple[int, int]], low: int, high: int,
                      keep: int, language: str, reach: int) -> tuple[int, int]:
    """The run low..high grown to close the brackets it leaves open (`getattr(config,` then
    its arguments) and to open those it closes, within `reach` characters; where that is out
    of reach, cut back to the last line at which nothing is left open, keeping line `keep`."""
    delta = depth_changes([text[s:e] for s, e in lines], language)

    def depths(lo: int, hi: int) -> tuple[int, int]:
        """(lowest, last) running depth over lines lo..hi, from 0."""
        depth = lowest = 0
        for n in range(lo, hi + 1):
            depth += delta[n]
            lowest = min(lowest, depth)
        return lowest, depth

    def open_at_end(lo: int, hi: int) -> int:  # opened after the lowest point, not closed
        lowest, last = depths(lo, hi)
        return last - lowest

    def closes_unopened(lo: int, hi: int) -> bool:
        return depths(lo, hi)[0] < 0

    while open_at_end(low, high) > 0 and high + 1 < len(lines) \
            and lines[high + 1][1] - lines[low][0] <= reach:
        high += 1
    if open_at_end(low, high) > 0:
        for hi in range(high - 1, keep - 1, -1):
            if open_at_end(low, hi) <= 0:
                high = hi
                break
    # A bracket closed here opened a few lines up (a call's first line): shown when close by;
    # farther up, the signature lines or the `...` above the window stand for it.
    back = lines[low][0] - _REACH_BACK
    while closes_unopened(low, high) and low > 0 and lines[low - 1][0] >= back:
        low -= 1
    return low, high


#: How much further than a statement a window may grow to show the body of a block it ends
#: on: an `if`/`elif`/`else` chain is read whole.
_BLOCK_REACH = 450
_CONTINUES = re.compile(r"\s*(?:elif|else|except|finally|case)\b")


def _whole_blocks(text: str, lines: list[tuple[int, int]], low: int, high: int,
                  python: bool, c_family: bool, reach: int, first: int = 0
                  ) -> tuple[int, int]:
    """The run low..high not ending on a comment that says what comes next, nor on a Python
    block's opening line (`if mode == "average":`) without its body: grown to take the
    statement the comment is about (within `reach` characters) and the whole block, with its
    `elif`/`else` branches (within _BLOCK_REACH more), else cut back before them (the block's
    header too, even where it holds a question term: a header without its body says nothing).
    Nor does it begin inside a comment that starts above it (`#  kernels calls made within`):
    the comment's first lines are taken too, where close by (from line `first` on: the lines
    before it may not be shown)."""
    marker = SLASH_LINE if c_family else HASH_LINE

    def line(n: int) -> str:
        return text[slice(*lines[n])]

    def quiet(n: int) -> bool:  # a comment line or a blank one
        return not line(n).strip() or bool(marker.match(line(n)))

    def indent(n: int) -> int:
        return len(line(n)) - len(line(n).lstrip())

    def opens(n: int) -> bool:  # a one-line block header (`) -> None:` ends a longer one)
        code = HASH_COMMENT.sub("", line(n)).strip()
        return python and not quiet(n) and code.endswith(":") and code[0] not in CLOSING \
            and not depth_changes([code], "python")[0]

    def within(n: int, more: int = 0) -> bool:
        return lines[n][1] - lines[low][0] <= reach + more

    def code_before(n: int) -> int:  # the last code line at or before n, not before low
        while n > low and quiet(n):
            n -= 1
        return n

    def goes_on(n: int) -> bool:  # a comment line whose words continue the line above
        match = marker.match(line(n))
        return bool(line(n).strip() and match and line(n)[match.end():].lstrip()[:1].islower())

    if python or c_family:
        low, high = _outside_docstrings(text, lines, low, high, reach + _BLOCK_REACH,
                                        c_family=not python)
    back = lines[low][0] - 2 * _REACH_BACK  # a comment of a few lines is taken whole
    while low > first and goes_on(low) and line(low - 1).strip() and quiet(low - 1) \
            and lines[low - 1][0] >= back:
        low -= 1
    last = code_before(high)
    if any(line(n).strip() for n in range(last + 1, high + 1)):
        # It ends on a comment, which is about the statement after it.
        n = high + 1
        while n < len(lines) and quiet(n):
            n += 1
        if n >= len(lines) or not within(n) or depth_changes([line(n)], "python")[0]:
            return low, last  # a comment's words alone are no reason to end on it
        last = n
    if not opens(last):
        return low, last
    # A block opened at line `last`: its body and the branches that go on from it.
    n = last + 1
    while n < len(lines) and within(n, _BLOCK_REACH):
        if line(n).strip() and indent(n) <= indent(last) and not (
                indent(n) == indent(last) and _CONTINUES.match(line(n))):
            break
        n += 1
    if n >= len(lines) or line(n).strip() and indent(n) <= indent(last):
        n -= 1
        while n > last and not line(n).strip():
            n -= 1
        return low, n
    # Out of reach: cut before the block's header (and the comment above it), even where the
    # header holds a question term: a header without its body answers nothing.
    cut = code_before(last - 1)
    return (low, cut) if low <= cut < last and not quiet(cut) else (low, high)


_TRIPLE = re.compile(r'"""|\'\'\'')
_BLOCK_COMMENT = re.compile(r"/\*|\*/")


def _outside_docstrings(text: str, lines: list[tuple[int, int]], low: int, high: int,
                        reach: int, c_family: bool = False) -> tuple[int, int]:
    """The run low..high neither beginning nor ending inside a triple-quoted string or, with
    `c_family`, a `/* ... */` comment (a
    docstring's last lines, its closing quotes alone, above the code; its first lines cut
    mid-sentence below it): begun at the string's opening line, else past its end; ended at
    its close, else before its opening line; within `reach` characters. The block's first
    line is taken as outside any string."""
    inside: list[bool] = []  # inside a string where line n begins
    quote = ""
    for s, e in lines:
        inside.append(bool(quote))
        for match in (_BLOCK_COMMENT if c_family else _TRIPLE).finditer(text, s, e):
            if not quote:
                quote = match.group() if match.group() != "*/" else ""
            elif match.group() in (quote, "*/"):
                quote = ""
    inside.append(bool(quote))
    if inside[low]:
        opening = low
        while opening > 0 and inside[opening]:
            opening -= 1
        n = low
        while n < high and inside[n + 1]:
            n += 1
        if lines[high][1] - lines[opening][0] <= reach:
            low = opening  # the whole string, from its opening line
        elif n + 1 <= high:  # else past the line that closes it, where any code is left
            low = n + 1
            while low < high and not text[slice(*lines[low])].strip():
                low += 1
    if inside[high + 1] and low < high:
        n = high + 1
        while n < len(lines) and inside[n + 1] and lines[n][1] - lines[low][0] <= reach:
            n += 1
        if n < len(lines) and not inside[n + 1] and lines[n][1] - lines[low][0] <= reach:
            return low, n
        n = high
        while n > low and inside[n]:
            n -= 1  # n opens the string
        if n > low:
            high = n - 1
            while high > low and not text[slice(*lines[high])].strip():
                high -= 1
    return low, high
