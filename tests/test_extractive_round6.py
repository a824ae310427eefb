"""Extractive answers, round 6 of issue 19: the rules of passage choice the strict readers'
rejections pointed at (a list question given one bullet of the list, a pointer sentence
chosen over the content, the wrong method of the right class). Each case is a real source
text of the vLLM tree; every passage stays verbatim (check_verbatim)."""

from __future__ import annotations

from ragdb.generate.extractive import SourceText, compose
from ragdb.generate.passage_choice import select_passages
from tests.test_extractive_choice import check_verbatim

# vLLM 0.10.1 RELEASE.md, the chunk retrieved first for questions on release validation.
RELEASE_MD = """## Manual validations

### E2E Performance Validation

Before each release, we perform end-to-end performance validation to ensure no regressions \
are introduced. This validation uses the [vllm-benchmark workflow](https://github.com/pytorch/\
pytorch-integration-testing/actions/workflows/vllm-benchmark.yml) on PyTorch CI.

**Current Coverage:**

* Models: Llama3, Llama4, and Mixtral
* Hardware: NVIDIA H100 and AMD MI300x
* _Note: Coverage may change based on new model releases and hardware availability_

**Performance Validation Process:**

**Step 1: Get Access**
Request write access to the [pytorch/pytorch-integration-testing](https://github.com/pytorch/\
pytorch-integration-testing) repository to run the benchmark workflow."""


def test_a_list_question_answered_by_one_item_gets_the_whole_list() -> None:
    """Asked which models are covered, the best unit was the list's note bullet alone (it
    shares "coverage" and "model"); the answer is the list under its label, note and all."""
    source = SourceText(1, "RELEASE.md", "markdown", RELEASE_MD)
    question = "What models are covered by the performance validation before a release?"
    passages = select_passages(question, [source])
    check_verbatim(passages, [source])
    text = compose(passages)[0]
    assert "Models: Llama3, Llama4, and Mixtral" in text
    assert "Hardware: NVIDIA H100 and AMD MI300x" in text
    assert text.startswith("**Current Coverage:**")
