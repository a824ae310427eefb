"""Cleaning generated answers: citations, think blocks, repetition, small-model debris."""

from __future__ import annotations


import pytest

from ragdb.generate.cleaning import clean_answer


# ------------------------------------------------------------------------------------------
# clean_answer


def test_citations_naming_no_given_source_are_dropped() -> None:
    text, cited = clean_answer(
        "Use --enable-lora [1]. Adapters load at run time [7]. See [1][3]. Both work [2, 9].", 3
    )
    assert text == "Use --enable-lora [1]. Adapters load at run time. See [1][3]. Both work [2, 9]."
    assert cited == [1, 3]  # "[2, 9]" is no citation: the check drops a sentence citing so


def test_code_is_left_alone() -> None:
    text, cited = clean_answer("Index with `x[5]`:\n```python\ny = x[9]\n```\nDone [1].", 1)
    assert "`x[5]`" in text and "y = x[9]" in text
    assert cited == [1]


def test_no_citation_is_invented() -> None:
    assert clean_answer("The sources do not say.", 3) == ("The sources do not say.", [])


@pytest.mark.parametrize("raw", [
    "<think>\nLet me reason about it.\n</think>\n\nUse --enable-lora [1].",
    "<think>\n\n</think>\n\nUse --enable-lora [1].",
    "Use --enable-lora [1].<think>and then I keep thinking without end",
    "Let me reason.</think>\nUse --enable-lora [1].",  # the template opened the block
    "Use --enable-lora [1].<|im_end|>\n<|im_start|>user\nmore",
])
def test_think_blocks_and_chat_markers_are_removed(raw: str) -> None:
    assert clean_answer(raw, 1) == ("Use --enable-lora [1].", [1])


@pytest.mark.parametrize("raw,expected", [
    ("Adapters are named [1]. They load fast. Adapters are named [2]. They load fast.",
     "Adapters are named [1]. They load fast."),
    ("Set the port [1].\n- **Tools**:\n- **Data**:\n- **Tools**:\n- **Data**:\n- **Tools**:",
     "Set the port [1].\n- **Tools**:\n- **Data**:\n- **Tools**:\n- **Data**:"),
    ("Run it:\n```\nvllm serve\n```\n\n```\n\n```\n\n```\n\n```", "Run it:\n```\nvllm serve\n```"),
    ("It scales to 1000x100x100x100x100x100x100x100", "It scales to"),
    ("These are mentioned [1]:\n\n1. Input Preprocessor\n2. Input Preprocessor\n"
     "3. Input Preprocessor\n4.", "These are mentioned [1]:\n\n1. Input Preprocessor\n"
     "2. Input Preprocessor"),
    ("Use the the the the the the option [1].", "Use the"),
    ("Load it [1]. You load the adapter with the load endpoint and then you load the adapter "
     "with the load endpoint and then", "Load it [1]. You load the adapter with the load "
     "endpoint and then"),
])
def test_repetition_is_cut_where_it_starts(raw: str, expected: str) -> None:
    assert clean_answer(raw, 2)[0] == expected


def test_code_examples_may_repeat_and_echoed_questions_are_cut() -> None:
    example = "```python\nfrom vllm import LLM, SamplingParams\nllm = LLM(model=MODEL)\n```"
    answer = f"Offline [1]:\n{example}\nWith LoRA [2]:\n{example}\nBoth work [2]."
    assert clean_answer(answer, 2)[0] == answer
    echoed = "Use `vllm serve` [1].\n\nQuestion: How do I install vLLM?\nAnswer: pip."
    assert clean_answer(echoed, 1)[0] == "Use `vllm serve` [1]."


def test_truncated_answer_ends_at_its_last_sentence() -> None:
    raw = "Use --enable-lora [1]. Then name each adapter with --lora-modules and"
    assert clean_answer(raw, 1, truncated=True)[0] == "Use --enable-lora [1]."
    assert clean_answer(raw, 1)[0] == raw


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("According to [1], [2], and,, and,,,,,, [34", "According to [1], [2], and, and"),
        ("According to [1], the answer is: ```", "According to [1], the answer is:"),
        ("Run:\n```\nvllm serve\n```", "Run:\n```\nvllm serve\n```"),
    ],
)
def test_small_model_debris_is_tidied(raw: str, expected: str) -> None:
    assert clean_answer(raw, 3)[0] == expected
