"""Cleaning a generated answer: think blocks, special tokens, repetition loops and citations
that name no given source; and the part of a stream that is safe to show so far.

Each rule was turned off alone over models' raw output saved before cleaning; those that
changed no answer, no stream view and no test fixture of a model's output left the code: other
citation forms than [n] ("[1, 2]", "(Source 2)": the check drops a sentence citing so), an
"Answer:" lead, blank runs folded, a repeat cut at its line (benchmarks/README.md, "Every rule
of cleaning measured"). Think blocks stay for the hub's Qwen3, which no run here reached."""

from __future__ import annotations

import re
from collections.abc import Callable

from ragdb.generate.claim_binding import CITE

_SPECIAL_TOKEN = re.compile(r"<\|[A-Za-z0-9_]{1,40}\|>|</s>")
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
_CODE_SPAN = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_SENTENCE_END = re.compile(r"[.!?]+(?=\s)|\n")
_WORD = re.compile(r"\w+")


def normalise_citations(text: str, n_sources: int) -> tuple[str, list[int]]:
    """Drop the citations [n] naming no given source; code is left untouched."""
    def given(match: re.Match[str]) -> str:
        return match.group(0) if 1 <= int(match.group(1)) <= n_sources else ""

    result = _outside_code(text, lambda prose: CITE.sub(given, prose))
    prose = _CODE_SPAN.sub(" ", result)
    numbers = {int(n) for n in re.findall(r"\[(\d{1,3})\]", prose)}
    cited = sorted(n for n in numbers if 1 <= n <= n_sources)
    return result, cited


def strip_think(text: str, *, final: bool = True) -> str:
    """Remove <think> blocks, an unclosed one included; while streaming also hide a partial tag."""
    if "</think>" in text and "<think>" not in text.split("</think>", 1)[0]:
        text = text.split("</think>", 1)[1]  # the template opened the block for us
    text = _THINK_BLOCK.sub("", text)
    if "<think>" in text:
        text = text.split("<think>", 1)[0]
    if not final:
        for size in range(min(len("</think>"), len(text)), 0, -1):
            tail = text[-size:]
            if "<think>".startswith(tail) or "</think>".startswith(tail):
                return text[:-size]
    return text


_NEW_TURN = re.compile(
    r"<\|im_start\|>|<\|im_end\|>|<\|endoftext\|>|<\|eot_id\|>|\n[ \t]*Question[ \t]*:"
)
# Small models go on to write the next "Question:" themselves; generation stops there. (Not
# "Sources:": a model may end its answer with a list of the sources it used.)
STOP_STRINGS = {"\nQuestion:"}


def _strip_special_tokens(text: str) -> str:
    """Cut where the model starts a new turn or question; drop stray end-of-turn markers."""
    turn = _NEW_TURN.search(text)
    if turn:
        text = text[:turn.start()]
    return _SPECIAL_TOKEN.sub("", text)


def _unit_key(unit: str) -> str:
    unit = re.sub(r"\[[^\]\n]{0,20}\]", " ", unit.lower())
    return " ".join(_WORD.findall(unit))


def repetition_cut(text: str, *, final: bool = True) -> tuple[int, int]:
    """Where a repetition loop starts (len(text) if none), and, while streaming, where the
    unfinished tail starts repeating an earlier sentence (so it is held back, not shown).

    Small models loop on a sentence, a line (even "```") or a short phrase; the first
    occurrence is kept and everything from the second one on is cut.
    """
    units: list[tuple[int, int, bool]] = []
    position = 0
    for match in _SENTENCE_END.finditer(text):
        units.append((position, match.end(), True))
        position = match.end()
    if position < len(text):
        units.append((position, len(text), final))
    fences = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    seen: dict[str, int] = {}
    counts: dict[str, int] = {}
    hold = cut = len(text)
    previous, run, run_second = "", 0, 0
    for start, end, complete in units:
        unit = text[start:end].strip()
        if not unit:
            continue
        # Code may rightly repeat a line (two examples, same import): only runs count there.
        key = "" if any(a <= start < b for a, b in fences) else _unit_key(unit)
        if not complete:
            if key and any(k.startswith(key) for k in seen):
                hold = start
            continue
        # The same line over and over, however short ("```", "- **Tools**:" is not).
        if unit == previous:
            run += 1
            run_second = run_second if run > 2 else start
            if run >= 3:
                cut = run_second
                break
        else:
            previous, run = unit, 1
        # A short line said a third time ("- **Tools**:" in a list that never ends).
        counts[unit] = counts.get(unit, 0) + 1
        if key and counts[unit] >= 3 and not unit.startswith("```"):
            cut = start
            break
        if len(key.split()) >= 3:
            if key in seen:
                cut = start
                break
            seen[key] = start
    cut = min(cut, _ngram_cut(text, units, final))
    if cut < len(text):  # do not leave the marker of the list item that started the loop
        marker = re.search(r"(?:^|\n)[ \t]*(?:\d{1,3}[.)]|[-*+])[ \t]*$", text[:cut])
        if marker:
            cut = marker.start()
    return cut, min(hold, cut)


