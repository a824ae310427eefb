"""Which way an answer is made: extractive (passages of the sources, no model) or generated,
and for a generated one, generate then check (`CheckedAnswerer`).

Only a model good enough to synthesise should write answers: measured on the public docs
questions, the offline SmolLM2-135M wrote answers a strict reader accepted about 2 times in 15
(token F1 0.29), while passages chosen from the sources reached F1 0.42 and every claim is a
source's own words (benchmarks/EXTRACTIVE.md). So `auto` answers extractively whenever the
model that would answer is the small offline one, and generates with anything better.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ragdb.generate.blocks import BlocksAnswerer, Locate, recipe_named
from ragdb.generate.checking import CheckReport, CitedSource, check_answer, split_units
from ragdb.generate.cleaning import renumber_citations
from ragdb.generate.extractive import Passage, SourceText, compose, compose_pieces
from ragdb.generate.generator import NO_SOURCES_MESSAGE, GeneratedAnswer, Generator
from ragdb.generate.models import ResolvedModel
from ragdb.generate.passage_choice import (
    DEFAULT_SETTINGS,
    WRITER_SETTINGS,
    Embed,
    Settings,
    select_passages,
)
from ragdb.generate.prompt import PromptSource
from ragdb.generate.remote import ModelUnavailable, RemoteGenerator
from ragdb.generate.style import Style

EXTRACTIVE_NAME = "extractive (passages of the sources; no model)"

#: The answer made without a model (`--style extractive`, and `auto` where no model writes
#: well): "extractive" (passages chosen from the sources) or a variant of whole blocks
#: (generate/blocks.VARIANTS; "blocks" is the proposed one). Issue 39: what the blind readers
#: prefer becomes the default here; until their verdicts are in, it stays "extractive".
NO_MODEL_ANSWER = "extractive"


class ExtractiveAnswerer:
    """The Generator's interface without a language model: each passage is a verbatim span of
    a source, followed by its [n]; passages stream as they are chosen."""

    model = EXTRACTIVE_NAME

    def __init__(self, embed: Embed | None, kind_of: Callable[[str], str]) -> None:
        self.embed = embed
        self.kind_of = kind_of  # file path -> file kind (code is split by blocks, not sentences)

    def passages(self, question: str, sources: list[PromptSource],
                 settings: Settings = DEFAULT_SETTINGS) -> list[Passage]:
        """The passages chosen from the sources: the extractive answer's, and (with the
        writer's settings) the writer's context."""
        texts = [SourceText(n, s.file_path, self.kind_of(s.file_path), s.text)
                 for n, s in enumerate(sources, 1)]
        return select_passages(question, texts, self.embed, settings=settings)

    def answer(
        self,
        question: str,
        sources: list[PromptSource],
        on_token: Callable[[str], None] | None = None,
    ) -> GeneratedAnswer:
        started = time.perf_counter()
        if not sources:
            return GeneratedAnswer(NO_SOURCES_MESSAGE, [], self.model, 0, 0, 0.0, 0.0, [])
        passages = self.passages(question, sources)
        first = time.perf_counter() - started
        pieces: list[str] = []
        for piece in compose_pieces(passages):
            pieces.append(piece)
            if on_token is not None:
                on_token(piece)
        cited = list(dict.fromkeys(p.number for p in passages))
        return GeneratedAnswer(text="".join(pieces), cited=cited, model=self.model,
                               prompt_tokens=0, new_tokens=0, first_token_s=first,
                               total_s=time.perf_counter() - started, sources=list(sources))


def no_model_answerer(variant: str | None, extractive: ExtractiveAnswerer,
                      locate: Callable[[], Locate]) -> ExtractiveAnswerer | BlocksAnswerer:
    """The answerer for `variant` (None: NO_MODEL_ANSWER); `locate` makes the blocks'
    file reader (one per answer: each file read once)."""
    name = variant or NO_MODEL_ANSWER
    if name == "extractive":
        return extractive
    return BlocksAnswerer(locate(), recipe_named(name))


def extractive_wanted(style: Style, resolved: Callable[[], ResolvedModel]) -> bool:
    """`resolved` is only called for `auto`: finding the model costs a hub probe at most."""
    if style is Style.extractive:
        return True
    if style is Style.generate:
        return False
    model = resolved()
    return model.offline_fallback or not model.auto_writes


def writer_sources(passages: list[Passage], sources: list[PromptSource]
                   ) -> tuple[list[PromptSource], dict[int, int]]:
    """The writer's context: each source's chosen passages (in order, joined by a gap mark)
    as one prompt source, and the map from prompt numbers back to the sources' own numbers."""
    by_source: dict[int, list[Passage]] = {}
    for passage in passages:
        by_source.setdefault(passage.number, []).append(passage)
    shown: list[PromptSource] = []
    mapping: dict[int, int] = {}
    for number in sorted(by_source):
        source = sources[number - 1]
        chosen = sorted(by_source[number], key=lambda p: p.start)
        first, last = chosen[0], chosen[-1]
        text = "\n...\n".join(_as_shown(p) for p in chosen)
        shown.append(replace(
            source, text=text, first=source.first + first.start, last=source.first + last.end,
            start_line=source.start_line + source.text.count("\n", 0, first.start),
            end_line=source.start_line + source.text.count("\n", 0, last.end),
        ))
        mapping[len(shown)] = number
    return shown, mapping


