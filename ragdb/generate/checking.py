"""Checking a written answer against the blocks it cites, sentence by sentence.

A language model's answer is only shown where what it says is what the block it cites says:
every sentence must cite a given block as [n]; code blocks are never the model's (the answer
shows the blocks beneath its sentences: generate/styles.py), and code written inline must be in
a cited block verbatim. A sentence must say more than the question (its content words, less
stopwords, the question's words and words that only frame a claim such as "default", are not
all the question's), a "not" or "never" must be said where the block has the sentence's words
(generate/support.py), and the sentence must be worded as its block words it, in its order
(generate/wording.py): blind readers found misreadings made of the block's own words in 12 of
31 written answers that word-level rules passed. A sentence that fails against the block it
cites but holds against another given block is re-cited to that one; otherwise it is dropped,
with the reason recorded. A sentence giving a default must also find the value bound to that
name in the block (generate/claim_binding.py).

The word-level rules the order rule made redundant (names, flags and numbers in the block or
the question, asked names, every content word in one stretch, ...) left the code: without them
no kept sentence of any saved draft or written answer changed (benchmarks/README.md,
"`ragdb/generate/` size").
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from ragdb.generate.claim_binding import CITE, INLINE, CitedSource, default_unbound
from ragdb.generate.support import support
from ragdb.generate.wording import in_order

_FENCED = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(?P<body>.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
_SENTENCE_END = re.compile(
    r"[.!?]+[\"')\]*_]*(?:[ \t]*\[\d{1,3}\])*[.!?]?(?=\s|$)"
    r"|(?:[ \t]*\[\d{1,3}\])+[.!?]*(?=[ \t]*$)",
    re.M,
)
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+")


#: The reason a code block the model wrote is dropped.
WRITTEN_CODE = "code: the answer shows the sources' own blocks, never the model's"
#: What every sentence was checked for, as the answer's JSON says.
CHECKED = ["citations", "no code blocks", "inline code verbatim", "a default bound to its name",
           "says more than the question", "a not said where its words are",
           "worded as the cited source words it, in its order"]


@dataclass
class Unit:
    """One sentence (or list item) of prose, or one fenced code block, with its citations."""

    kind: str  # "prose" or "code"
    text: str  # as written, citations included
    cites: list[int]


@dataclass
class CheckReport:
    """What the check did: the JSON answers carry it as `check`."""

    sentences: int = 0
    kept: int = 0
    dropped: list[dict[str, str]] = field(default_factory=list)
    recited: list[dict[str, Any]] = field(default_factory=list)
    evidence_from: list[int] = field(default_factory=list)  # sources whose blocks follow
    removed_citations: list[int] = field(default_factory=list)
    fallback: str | None = None  # "extractive" when too little survived: the blocks alone
    # Why the answer is the blocks alone, in words (the one line `ragdb answer` prints).
    fallback_reason: str | None = None
    writer: str | None = None  # the model whose answer was checked
    stopped_at_time_limit: bool = False  # the writer was stopped before it finished

    def as_json(self) -> dict[str, Any]:
        return {"checked": CHECKED, **asdict(self)}


@dataclass
class CheckedAnswer:
    text: str
    cited: list[int]
    report: CheckReport

    @property
    def too_little(self) -> bool:
        """No sentence survived: the answer is the blocks alone."""
        return self.report.kept == 0

    @property
    def why_not_shown(self) -> str:
        """Why the written sentences give way to the blocks alone, in a few words."""
        return f"none of its {self.report.sentences} sentences passed the check"


# --------------------------------------------------------------------------------------------
# Splitting an answer into units


def _prose_units(prose: str) -> list[tuple[str, list[int]]]:
    pieces: list[tuple[str, list[int]]] = []
    # Inline code hidden (same length), so its dots and brackets end no sentence.
    masked = INLINE.sub(lambda m: "`" + "x" * (len(m.group()) - 2) + "`", prose)
    for line_match in re.finditer(r"[^\n]+", prose):
        start, end = line_match.span()
        position = start
        for ending in _SENTENCE_END.finditer(masked, start, end):
            pieces.append(_piece(prose[position:ending.end()], masked[position:ending.end()]))
            position = ending.end()
        if prose[position:end].strip():
            pieces.append(_piece(prose[position:end], masked[position:end]))
    return [(text, cites) for text, cites in pieces if text.strip()]


def _piece(text: str, masked: str) -> tuple[str, list[int]]:
    return text.strip(), [int(n) for n in CITE.findall(masked)]


def split_units(answer: str) -> list[Unit]:
    """Fenced code blocks, and the sentences and list items of the prose around them (a
    citation after a code block stands alone: it claims nothing, and the code is dropped)."""
    units: list[Unit] = []
    position = 0
    for block in _FENCED.finditer(answer):
        units.extend(Unit("prose", t, c) for t, c in _prose_units(answer[position:block.start()]))
        units.append(Unit("code", block.group(0).strip("\n"), []))
        position = block.end()
    units.extend(Unit("prose", t, c) for t, c in _prose_units(answer[position:]))
    return units


# --------------------------------------------------------------------------------------------
# Matching against a source


def _verbatim(code: str, sources: list[CitedSource]) -> bool:
    """Inline code is in a cited block as written, runs of blanks aside."""
    wanted = " ".join(code.split())
    return bool(wanted) and any(wanted in " ".join(s.text.split()) for s in sources)


# --------------------------------------------------------------------------------------------
# The check


def check_answer(answer: str, sources: list[CitedSource], *, question: str = "",
                 writer: str | None = None) -> CheckedAnswer:
    """Keep the units of `answer` that its cited blocks support; report the rest.

    `sources` are the blocks the model was given, numbered as the answer cites them;
    `question` is what was asked (a sentence must say more than it).
    """
    by_number = {s.number: s for s in sources}
    report = CheckReport(writer=writer)
    kept: list[str] = []
    for unit in split_units(answer):
        report.sentences += 1
        invalid = [n for n in unit.cites if n not in by_number]
        report.removed_citations += [n for n in dict.fromkeys(invalid)
                                     if n not in report.removed_citations]
        valid = list(dict.fromkeys(n for n in unit.cites if n in by_number))
        if unit.kind == "code":  # code never comes from the model (a product guarantee)
            _drop(report, unit.text, WRITTEN_CODE)
            text = None
        else:
            text = _check_sentence(unit, valid, invalid, by_number, report, question)
        if text is not None:
            kept.append(text)
            report.kept += 1
    text = _join(kept)
    cited = sorted({int(n) for n in re.findall(r"\[(\d{1,3})\]", INLINE.sub(" ", text))
                    if int(n) in by_number})
    return CheckedAnswer(text, cited, report)


def _drop(report: CheckReport, text: str, reason: str) -> None:
    report.dropped.append({"text": text, "reason": reason})


# A Markdown link whose target is no URL or path: "[1]([1])", "[The backend](currently)",
# "[https://x/SECURITY.md]([2])", from a model that put citations or words in link form
# (off: the kept sentences of 2 of the 525 saved texts change, one keeps `[completions-api]()`).
_BROKEN_LINK = re.compile(r"\[([^\[\]\n]*)\]\((?!https?://|\.{0,2}/|[\w.-]+/|#)([^()\n]*)\)")


def _link_text(match: re.Match[str]) -> str:
    text = match.group(1)
    return "" if re.fullmatch(r"\s*\d{1,3}\s*", text) else text


def _check_sentence(unit: Unit, valid: list[int], invalid: list[int],
                    by_number: dict[int, CitedSource], report: CheckReport,
                    question: str = "") -> str | None:
    text = _BROKEN_LINK.sub(_link_text, unit.text).strip()
    for n in invalid:  # a citation of a source that was not given is never shown (guarantee)
        text = re.sub(rf"[ \t]*\[{n}\]", "", text)
    if not valid:  # a sentence cites a block that is shown (a product guarantee)
        reason = (f"cites {', '.join(f'[{n}]' for n in invalid)}, not a given source"
                  if invalid else "cites no source")
        _drop(report, text, reason)
        return None
    why = _claim(text, [by_number[n] for n in valid], question)
    if why is not None:
        # The writer may cite the wrong one of the blocks it saw: where another one alone
        # supports the whole sentence, it is cited instead (the check is the same; off: the
        # kept sentences of 1 of the 525 saved texts change).
        for number, source in by_number.items():
            if number in valid:
                continue
            moved = _recite(text, valid, number)
            if _claim(moved, [source], question) is None:
                report.recited.append({"text": text, "from": valid, "to": number})
                text, why = moved, None
                break
    if why is not None:
        _drop(report, text, why)
        return None
    return text


def _recite(text: str, old: list[int], new: int) -> str:
    """The sentence citing [new] where it cited the numbers in `old` (once, at its end)."""
    stripped = re.sub(r"[ \t]*\[(\d{1,3})\]", lambda m: "" if int(m.group(1)) in old
                      else m.group(0), text).rstrip()
    if re.search(r"[.!?:]$", stripped):
        return stripped[:-1] + f" [{new}]" + stripped[-1]
    return stripped + f" [{new}]"


def _claim(text: str, cited: list[CitedSource], question: str) -> str | None:
    """Why the sentence is not what `cited` says; None when it is."""
    where = ", ".join(f"[{s.number}]" for s in cited)
    for match in INLINE.finditer(text):  # a guarantee: code is never the model's (off: 1 text)
        if not _verbatim(match.group(1).strip(), cited):
            return f"`{match.group(1).strip()}` is not in {where}"
    unbound = default_unbound(text, cited, question)  # (off: 1 text's kept sentences change)
    if unbound is not None:
        return unbound
    sentence = _LIST_MARKER.sub("", text)
    said = support(sentence, question, [(s.text, s.file_path) for s in cited])
    if not said.novel:  # (off: 63 texts' kept sentences change)
        return "says nothing the question did not"
    if said.negated:  # a guarantee: a "not" the block does not say where its words are
        return f"{where} does not say that it is not so"
    if not any(in_order(sentence, s.text) for s in cited):  # (off: 361 texts change)
        return f"its words are not in the order {where} gives them (generate/wording.py)"
    return None


def _join(units: list[str]) -> str:
    """Sentences of one paragraph on one line; list items on their own."""
    out = ""
    for unit in units:
        if not out:
            out = unit
        elif _LIST_MARKER.match(unit):
            out += ("\n\n" if out.rstrip().endswith("]") else "\n") + unit
        else:
            out += " " + unit
    return out.strip()
