"""Which way an answer is made: extractive (passages of the sources, no model) or generated.

Only a model good enough to synthesise should write answers: measured on the public docs
questions, the offline SmolLM2-135M wrote answers a strict reader accepted about 2 times in 15
(token F1 0.29), while passages chosen from the sources reached F1 0.42 and every claim is a
source's own words (benchmarks/EXTRACTIVE.md). So `auto` answers extractively whenever the
model that would answer is the small offline one, and generates with anything better.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import Enum

from ragdb.generate.extractive import Embed, SourceText, compose_pieces, select_passages
from ragdb.generate.generator import NO_SOURCES_MESSAGE, GeneratedAnswer
from ragdb.generate.models import ResolvedModel
from ragdb.generate.prompt import PromptSource

EXTRACTIVE_NAME = "extractive (passages of the sources; no model)"


class Style(str, Enum):
    auto = "auto"
    extractive = "extractive"
    generate = "generate"


def extractive_wanted(style: Style, resolved: Callable[[], ResolvedModel]) -> bool:
    """`resolved` is only called for `auto`: finding the model costs a hub probe at most."""
    if style is Style.extractive:
        return True
    if style is Style.generate:
        return False
    return resolved().offline_fallback


class ExtractiveAnswerer:
    """The Generator's interface without a language model: each passage is a verbatim span of
    a source, followed by its [n]; passages stream as they are chosen."""

    model = EXTRACTIVE_NAME

    def __init__(self, embed: Embed | None, kind_of: Callable[[str], str]) -> None:
        self.embed = embed
        self.kind_of = kind_of  # file path -> file kind (code is split by blocks, not sentences)

    def answer(
        self,
        question: str,
        sources: list[PromptSource],
        on_token: Callable[[str], None] | None = None,
    ) -> GeneratedAnswer:
        started = time.perf_counter()
        if not sources:
            return GeneratedAnswer(NO_SOURCES_MESSAGE, [], self.model, 0, 0, 0.0, 0.0, [])
        texts = [SourceText(n, s.file_path, self.kind_of(s.file_path), s.text)
                 for n, s in enumerate(sources, 1)]
        passages = select_passages(question, texts, self.embed)
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