def _as_shown(passage: Passage) -> str:
    """A passage as the extractive answer shows it, without its citation: prose with its
    markup cleaned (mkdocs links as their text, which the writer otherwise copied as garbled
    links), code fenced under the signature lines of the definition it lies in."""
    shown = next(compose_pieces([passage], labels=False))
    return re.sub(r"\s*\[\d{1,3}\]$", "", shown)


class _Gate:
    """Streams a written answer one checked unit at a time: a sentence is shown only once it
    is complete and has passed the check, so nothing unsupported ever reaches the reader."""

    def __init__(self, question: str, mapping: dict[int, int], cited: list[CitedSource],
                 on_token: Callable[[str], None] | None) -> None:
        self.question = question
        self.mapping = mapping
        self.cited = cited
        self.on_token = on_token
        self.view = ""
        self.emitted = ""

    def feed(self, piece: str) -> None:
        self.view += piece
        if self.on_token is None:
            return
        units = split_units(self.view)
        if not units:
            return
        # The last unit may still grow, unless it is a sentence that already ends citing
        # (a later citation or full stop only extends what was shown).
        last = units[-1]
        if last.kind == "prose" and re.search(r"\]\W?$", last.text):
            cut = len(self.view)
        else:
            cut = self.view.rfind(last.text)
            if cut <= 0:
                return
        text = check_answer(renumber_citations(self.view[:cut], self.mapping), self.cited,
                            question=self.question).text
        self.push(text)

    def push(self, text: str) -> None:
        if self.on_token is not None and text.startswith(self.emitted) and text != self.emitted:
            delta = text[len(self.emitted):]
            self.emitted = text
            self.on_token(delta)


@dataclass
class Draft:
    """What the writer wrote for one question, before the check: kept apart so that the check
    can be measured and tuned on drafts written once (benchmarks/bench_writer.py)."""

    passages: list[Passage]
    shown: list[PromptSource]  # the writer's sources: the chosen passages, numbered 1..n
    mapping: dict[int, int]  # the writer's numbers -> the sources' own numbers
    given: list[CitedSource]  # the sources it saw, whole, as the check reads them
    written: GeneratedAnswer
    selected_s: float  # choosing the passages, before the writer started


_WORDS = re.compile(r"[a-z0-9_]+")
#: A prose passage whose words the kept sentences already hold (this share of them) is not
#: shown again after them: readers marked the written sentence and its passage "said twice".
EVIDENCE_SAID = 0.9


def _evidence(text: str, passages: list[Passage]) -> list[Passage]:
    """The chosen passages of the sources the kept sentences cite, shown after them verbatim
    under their labels: the reader sees what each sentence was read from, and what the writer
    left out of it. Passages of sources no kept sentence cites are left out (strict readers
    found them padding), and so is a passage the answer already quotes: prose found in it
    whole or nearly word for word, code with half its lines in it."""
    cited = {int(n) for n in re.findall(r"\[(\d{1,3})\]", text)}
    flat = " ".join(text.split())
    lines = {line.strip() for line in text.split("\n")}
    said = set(_WORDS.findall(text.lower()))

    def quoted(passage: Passage) -> bool:
        if not passage.code:
            words = _WORDS.findall(passage.text.lower())
            return (" ".join(passage.text.split()) in flat
                    or sum(w in said for w in words) >= EVIDENCE_SAID * len(words))
        own = [line.strip() for line in passage.text.split("\n") if line.strip()]
        return bool(own) and sum(line in lines for line in own) * 2 >= len(own)

    return [p for p in passages if p.number in cited and not quoted(p)]


