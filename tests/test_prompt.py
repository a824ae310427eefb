"""The prompt: numbered sources fitted to a token budget, and the chat template."""

from __future__ import annotations


import jinja2

from ragdb.generate.generator import Generator
from ragdb.generate.prompt import build_prompt

from tests.generate_support import LOAD, LORA, QUICK, QWEN3_CHAT_TEMPLATE, source, words


# ------------------------------------------------------------------------------------------
# build_prompt


def test_prompt_numbers_sources_with_path_and_line_range() -> None:
    messages, used = build_prompt("How do I serve LoRA?", [LORA, LOAD], words, 10_000, 50)
    assert used == [LORA, LOAD]
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert "[1] docs/features/lora.md:45-47\n# Serving LoRA adapters" in user
    assert "[2] docs/features/lora.md:90-92\n## Dynamically loading adapters" in user
    assert user.index("[1] ") < user.index("[2] ") < user.index("How do I serve LoRA?")
    system = messages[0]["content"]
    assert "[1]" in system and "only" in system and "do not contain" in system


def test_tiny_budget_keeps_only_the_first_sources() -> None:
    all_three = build_prompt("q?", [LORA, LOAD, QUICK], words, 10_000, 50)[0]
    total = sum(words(m["content"]) for m in all_three)
    budget = total - words(QUICK.text) - 1  # the third block needs 2 more (its header)
    messages, used = build_prompt("q?", [LORA, LOAD, QUICK], words, budget, 50)
    assert used == [LORA, LOAD]
    assert sum(words(m["content"]) for m in messages) <= budget
    assert "[3]" not in messages[1]["content"] and "quickstart" not in messages[1]["content"]


def test_first_source_too_big_is_cut_at_a_line_boundary() -> None:
    big = source("src/big.py", 10, "\n".join(f"line_{i} = {i}  # value" for i in range(200)))
    empty_cost = sum(words(m["content"]) for m in build_prompt("q?", [], words, 10_000, 50)[0])
    budget = empty_cost + 2 + 4 * 20  # the header and about 20 of the 4-word lines
    messages, used = build_prompt("q?", [big, LORA], words, budget, 50)
    assert len(used) == 1
    head = used[0]
    assert 10 <= head.text.count("\n") + 1 < 200
    assert big.text.startswith(head.text + "\n")  # whole lines only
    assert head.end_line == head.start_line + head.text.count("\n")
    assert f"[1] src/big.py:10-{head.end_line}" in messages[1]["content"]
    assert sum(words(m["content"]) for m in messages) <= budget


def test_a_first_source_of_one_long_line_is_cut_between_words() -> None:
    minified = source("static/app.min.js", 1, " ".join(f"var{i}=1;" for i in range(300)))
    empty_cost = sum(words(m["content"]) for m in build_prompt("q?", [], words, 10_000, 50)[0])
    messages, used = build_prompt("q?", [minified], words, empty_cost + 2 + 40, 50)
    assert len(used) == 1 and used[0].text == " ".join(f"var{i}=1;" for i in range(40))
    assert "[1] static/app.min.js:1-1" in messages[1]["content"]


def test_question_is_capped_between_words() -> None:
    question = " ".join(f"word{i}" for i in range(500)) + " END?"
    messages, _ = build_prompt(question, [LORA], words, 10_000, 20)
    user = messages[1]["content"]
    assert "word19" in user and "word20" not in user and "END?" not in user


def test_budget_is_measured_with_the_model_tokenizer(generator: Generator) -> None:
    def module(i: int) -> str:
        return "\n".join(f"def f{i}_{j}(x):\n    return x * {j}" for j in range(60))

    sources = [source(f"src/mod{i}.py", 1, module(i)) for i in range(5)]
    prompt, used = generator.prompt_for("What does f0_3 return?", sources)
    assert 1 <= len(used) < 5
    assert generator.count_tokens(prompt) <= generator.prompt_budget
    assert prompt.rstrip().endswith("<|im_start|>assistant")


# ------------------------------------------------------------------------------------------
# Qwen3's chat template with thinking turned off


MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi [1]"}]
QWEN3_NO_THINK = (
    "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi [1]<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n"
)


def test_qwen3_template_reference_rendering() -> None:
    """The template text above is the real one: jinja2 gives the documented behaviour."""
    template = jinja2.Environment().from_string(QWEN3_CHAT_TEMPLATE)
    off = template.render(messages=MESSAGES, add_generation_prompt=True, enable_thinking=False)
    default = template.render(messages=MESSAGES, add_generation_prompt=True)
    assert off == QWEN3_NO_THINK
    assert default == QWEN3_NO_THINK[: -len("<think>\n\n</think>\n\n")]


def test_generator_renders_qwen3_with_thinking_off(generator: Generator) -> None:
    """The same path a Qwen3 model goes through: the tokenizer's own template, via render()."""
    tokenizer = generator.tokenizer
    original = tokenizer.chat_template
    tokenizer.set_chat_template(QWEN3_CHAT_TEMPLATE)
    try:
        assert generator.render(MESSAGES) == QWEN3_NO_THINK
        prompt, used = generator.prompt_for("Hi?", [QUICK])
        assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    finally:
        tokenizer.set_chat_template(original)
    assert "<think>" not in generator.render(MESSAGES)
