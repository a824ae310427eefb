"""Extractive answers, round 11 of issue 19: a question of two parts answered on one.
Real chunks of vLLM 0.10.1's docs (docs/features/quantization/inc.md and the "Extra
information" section of docs/getting_started/installation/intel_gaudi.md), in the order the
search ranked them; every passage stays verbatim."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ragdb.embedder import load_embedder
from ragdb.generate.extractive import SourceText, compose
from ragdb.generate.passage_choice import DEFAULT_SETTINGS, WRITER_SETTINGS, select_passages
from tests.test_extractive_choice import check_verbatim
from tests.test_extractive_coherence import source

QUESTION = "What quantization methods are supported and unsupported for vLLM on Intel Gaudi?"


@pytest.fixture(scope="module")
def embed() -> Any:
    """The real embedder, as `ragdb answer` scores passages with it."""
    return load_embedder().embed


def gaudi_sources() -> list[SourceText]:
    return [source("inc_fp8", "docs/features/quantization/inc.md", "markdown", number=1),
            source("intel_gaudi_extra_information",
                   "docs/getting_started/installation/intel_gaudi.md", "markdown", number=2)]


def test_the_part_of_the_question_the_chosen_passages_leave_out_is_answered_too(
        embed: Any) -> None:
    """The passages on what INC supports hold "supported", "quantization", "Gaudi", not
    "unsupported" (30% of the question's term weight over these two sources' units): with
    cover_share 0.25 the list under "Unsupported features" (AWQ) is added, from the second
    source; the first source's passages stay. At 0.35 the rule leaves the answer as it was."""
    sources = gaudi_sources()
    settings = replace(DEFAULT_SETTINGS, cover_share=0.25)
    passages = select_passages(QUESTION, sources, embed, settings=settings)
    check_verbatim(passages, sources)
    text = compose(passages)[0]
    assert "Intel® Neural Compressor (INC)" in text
    assert "- AWQ quantization" in text and "[2]" in text
    assert [p.number for p in passages][:1] == [1]
    stricter = select_passages(QUESTION, sources, embed,
                               settings=replace(DEFAULT_SETTINGS, cover_share=0.35))
    assert stricter == select_passages(QUESTION, sources, embed, settings=WRITER_SETTINGS)


def test_no_passage_is_added_when_the_chosen_ones_cover_the_question(embed: Any) -> None:
    """A question the first passage covers gets nothing more from the rule."""
    question = "Which models is INC FP8 quantization validated on?"
    sources = gaudi_sources()
    plain = select_passages(question, sources, embed, settings=WRITER_SETTINGS)
    covered = select_passages(question, sources, embed,
                              settings=replace(DEFAULT_SETTINGS, cover_share=0.25))
    assert covered == plain
    assert "validated only in Llama models" in compose(covered)[0]


def test_the_rule_is_on_for_answers_and_off_for_the_writers_context(embed: Any) -> None:
    """Answers get it; the writer is shown what it was measured with (round 10: more context,
    more unsupported claims)."""
    assert DEFAULT_SETTINGS.cover_share == 0.3
    assert WRITER_SETTINGS.cover_share == 0.0
    assert replace(WRITER_SETTINGS, cover_share=0.3) == DEFAULT_SETTINGS
    text = compose(select_passages(QUESTION, gaudi_sources(), embed,
                                   settings=replace(WRITER_SETTINGS, cover_share=0.25)))[0]
    assert "AWQ" in text
    assert "AWQ" not in compose(select_passages(QUESTION, gaudi_sources(), embed,
                                                settings=WRITER_SETTINGS))[0]