class CheckedAnswerer:
    """Generate, then check: the model writes from passages the extractive selector chose
    (with `context`: by default the extractive answer's; a short prompt), every sentence
    must cite a given source, and each is checked against the source it cites
    (ragdb.generate.checking); when too little survives, or a model behind an endpoint gives
    no answer (remote.ModelUnavailable), the answer is the extractive one and says why."""

    def __init__(self, generator: Generator | RemoteGenerator, extractive: ExtractiveAnswerer,
                 context: Settings = WRITER_SETTINGS) -> None:
        self.generator = generator
        self.extractive = extractive
        self.context = context  # how the writer's passages are chosen

    @property
    def model(self) -> str:
        """The writer's name (an endpoint's bare URL learns its model on the first answer)."""
        return self.generator.model

    def answer(
        self,
        question: str,
        sources: list[PromptSource],
        on_token: Callable[[str], None] | None = None,
    ) -> GeneratedAnswer:
        started = time.perf_counter()
        if not sources:
            return GeneratedAnswer(NO_SOURCES_MESSAGE, [], self.model, 0, 0, 0.0, 0.0, [])
        gate = _Gate(question, {}, [], on_token)
        try:
            draft = self.draft(question, sources, gate)
        except ModelUnavailable as exc:
            return self.unwritten(question, sources, str(exc), gate, started)
        if draft is None:  # no source has any text: there is nothing to write from
            return self.extractive.answer(question, sources, on_token)
        return self.settle(question, sources, draft, gate, started)

    def unwritten(self, question: str, sources: list[PromptSource], reason: str,
                  gate: _Gate, started: float) -> GeneratedAnswer:
        """The extractive answer where the writer gave none, its check saying why: the
        endpoint's failure in one line, as a check's fallback is."""
        answer = self.extractive.answer(question, sources,
                                        gate.on_token if not gate.emitted else None)
        report = CheckReport(writer=self.model, fallback="extractive", fallback_reason=reason)
        return replace(answer, check=report.as_json(), total_s=time.perf_counter() - started)

    def draft(self, question: str, sources: list[PromptSource], gate: _Gate | None = None
              ) -> Draft | None:
        """The writer's answer from the chosen passages, streamed through `gate` (None where
        no source has any text)."""
        started = time.perf_counter()
        passages = self.extractive.passages(question, sources, self.context)
        if not passages:
            return None
        shown, mapping = writer_sources(passages, sources)
        cited = [CitedSource(n, s.file_path, s.text) for n, s in enumerate(sources, 1)]
        given = [c for c in cited if c.number in mapping.values()]
        if gate is not None:
            gate.mapping, gate.cited = mapping, given
        selected_s = time.perf_counter() - started
        written = self.generator.answer(question, shown,
                                        on_token=gate.feed if gate is not None else None)
        return Draft(passages, shown, mapping, given, written, selected_s)

    def settle(self, question: str, sources: list[PromptSource], draft: Draft,
               gate: _Gate | None = None, started: float | None = None) -> GeneratedAnswer:
        """The checked answer, or the extractive one when too little of the draft survived."""
        written = draft.written
        checked = check_answer(renumber_citations(written.text, draft.mapping), draft.given,
                               question=question, writer=self.model)
        report = checked.report
        report.stopped_at_time_limit = written.stopped_at_time_limit
        model = self.model
        on_token = gate.on_token if gate is not None else None
        # The reader's passages (the fallback, and those shown after the kept sentences)
        # are the extractive answer's, however wide the writer's context was.
        passages = (draft.passages if self.context == DEFAULT_SETTINGS
                    else self.extractive.passages(question, sources))
        if checked.too_little:
            model = EXTRACTIVE_NAME
            report.fallback = "extractive"
            report.fallback_reason = checked.why_not_shown
            # Shown as the writer's answers show code (no label lines): what this file's
            # checks and the writer's tests read is the same either way.
            text, cited_numbers = compose(passages, labels=False)
            if gate is not None and not gate.emitted and on_token is not None:
                for piece in compose_pieces(passages, labels=False):
                    on_token(piece)
        else:
            text, cited_numbers = checked.text, checked.cited
            shown = _evidence(checked.text, passages)
            if shown:
                report.evidence = list(dict.fromkeys(p.number for p in shown))
                text += "\n\n" + "".join(compose_pieces(shown)).lstrip("\n")
                cited_numbers = list(dict.fromkeys([*cited_numbers, *report.evidence]))
            if gate is not None:
                gate.push(text)
        total = (time.perf_counter() - started if started is not None
                 else draft.selected_s + written.total_s)
        return GeneratedAnswer(
            text=text, cited=cited_numbers, model=model,
            prompt_tokens=written.prompt_tokens, new_tokens=written.new_tokens,
            first_token_s=draft.selected_s + written.first_token_s,
            total_s=total, sources=list(sources),
            check=report.as_json(), stopped_at_time_limit=written.stopped_at_time_limit,
        )
