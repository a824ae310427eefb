"""Checking a written answer against the sources it cites, sentence by sentence.

A language model's answer is only shown where what it says can be found in the source it cites:
every sentence must cite a given source as [n]; code blocks are never the model's (the answer
shows the sources' own blocks beneath its sentences: generate/styles.py), and a command written
inline must appear verbatim in a cited source (the step that replaced an inexact one by the
source's own line, when clearly the one meant, wrote broken sentences: issue 39); identifiers,
flags, paths and numbers written in prose must appear in a cited source, unless the question
itself names them. Then the sentence's own words: what it says beyond the question (its content
words, less stopwords, the question's words and words that only frame a claim, such as
"default" or "allows") must be found in the cited source, all but a few, and together, in one
stretch of it, not scattered over it. A sentence that says nothing beyond the question ("The
default value of x is [1].", "Yes, it can read files [1].") is dropped. For the writers'
answers (`in_block_order`, generate/styles.py) a sentence must also be worded as its block
words it, in its order (generate/wording.py): blind readers found misreadings made of the
block's own words in 12 of 31 written answers that the rules above passed. A sentence that
fails is dropped, with the reason recorded.

Each rule was turned off alone on every saved draft and written answer; "off:" at a rule says
what that changed (benchmarks/README.md, "Every rule of the claim check measured"). Those that
changed nothing measured left the code, unless they hold a product guarantee (marked so).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from ragdb.generate.claim_binding import (CITE, INLINE, CitedSource, appears, asked,
                                          asked_names, default_unbound)
from ragdb.generate.support import support
from ragdb.generate.wording import in_order

_FENCED = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(?P<body>.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
_SENTENCE_END = re.compile(
    r"[.!?]+[\"')\]*_]*(?:[ \t]*\[\d{1,3}\])*[.!?]?(?=\s|$)"
    r"|(?:[ \t]*\[\d{1,3}\])+[.!?]*(?=[ \t]*$)",
    re.M,
)
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+")
# What a sentence may not invent: checked against the cited source's text (a guarantee: code
# and the prompt's example names such as ACME_LOG never come from the model; off: reasons only).
_CHECKABLE = re.compile(
    r"(?<![\w/.-])(?:\.{1,2}/|/|~/)?[\w.-]+(?:/[\w.*-]+)+/?"  # a path: a/b, /v1/models
    r"|(?<![\w-])--?[A-Za-z][\w-]*(?:=\S+)?"  # a flag: --enable-lora, -tp
    r"|\b[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+(?:\(\))?"  # a dotted name: vllm.LLM, os.path
    r"|\b\w*_\w*\b"  # snake_case, SCREAMING_CASE
    r"|\b[A-Za-z]\w*\(\)"  # a call: generate()
    r"|\b\w*[a-z][A-Z]\w*\b|\b[A-Z]{2,}[a-z]\w*\b"  # camelCase, PascalCase, LoRA
    r"|\b[A-Za-z]+\d[\w]*\b"  # a name with digits: Qwen2, fp8
    r"|(?<![\w.])\d+(?:[.,]\d+)*(?![\w])"  # a number: 8000, 0.9, 1,024
)


#: The reason a code block the model wrote is dropped.
WRITTEN_CODE = "code: the answer shows the sources' own blocks, never the model's"
#: What every sentence was checked for, as the answer's JSON says.
CHECKED = ["citations", "no code blocks", "inline code verbatim",
           "identifiers, flags, paths, numbers", "every part of a dotted name",
           "every code name asked", "a default bound to its name",
           "words in the cited source, together", "says more than the question"]
#: ... and, for the writers' answers, this (generate/wording.py).
IN_BLOCK_ORDER = "worded as the cited source words it, in its order"


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
    in_block_order: bool = False  # each sentence worded as its block words it (IN_BLOCK_ORDER)

    def as_json(self) -> dict[str, Any]:
        checked = CHECKED + [IN_BLOCK_ORDER] if self.in_block_order else CHECKED
        return {"checked": checked, **asdict(self)}


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
    return _rejoined([(text, cites) for text, cites in pieces if text.strip()])


def _rejoined(pieces: list[tuple[str, list[int]]]) -> list[tuple[str, list[int]]]:
    """A piece that cites nothing and ends in a stop and a quote, followed by one starting in
    lowercase, was cut inside a quotation (`skips "lm_head." if ...`): one sentence again.
    (Off: bench_writer check cuts 1 kept supported sentence in 2 unlabelled pieces.)"""
    out: list[tuple[str, list[int]]] = []
    for text, cites in pieces:
        if out and not out[-1][1] and re.match(r"[a-z]", text) \
                and re.search(r"[.!?][\"')]$", out[-1][0]):
            out[-1] = (out[-1][0] + " " + text, cites)
        else:
            out.append((text, cites))
    return out


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


def _normalised(text: str) -> str:
    """Shell line continuations joined and runs of blanks made one: commands compare equal
    however they were wrapped (off: check drops 2 supported sentences more)."""
    text = re.sub(r"\\[ \t]*\n[ \t]*", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def _token_supported(token: str, sources: list[CitedSource]) -> bool:
    token = token.rstrip(".,:;")
    haystacks = [s.text + "\n" + s.file_path for s in sources]
    if any(appears(token, h) for h in haystacks):
        return True
    if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", token):
        # vllm.LLM from "from vllm import LLM": every part in one cited source (off: 1 more
        # sentence dropped of the repos3 readings, blocks3w_wordq).
        return any(all(appears(p, h) for p in token.split(".")) for h in haystacks)
    return False


def _unsupported_tokens(prose: str, sources: list[CitedSource], question: str = ""
                        ) -> list[str]:
    prose = CITE.sub(" ", INLINE.sub(" ", prose))
    found = []
    for match in _CHECKABLE.finditer(prose):
        token = match.group()
        if not _token_supported(token, sources) and not asked(token, question) \
                and token not in found:
            found.append(token)
    return found


def _verbatim(code: str, sources: list[CitedSource]) -> bool:
    wanted = _normalised(code)
    return bool(wanted) and any(wanted in _normalised(s.text) for s in sources)


# --------------------------------------------------------------------------------------------
# The check


def check_answer(answer: str, sources: list[CitedSource], *, question: str = "",
                 writer: str | None = None, in_block_order: bool = False) -> CheckedAnswer:
    """Keep the units of `answer` that its cited sources support; report the rest.

    `sources` are those the model was given, numbered as the answer cites them; `question`
    is what was asked (its words claim nothing, and a sentence must say more than it).
    `in_block_order`: a sentence must also be worded as its block words it, in its order
    (generate/wording.py). The writers' answers are checked so (generate/styles.py); off, the
    check is the word-level one its other rules were tuned as (benchmarks/bench_writer.py).
    """
    by_number = {s.number: s for s in sources}
    report = CheckReport(writer=writer, in_block_order=in_block_order)
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
            text = _check_sentence(unit, valid, invalid, by_number, report, question,
                                   in_block_order)
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
# (off: validate keeps one sentence with `[completions-api]()` in it).
_BROKEN_LINK = re.compile(r"\[([^\[\]\n]*)\]\((?!https?://|\.{0,2}/|[\w.-]+/|#)([^()\n]*)\)")
# "states that ...": a sentence whose subject was a citation, cut off before it (off: validate
# keeps 1 more such sentence).
_SOURCE_VERB = re.compile(r"(?:also[ \t]+)?(?:states|mentions|says|notes|explains|provides|"
                          r"indicates|describes|shows|suggests|recommends)\b")


def _link_text(match: re.Match[str]) -> str:
    text = match.group(1)
    return "" if re.fullmatch(r"\s*\d{1,3}\s*", text) else text


# ", as stated in [1]": the citation's place is taken by a phrase that talks about it (off:
# validate --verbose keeps a sentence ending "512, as stated in [1].").
_AS_STATED = re.compile(
    r",?[ \t]+(?:as[ \t]+)?(?:stated|indicated|mentioned|shown|described|noted|explained|"
    r"specified|seen|defined|given)[ \t]+(?:in|by)(?=[ \t]*\[\d{1,3}\])", re.I)


def _check_sentence(unit: Unit, valid: list[int], invalid: list[int],
                    by_number: dict[int, CitedSource], report: CheckReport,
                    question: str = "", in_block_order: bool = False) -> str | None:
    text = _BROKEN_LINK.sub(_link_text, unit.text).strip()
    text = _AS_STATED.sub("", text)
    if _SOURCE_VERB.match(text):
        _drop(report, text, "talks about a source, not the question")
        return None
    for n in invalid:  # a citation of a source that was not given is never shown (guarantee)
        text = re.sub(rf"[ \t]*\[{n}\]", "", text)
    if not valid:  # a sentence cites a block that is shown (a product guarantee)
        reason = (f"cites {', '.join(f'[{n}]' for n in invalid)}, not a given source"
                  if invalid else "cites no source")
        _drop(report, text, reason)
        return None
    why = _claim(text, [by_number[n] for n in valid], question, in_block_order)
    if why is not None:
        # The writer may cite the wrong one of the sources it saw: where another one alone
        # supports the whole sentence, it is cited instead (the check is the same; off: check
        # drops its 2 re-cited sentences, validate keeps 4 fewer).
        for number, source in by_number.items():
            if number in valid:
                continue
            moved = _recite(text, valid, number)
            if _claim(moved, [source], question, in_block_order) is None:
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


def _claim(text: str, cited: list[CitedSource], question: str, in_block_order: bool = False
           ) -> str | None:
    """Why the sentence is not supported by `cited`; None when it is."""
    where = ", ".join(f"[{s.number}]" for s in cited)
    for match in INLINE.finditer(text):  # a guarantee (off: validate keeps 1 more, `kill_tree`)
        span = match.group(1).strip()  # a single token may be in the source or the question
        # (off: 1 more sentence dropped of the repos3 readings)
        if _verbatim(span, cited) or re.fullmatch(r"\S+", span) and (
                _token_supported(span, cited) or asked(span, question)):
            continue
        return f"`{span}` is not in {where}"
    missing = _unsupported_tokens(text, cited, question)  # (the question's own: off, check
    # keeps 1 unsupported sentence fewer, validate 4 fewer, the readings drop 2 more)
    if missing:
        return f"{', '.join(missing[:3])} not in {where}"
    subjects = asked_names(text, question)
    unheld = [t for t in subjects if not _token_supported(t, cited)]
    if unheld and len(unheld) == len(subjects):  # (off: validate keeps 1 more)
        return f"{where} is not about {', '.join(subjects[:2])}"
    # A class name may lie above the excerpt (a method's chunk rarely shows its class line);
    # a function, attribute or dotted name the question asks about is the place itself.
    unheld = [t for t in unheld if "_" in t or "." in t]  # (off: check keeps 1 unsupported more)
    if unheld:
        return f"{where} does not speak of {', '.join(unheld[:2])}"
    unbound = default_unbound(text, cited, question)  # (off: check keeps 1 unsupported more)
    if unbound is not None:
        return unbound
    said = support(_LIST_MARKER.sub("", text), question,
                   [(s.text, s.file_path) for s in cited])
    if not said.novel:  # (off: check keeps 1 empty more, validate drops 2 flagged fewer)
        return "says nothing the question did not"
    if said.fails():
        if said.missing:  # (off: check keeps 6 unsupported more)
            return f"the words {', '.join(said.missing[:4])} are not in {where}"
        if said.negated:  # a guarantee: "not", "never" the cited stretch does not say
            return f"{where} does not say that it is not so"
        return f"what it says is not together in one place of {where}"  # (off: validate
        # drops 1 flagged fewer)
    # (off: check --in-block-order falls back on 17 drafts, not 61; the section above it)
    if in_block_order and not any(in_order(_LIST_MARKER.sub("", text), s.text)
                                  for s in cited):
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
