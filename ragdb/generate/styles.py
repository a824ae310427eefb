"""Which way an answer is made: whole blocks of the sources without a model (generate/blocks.py),
or a model's few sentences over those same blocks, checked (`CheckedAnswerer`).

The blocks are the answer made without a model (`--style extractive`: every line of it is
extracted from the sources, verbatim): seven strict readers, blind, were satisfied by them on
61 of 120 questions over six codebases nobody here tuned on, against 26 for the passages ragdb
chose from the sources before (benchmarks/README.md, "Which answer style?"). Only a model good
enough to write adds sentences above them: the offline SmolLM2-135M wrote answers a strict
reader accepted about 2 times in 15, so `auto` shows the blocks alone whenever the model that
would answer is the small offline one, and writes with anything better.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ragdb.generate.blocks import Block, BlocksAnswerer
from ragdb.generate.checking import CheckReport, CitedSource, check_answer, split_units
from ragdb.generate.cleaning import renumber_citations
from ragdb.generate.generator import Emitter, GeneratedAnswer, Generator, no_sources
from ragdb.generate.models import ResolvedModel
from ragdb.generate.prompt import PromptSource
from ragdb.generate.remote import ModelUnavailable, RemoteGenerator
from ragdb.generate.style import Style


def extractive_wanted(style: Style, resolved: Callable[[], ResolvedModel]) -> bool:
    """`resolved` is only called for `auto`: finding the model costs a hub probe at most."""
    if style is Style.extractive:
        return True
    if style is Style.generate:
        return False
    model = resolved()
    return model.offline_fallback or not model.auto_writes


def writer_sources(blocks: list[Block], sources: list[PromptSource]
                   ) -> tuple[list[PromptSource], dict[int, int], list[CitedSource]]:
    """The writer's context: each block as the answer shows it beneath the written sentences
    (code fenced under its signature lines), numbered 1..n; the map from those numbers back to
    the sources' own; and the blocks as the check reads them (what the reader will see)."""
    shown: list[PromptSource] = []
    mapping: dict[int, int] = {}
    given: list[CitedSource] = []
    for n, block in enumerate(blocks, 1):
        source = sources[block.number - 1]
        text = block.body()
        shown.append(replace(source, text=text, start_line=block.start_line,
                             end_line=block.end_line))
        mapping[n] = block.number
        given.append(CitedSource(block.number, block.path, text))
    return shown, mapping, given


class _Gate(Emitter):
    """Streams a written answer one checked unit at a time: a sentence is shown only once it
    is complete and has passed the check, so nothing unsupported ever reaches the reader."""

    def __init__(self, question: str, mapping: dict[int, int], cited: list[CitedSource],
                 on_token: Callable[[str], None] | None) -> None:
        self.question = question
        self.mapping = mapping
        self.cited = cited
        self.on_token = on_token
        self.view = ""

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
        self.emit(check_answer(renumber_citations(self.view[:cut], self.mapping), self.cited,
                               question=self.question).text)


@dataclass
class Draft:
    """What the writer wrote for one question, before the check: kept apart so that the check
    can be measured and tuned on drafts written once (benchmarks/bench_writer.py)."""

    alone: GeneratedAnswer  # the blocks answer (the fallback, and what follows kept sentences)
    shown: list[PromptSource]  # the writer's sources: the blocks, numbered 1..n
    mapping: dict[int, int]  # the writer's numbers -> the sources' own numbers
    given: list[CitedSource]  # the blocks as the check reads them
    written: GeneratedAnswer
    selected_s: float  # cutting the blocks, before the writer started


class CheckedAnswerer:
    """The writer as a narrator over verbatim blocks: the model is shown the blocks the answer
    without a model shows (numbered as their sources) and writes a few sentences citing them;
    each is checked against the block it cites (ragdb.generate.checking) and one that fails is
    dropped, code the model writes too (the code shown is the blocks', never the model's). The
    answer is the kept sentences, then the blocks. When too little survives (checking's
    too_little), or a model behind an endpoint gives no answer (remote.ModelUnavailable), the
    answer is the blocks alone, and its check says why."""

    def __init__(self, generator: Generator | RemoteGenerator, blocks: BlocksAnswerer) -> None:
        self.generator = generator
        self.blocks = blocks

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
            return no_sources(self.model)
        gate = _Gate(question, {}, [], on_token)
        try:
            draft = self.draft(question, sources, gate)
        except ModelUnavailable as exc:
            alone = self.blocks.answer(question, sources)
            return self.fall_back(alone, CheckReport(writer=self.model), str(exc), gate,
                                  started)
        if draft is None:  # no block to write from: the answer's notes say why
            return self.blocks.answer(question, sources, on_token)
        return self.settle(question, draft, gate, started)

    def draft(self, question: str, sources: list[PromptSource], gate: _Gate | None = None
              ) -> Draft | None:
        """The writer's sentences over the blocks, streamed through `gate` (None where no
        block can be shown)."""
        started = time.perf_counter()
        blocks, notes, sources = self.blocks.chosen(question, sources)
        if not blocks:
            return None
        alone = self.blocks.shown_answer(blocks, notes, sources, started)
        shown, mapping, given = writer_sources(blocks, sources)
        if gate is not None:
            gate.mapping, gate.cited = mapping, given
        selected_s = time.perf_counter() - started
        written = self.generator.answer(question, shown,
                                        on_token=gate.feed if gate is not None else None)
        return Draft(alone, shown, mapping, given, written, selected_s)

    def settle(self, question: str, draft: Draft, gate: _Gate | None, started: float
               ) -> GeneratedAnswer:
        """The kept sentences and then the blocks, or the blocks alone when too little of the
        draft survived the check."""
        written = draft.written
        checked = check_answer(renumber_citations(written.text, draft.mapping), draft.given,
                               question=question, writer=self.model)
        report = checked.report
        report.stopped_at_time_limit = written.stopped_at_time_limit
        alone = replace(draft.alone, prompt_tokens=written.prompt_tokens,
                        new_tokens=written.new_tokens,
                        first_token_s=draft.selected_s + written.first_token_s,
                        stopped_at_time_limit=written.stopped_at_time_limit)
        if checked.too_little:
            return self.fall_back(alone, report, checked.why_not_shown, gate, started)
        report.evidence_from = list(alone.cited)
        text = checked.text + "\n\n" + alone.text
        if gate is not None:
            gate.emit(text)
        return replace(alone, text=text, model=self.model,
                       cited=list(dict.fromkeys([*checked.cited, *alone.cited])),
                       total_s=time.perf_counter() - started, check=report.as_json())

    @staticmethod
    def fall_back(alone: GeneratedAnswer, report: CheckReport, reason: str,
                  gate: _Gate | None, started: float) -> GeneratedAnswer:
        """The blocks alone, the check saying why the writer's sentences are not shown;
        streamed unless some of them were already (the CLI then shows the answer again)."""
        report.fallback, report.fallback_reason = "extractive", reason
        if gate is not None and gate.on_token is not None and not gate.emitted:
            gate.on_token(alone.text)
        return replace(alone, check=report.as_json(), total_s=time.perf_counter() - started)
