"""The query-likelihood benchmark's scorer (benchmarks/llm_score.py) computes what the model
computes: with the real SmolLM2-135M GGUF, its greedy tokens and the log-probability of them
agree with OpenVINO GenAI's own run of the same file, and a continuation the model favours
scores above the same words shuffled."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gguf", reason="the writer extra reads GGUF files (make install-writer)")

from benchmarks.llm_score import (GGUFScorer, _compare_with_genai,  # noqa: E402
                                  _reference_pipeline, model_path)


@pytest.fixture(scope="module")
def scorer() -> GGUFScorer:
    # GenAI rounds Q4_1 weights to an integer zero point; the same rounding makes the two
    # runs comparable token for token (the module docstring says why).
    return GGUFScorer(model_path("smol"), genai_q4_1=True)


def test_greedy_tokens_match_genai_on_every_prompt(scorer: GGUFScorer) -> None:
    pipe = _reference_pipeline(model_path("smol"), "f32")
    first, whole = _compare_with_genai(scorer, pipe, 4, "smol")
    assert first == whole == 6


def test_what_the_model_favours_scores_higher(scorer: GGUFScorer) -> None:
    prompt = scorer.encode("The capital of France is")
    favoured = scorer.greedy(prompt, 4)
    per_token = scorer.token_logprobs(prompt, favoured)
    assert per_token.shape == (4,) and (per_token < 0).all()
    assert scorer.logprob(prompt, favoured) == pytest.approx(float(per_token.sum()))
    shuffled = favoured[::-1] if favoured[::-1] != favoured else favoured[1:] + favoured[:1]
    assert scorer.logprob(prompt, shuffled) < scorer.logprob(prompt, favoured)
    assert np.isfinite(scorer.score_text("Passage: Paris.\nQuestion:", " What is it?"))


def test_an_empty_prompt_is_refused(scorer: GGUFScorer) -> None:
    with pytest.raises(ValueError, match="at least one token"):
        scorer.token_logprobs([], [1, 2])