def _ngram_cut(text: str, units: list[tuple[int, int, bool]], final: bool) -> int:
    """Where a word-level loop starts: a phrase repeated at once, or ten words said twice."""
    def blank(match: re.Match[str]) -> str:
        return " " * len(match.group())

    masked = re.sub(r"\[[^\]\n]{0,20}\]", blank, text.lower())
    words = [(m.group(), m.start()) for m in _WORD.finditer(masked)]
    if not final and words and words[-1][1] + len(words[-1][0]) == len(text):
        words = words[:-1]  # may still be growing
    tokens = [w for w, _ in words]
    # Code may rightly repeat itself (a list of zeros, two similar calls): only prose counts.
    fences = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    prose = [i for i, (_, at) in enumerate(words) if not any(a <= at < b for a, b in fences)]

    def snap(first_copy: int, repeat: int) -> int:
        """Cut at the start of the sentence holding the repeat when that keeps the first copy."""
        at, first_at = words[repeat][1], words[first_copy][1]
        start = next((s for s, e, _ in units if s <= at < e), at)
        return start if start > first_at else at

    best = len(text)
    # The same few characters over and over inside one "word": 100x100x100x100...
    for match in re.finditer(r"(\w\S{1,19}?)\1{3,}", text):
        if any(c.isalpha() for c in match.group(1)) or len(match.group(0)) > 24:
            word_start = max(text.rfind(" ", 0, match.start()), text.rfind("\n", 0, match.start()))
            best = min(best, word_start + 1)
            break
    # A phrase said again at once: "the the the the", "run it, run it, run it".
    in_prose = set(prose)
    for size in range(1, 13):
        copies = 4 if size == 1 else 3 if size <= 5 else 2
        for i in range(0, len(tokens) - size * copies + 1):
            block = tokens[i:i + size]
            if i in in_prose and all(
                tokens[i + k * size:i + (k + 1) * size] == block for k in range(1, copies)
            ):
                best = min(best, snap(i, i + size))
                break
    # Ten words said twice, outside code: two examples may share a long command line.
    size = 10
    first: dict[tuple[str, ...], int] = {}
    for k in range(0, len(prose) - size + 1):
        gram = tuple(tokens[i] for i in prose[k:k + size])
        if gram in first:
            best = min(best, snap(first[gram], prose[k]))
            break
        first.setdefault(gram, prose[k])
    return best


def _trim_unfinished_sentence(text: str) -> str:
    """When max_new_tokens cut the answer off, end it at the last finished sentence."""
    stripped = text.rstrip()
    if not stripped or stripped[-1] in ".!?)]`\"'":
        return stripped
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)|\n\n", stripped)]
    if ends and ends[-1] >= len(stripped) * 0.3:
        return stripped[:ends[-1]].rstrip()
    return stripped


def clean_answer(raw: str, n_sources: int, *, truncated: bool = False) -> tuple[str, list[int]]:
    """The answer as shown: no think block, no loop, citations as [n] naming given sources.

    Returns the text and the sorted numbers of the sources it cites. No citation is ever
    added: an answer that cites nothing comes back with an empty list.
    """
    text = _strip_special_tokens(strip_think(raw)).strip()
    cut, _ = repetition_cut(text)
    # A loop cut inside a sentence leaves half a sentence; one cut between sentences or lines
    # leaves what the stream already showed, so it stays as it is.
    mid_sentence = (
        cut < len(text)
        and text[cut] != "\n"
        and not re.search(r"(?:[.!?:]\s+|\n\s*)$", text[:cut])
    )
    text = text[:cut]
    if truncated or mid_sentence:
        text = _trim_unfinished_sentence(text)
    text = _tidy_tail(text)
    text, cited = normalise_citations(text, n_sources)
    return text.strip(), cited


def _tidy_tail(text: str) -> str:
    """Drop debris small models leave: runs of commas, a dangling `[3`, an empty open fence."""
    text = re.sub(r"(?:[ \t]*,){2,}", ",", text)
    text = re.sub(r"\[\d*\s*$", "", text)  # an unclosed citation at the very end
    if text.count("```") % 2 == 1:  # the last fence opens a block that never came
        text = re.sub(r"```[\w-]*\s*$", "", text)
    return re.sub(r"[\s,]+$", "", text) if re.search(r",\s*$", text) else text


def renumber_citations(text: str, mapping: dict[int, int]) -> str:
    """Rewrite [n] as [mapping[n]] outside code, e.g. prompt numbers back to retrieval ranks."""
    def swap(match: re.Match[str]) -> str:
        number = int(match.group(1))
        return f"[{mapping.get(number, number)}]"

    return _outside_code(text, lambda prose: re.sub(r"\[(\d{1,3})\]", swap, prose))


def _outside_code(text: str, rewrite: Callable[[str], str]) -> str:
    """`text` with `rewrite` applied to the prose between its code spans and blocks."""
    pieces: list[str] = []
    position = 0
    for code in _CODE_SPAN.finditer(text):
        pieces += [rewrite(text[position:code.start()]), code.group(0)]
        position = code.end()
    return "".join(pieces + [rewrite(text[position:])])


def stream_view(raw: str, n_sources: int) -> tuple[str, bool]:
    """The part of the answer so far that is safe to show, and whether a loop has started."""
    text = _strip_special_tokens(strip_think(raw, final=False)).lstrip()
    cut, hold = repetition_cut(text, final=False)
    looping = cut < len(text)
    text = text[:hold]
    # Hold back what may still become a citation: a recently opened bracket, a trailing
    # "source", a line that may become "Question:", and the blanks a dropped citation takes.
    opening = max(text.rfind("["), text.rfind("("))
    if opening >= len(text) - 24 and "]" not in text[opening:] and ")" not in text[opening:]:
        text = text[:opening]
    text = re.sub(r"(?i)\bsources?[ \t]*#?[ \t]*[\d, ]*$", "", text)
    last_line = text[text.rfind("\n") + 1:].strip()
    if last_line and any(stop.strip().startswith(last_line) for stop in STOP_STRINGS):
        text = text[:text.rfind("\n") + 1]
    text = text.rstrip()
    return normalise_citations(text, n_sources)[0], looping
