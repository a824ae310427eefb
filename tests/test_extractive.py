"""Extractive answers: verbatim passages, whole code blocks, clean text and valid citations."""

from __future__ import annotations

import ast
import re
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragdb.generate import extractive, passage_choice, spans
from ragdb.generate.answer_units import split_passages
from ragdb.generate.extractive import Passage, SourceText, clean_markup, compose
from ragdb.generate.passage_choice import select_passages

LORA_MD = """# Serving LoRA adapters

vLLM can serve several LoRA adapters from one base model. This keeps the memory cost of each
extra adapter small.

To start an OpenAI-compatible server with adapters, run the following:

```bash
vllm serve meta-llama/Llama-2-7b-hf \\
    --enable-lora \\
    --lora-modules sql-lora=/path/to/sql-adapter
```

!!! note "Runtime updates"
    Set `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True` to use the [load endpoint][lora-load] from
    the [API reference](../api/README.md).

The server accepts these options:

- `--max-loras`: how many adapters can be used in one batch.
- `--max-lora-rank`: the largest rank of any adapter that is served.

| Option | Default |
|---|---|
| `--max-loras` | 1 |

<!-- the rank limit is checked at load time -->
Adapters are loaded lazily on the first request that names them.
"""

SAMPLER_PY = '''"""Sampling helpers."""

import torch


@torch.inference_mode()
def greedy(logits: torch.Tensor) -> torch.Tensor:
    """The most likely token of each row."""
    return logits.argmax(dim=-1)


class TopK:
    """Keeps the k best logits."""

    def __init__(self, k: int) -> None:
        self.k = k

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        return logits.topk(self.k).values
'''

FENCE_LINE = re.compile(r"^[ \t]*```", re.M)


def ends_inside_block(text: str) -> bool:
    """CommonMark's rule: a block opened by ``` (maybe with a language) ends at a bare ```."""
    inside = False
    for line in text.split("\n"):
        stripped = line.strip()
        if not inside and stripped.startswith("```"):
            inside = True
        elif inside and stripped.startswith("```") and not stripped.strip("`"):
            inside = False
    return inside


def lora_source(number: int = 1) -> SourceText:
    return SourceText(number, "docs/features/lora.md", "markdown", LORA_MD)


def sampler_source(number: int = 2) -> SourceText:
    return SourceText(number, "vllm/sampling.py", "python", SAMPLER_PY)


def check_verbatim(passages: list[Passage], sources: list[SourceText]) -> None:
    by_number = {s.number: s for s in sources}
    for p in passages:
        assert p.number in by_number
        assert by_number[p.number].text[p.start:p.end] == p.text
        for start, line in p.context:  # signature lines shown before a code window
            assert by_number[p.number].text[start:start + len(line)] == line


# -- splitting -------------------------------------------------------------------------------


def test_code_block_is_whole_and_comes_with_its_introduction() -> None:
    passages = split_passages(lora_source())
    with_code = [p for p in passages if "```" in p.text]
    assert with_code, "the fenced block is a candidate"
    for p in with_code:
        assert p.text.startswith("To start an OpenAI-compatible server with adapters, run the")
        assert p.text.endswith("```")
        assert len(FENCE_LINE.findall(p.text)) == 2
        assert "--lora-modules sql-lora=/path/to/sql-adapter" in p.text
    # The introduction never stands alone, and the block never without it.
    assert not any(p.text.endswith("run the following:") for p in passages)
    assert not any(p.text.startswith("```") for p in passages)


def test_units_are_sentences_items_and_rows_verbatim() -> None:
    source = lora_source()
    passages = split_passages(source)
    check_verbatim(passages, [source])
    texts = [p.text for p in passages]
    assert "- `--max-loras`: how many adapters can be used in one batch." in texts
    assert "| `--max-loras` | 1 |" in texts
    assert "Adapters are loaded lazily on the first request that names them." in texts
    assert not any(t.startswith("#") for t in texts), "headings are not answers"
    assert not any("<!--" in t for t in texts)


def test_leaning_sentence_never_alone() -> None:
    passages = split_passages(lora_source())
    assert not any(p.text.startswith("This") for p in passages)
    joined = [p for p in passages if "This keeps the memory cost" in p.text]
    assert joined and all(p.text.startswith("vLLM can serve several LoRA adapters") for p in joined)


@pytest.mark.parametrize("opener", ["To do so", "In this way", "For example", "However"])
def test_a_sentence_that_refers_back_comes_with_the_one_it_refers_to(opener: str) -> None:
    text = (f"Each adapter is registered under a name at start-up. {opener}, pass "
            "`--lora-modules name=path` to the server command.\n")
    source = SourceText(1, "docs/lora.md", "markdown", text)
    texts = [p.text for p in split_passages(source)]
    assert text.strip() in texts and not any(t.startswith(opener) for t in texts)


def test_python_is_split_into_whole_definitions() -> None:
    source = sampler_source()
    passages = split_passages(source)
    check_verbatim(passages, [source])
    heads = [p.text.split("\n")[0] for p in passages]
    assert "@torch.inference_mode()" in heads, "a decorator stays with its function"
    assert "class TopK:" in heads
    for p in passages:
        ast.parse(textwrap.dedent(p.indent + p.text))  # every unit is whole code


# -- cleaning --------------------------------------------------------------------------------


def test_clean_markup_removes_links_admonitions_headings_comments() -> None:
    raw = textwrap.dedent("""\
        ## Loading adapters <!-- internal -->

        !!! note "Runtime updates"
            Use the [load endpoint][lora-load] described in the
            [API reference](../api/README.md).

        ```python
            indented = "kept"
        ```""")
    cleaned = clean_markup(raw)
    assert cleaned.startswith("Loading adapters")
    assert "Use the load endpoint described in the API reference." in cleaned
    for gone in ("##", "!!!", "<!--", "[lora-load]", "](", "Runtime updates"):
        assert gone not in cleaned
    assert '```python\n    indented = "kept"\n```' in cleaned


def test_clean_markup_tables_and_rst() -> None:
    assert clean_markup("| `--max-loras` | 1 |") == "`--max-loras` | 1"
    cleaned = clean_markup("See :class:`~vllm.LLM` and ``generate``.")
    assert cleaned == "See `vllm.LLM` and `generate`."
    assert clean_markup("::: vllm.config\n=== \"pip\"\nInstall it.") == "Install it."


# -- choosing and composing ------------------------------------------------------------------


def test_answer_cites_given_sources_in_source_order() -> None:
    sources = [lora_source(1), sampler_source(2)]
    question = "How do I start an OpenAI-compatible server with LoRA adapters?"
    passages = select_passages(question, sources)
    check_verbatim(passages, sources)
    assert passages == sorted(passages, key=lambda p: (p.number, p.start))
    text, cited = compose(passages)
    assert set(cited) <= {1, 2}
    assert re.findall(r"\[(\d+)\]", text)
    assert all(1 <= int(n) <= 2 for n in re.findall(r"\[(\d+)\]", text))
    code = next(p for p in passages if "```" in p.text)
    # The block keeps its fences and introduction; its citation is on its own line after it.
    assert "run the following:\n\n```bash\nvllm serve" in text
    assert "--lora-modules sql-lora=/path/to/sql-adapter\n```\n[1]" in text
    assert code.text in LORA_MD


def test_near_duplicates_are_dropped() -> None:
    sentence = "Prefix caching reuses the KV cache of a shared prompt prefix across requests."
    sources = [
        SourceText(1, "docs/a.md", "markdown", f"{sentence}\n\nIt is on by default in V1."),
        SourceText(2, "docs/b.md", "markdown", f"Note: {sentence}"),
        SourceText(3, "docs/c.md", "markdown", sentence.replace("across", "between")),
    ]
    passages = select_passages("What does prefix caching reuse across requests?", sources)
    shown = [clean_markup(p.text) for p in passages]
    assert sum("reuses the KV cache of a shared prompt prefix" in s for s in shown) == 1


def test_code_file_passage_is_fenced_with_citation_after() -> None:
    """Code of a code file: fenced, cited after the fence, under ragdb's own label line that
    names the file and the definition shown (not a quote: it claims nothing)."""
    source = sampler_source(1)
    passages = select_passages("How does greedy pick the most likely token from logits?",
                               [source])
    text, cited = compose(passages)
    assert cited == [1]
    assert text.startswith("From `vllm/sampling.py`, `greedy`:\n```\n")
    assert passages[0].label == "From `vllm/sampling.py`, `greedy`:"
    check_verbatim(passages, [source])
    assert "def greedy(logits: torch.Tensor) -> torch.Tensor:" in text
    assert "```\n[1]" in text


def test_never_empty_and_never_only_paths() -> None:
    sources = [lora_source(1), sampler_source(2)]
    for question in ("", "zzzz qqqq", "?"):
        passages = select_passages(question, sources)
        text, cited = compose(passages)
        assert text.strip() and cited == [1]
        assert "vLLM can serve several LoRA adapters" in text
        assert not re.fullmatch(r"[\w./\s\[\]-]+\.md[\s\[\]\d]*", text)


def test_no_sources_gives_no_passage() -> None:
    assert select_passages("anything", []) == []
    assert compose([]) == ("", [])


def test_streaming_callback_sees_passages_in_answer_order() -> None:
    sources = [lora_source(1), sampler_source(2)]
    seen: list[Passage] = []
    passages = select_passages("How many adapters can be used in one batch?", sources,
                               on_passage=seen.append)
    assert seen == passages
    assert "".join(extractive.compose_pieces(passages)) == compose(passages)[0]


def test_real_embedder_finds_a_paraphrase() -> None:
    from ragdb.embedder import load_embedder

    embedder = load_embedder()
    sources = [lora_source(1), sampler_source(2)]
    passages = select_passages("Are adapters loaded eagerly at startup?", sources,
                               embedder.embed)
    check_verbatim(passages, sources)
    text, _ = compose(passages)
    assert "Adapters are loaded lazily on the first request that names them. [1]" in text


# -- properties of splitting -----------------------------------------------------------------

_LINES = st.sampled_from([
    "```", "```python", "x = 1", "    indented code", "", "", "Run the following:",
    "- a list item", "1. numbered item", "| a | b |", "|---|---|", "# Heading",
    "A plain sentence here. Another one follows it.", "This leans on the one before.",
    "!!! note", "    admonition body text here.", "<!-- comment -->", "===", "def f():",
    "    return 1", "e.g. an abbreviation. And more",
])
_TEXTS = st.one_of(st.lists(_LINES, max_size=30).map("\n".join), st.text(max_size=300))


@settings(max_examples=300, deadline=None)
@given(text=_TEXTS, kind=st.sampled_from(["markdown", "rst", "text", "python"]))
def test_split_invariants(text: str, kind: str) -> None:
    path = "x.py" if kind == "python" else "x.md"
    source = SourceText(1, path, kind, text)
    for p in split_passages(source):
        assert 0 <= p.start < p.end <= len(text)
        assert p.text == text[p.start:p.end] == text[p.start:p.end].strip()
        if kind != "python":
            assert not ends_inside_block(p.text), "a fenced block cut in half"


@settings(max_examples=100, deadline=None)
@given(text=_TEXTS, question=st.text(max_size=40))
def test_select_invariants(text: str, question: str) -> None:
    sources = [SourceText(1, "x.md", "markdown", text), sampler_source(2)]
    passages = select_passages(question, sources)
    assert passages, "never empty while a source has text"
    check_verbatim(passages, sources)
    answer, cited = compose(passages)
    assert answer.strip() and set(cited) <= {1, 2}


@pytest.mark.parametrize("max_passages", [1, 2, 4])
def test_max_passages_is_respected(max_passages: int) -> None:
    config = passage_choice.Settings(max_passages=max_passages, min_relative=0.0, max_chars=10_000)
    passages = select_passages("adapters LoRA server options rank batch",
                               [lora_source(1), sampler_source(2)], settings=config)
    assert 1 <= len(passages) <= max_passages


def test_a_block_opened_after_an_admonition_and_cut_off_is_not_read_as_prose() -> None:
    """A chunk that opens a bare fence under `??? console` and ends inside the block: the log
    lines are no sentences (read as prose they made a 800-character 'answer')."""
    text = ('??? console "Logs"\n\n    ```\n    AUTOTUNE mm(8x2048, 2048x3072)\n'
            "      triton_mm_4 0.0130 ms 100.0% BLOCK_K=128, BLOCK_M=16, num_warps=2\n"
            "      triton_mm_8 0.0134 ms 97.4% BLOCK_K=128, BLOCK_M=16, num_warps=4\n")
    source = SourceText(1, "docs/design/torch_compile.md", "markdown", text)
    assert split_passages(source) == []


def test_a_chunk_that_starts_inside_a_block_reads_on_after_its_closing_fence() -> None:
    text = ("    x = compute(y)\n    return x\n```\n\n"
            "The helper above returns the computed value for each request.\n")
    source = SourceText(1, "docs/guide.md", "markdown", text)
    assert [p.text for p in split_passages(source)] == [
        "The helper above returns the computed value for each request."]


def test_code_cut_out_of_an_expression_is_never_a_passage() -> None:
    """A chunk of a long file may start or end inside a call: such a block is scored with the
    others but never shown (here the best match by far is the fragment)."""
    text = ('12.8 AND SCALED_MM_ARCHS)\n  message(STATUS "Not building scaled_mm_c3x_sm120 as '
            'CUDA Compiler version is not >= 12.8")\nendif()\n\n'
            "# The kernels for Blackwell need CUDA 12.8 or later\n"
            'cuda_archs_loose_intersection(SCALED_MM_ARCHS "10.0a" "${CUDA_ARCHS}")\n')
    source = SourceText(1, "CMakeLists.txt", "cmake", text)
    passages = select_passages("Which CUDA compiler version is needed for scaled_mm_c3x_sm120?",
                               [source])
    assert passages and all("12.8 AND" not in p.text for p in passages)
    assert all(spans.balanced(p.text, "cmake") for p in passages)


def test_brackets_in_strings_and_comments_do_not_count() -> None:
    assert spans.balanced('s = ")"  # 1) why\nf(s)', "python")
    assert spans.balanced("x = a[i // 2]", "python")
    assert spans.balanced("int x = f(a); // (see below", "cuda")
    assert not spans.balanced("    tp_size))\nreturn x", "python")


@pytest.mark.parametrize("path, code", [
    ("requirements/cpu.txt", True), ("requirements-dev.txt", True), ("CMakeLists.txt", True),
    ("docker/Dockerfile.cpu", True), ("setup.py", True), ("docs/usage/faq.txt", False),
    ("docs/features/lora.md", False),
])
def test_build_and_requirements_files_are_code_not_prose(path: str, code: bool) -> None:
    """A requirements list read as prose made 'sentences' of pins and markers."""
    kind = "python" if path.endswith(".py") else "markdown" if path.endswith(".md") else "text"
    assert spans.is_code(SourceText(1, path, kind, "")) is code


def test_a_sentence_cut_by_the_chunks_start_is_never_shown() -> None:
    """A chunk's start may be moved back into the previous chunk's last sentence (overlap):
    that piece of a sentence is scored with the rest but never shown."""
    text = ("initialized, we need to load the full weights to every GPU and then shard the "
            "weights. Sharding the weights during the model initialization means every "
            "layer creates only the shard of the weights it needs.\n")
    source = SourceText(1, "docs/design/sharding.md", "markdown", text)
    passages = select_passages("How are the weights sharded during initialization?", [source])
    assert passages and not any(p.text.startswith("initialized") for p in passages)
    assert passages[0].text.startswith("Sharding the weights")
    # Only a piece of a sentence to show: it is shown rather than nothing.
    alone = SourceText(1, "docs/a.md", "markdown", "and then the weights are sharded.\n")
    assert [p.text for p in select_passages("weights sharded", [alone])] == [
        "and then the weights are sharded."]


@pytest.mark.parametrize("path, kind, imports", [
    ("vllm/quark/scheme.py", "python",
     "from vllm.model_executor.layers.quantization.quark import QuarkScheme\n"
     "from vllm.model_executor.layers.quantization.kernels import (\n    ScaledMMLinearKernel)\n"),
    ("csrc/quark/scheme.cu", "cuda", '#include "quark/quantization_scheme.h"\n#include <cuda.h>\n'),
])
def test_a_block_of_imports_is_never_a_passage(path: str, kind: str, imports: str) -> None:
    """Module paths share many words with a question about the module; they answer nothing."""
    body = ("\n\nint quark_scale(int quantization_bits) { return quantization_bits * 2; }\n"
            if kind == "cuda" else
            "\n\ndef quark_scale(quantization_bits):\n    return quantization_bits * 2\n")
    source = SourceText(1, path, kind, imports + body)
    passages = select_passages("Which quantization scheme does the quark model layer use?",
                               [source])
    assert passages and all("quark_scale" in p.text for p in passages)


def test_a_tables_header_row_is_no_passage() -> None:
    text = ("| Architecture | Models | Example HF Models |\n|---|---|---|\n"
            "| `LlamaForCausalLM` | Llama 3.1, Llama 3, Llama 2 | `meta-llama/Meta-Llama-3-8B` |\n")
    source = SourceText(1, "docs/models/supported_models.md", "markdown", text)
    texts = [p.text for p in split_passages(source)]
    assert texts == ["| `LlamaForCausalLM` | Llama 3.1, Llama 3, Llama 2 | "
                     "`meta-llama/Meta-Llama-3-8B` |"]


@pytest.mark.parametrize("sentence", [
    "There are two ways to install the server package.",
    "It is recommended to use uv to create the environment.",
    "It's possible to run the server without a GPU.",
])
def test_there_is_and_it_is_recommended_stand_alone(sentence: str) -> None:
    """An expletive `there` or `it` refers to nothing before it: no join with an unrelated
    sentence of the previous paragraph."""
    text = f"If you use NVIDIA GPUs, install the wheel with pip directly.\n\n{sentence}\n"
    source = SourceText(1, "docs/getting_started/installation.md", "markdown", text)
    assert sentence in [p.text for p in split_passages(source)]


def test_python_that_starts_inside_a_block_and_leaves_it_is_never_shown() -> None:
    """A chunk cut in the middle of a function: `    return reasoning, response` then the
    function's last line one level up is no whole piece of code."""
    text = ("        return reasoning_content, response_content\n\n"
            "    return None, model_output\n\n\n"
            "def parse_reasoning(model_output: str) -> tuple[str, str]:\n"
            '    """Split the reasoning content from the response content."""\n'
            "    reasoning_content, _, response_content = model_output.partition('</think>')\n"
            "    return reasoning_content, response_content\n")
    source = SourceText(1, "vllm/reasoning/parser.py", "python", text)
    passages = select_passages("What does the parser return for reasoning_content?", [source])
    assert passages and all(p.text.startswith("def parse_reasoning") for p in passages if p.code)


def test_cmake_cut_inside_an_if_is_never_shown() -> None:
    text = ('    message(STATUS "Building Marlin MOE kernels for archs: ${MARLIN_MOE_ARCHS}")\n'
            "  else()\n"
            '    message(STATUS "Not building Marlin MOE kernels as no archs found")\n'
            "  endif()\nendif()\n\n"
            'cuda_archs_loose_intersection(MARLIN_MOE_ARCHS "8.0;8.7;9.0+PTX" "${CUDA_ARCHS}")\n'
            "if (MARLIN_MOE_ARCHS)\n"
            '  message(STATUS "Marlin MOE kernels use archs ${MARLIN_MOE_ARCHS}")\nendif()\n')
    source = SourceText(1, "CMakeLists.txt", "cmake", text)
    passages = select_passages("Which CUDA archs do the Marlin MOE kernels build for?", [source])
    assert passages and all(p.text.startswith("cuda_archs_loose_intersection") for p in passages)


def test_link_text_wrapped_onto_the_next_line_is_cleaned() -> None:
    raw = ("As mentioned in the [security\npolicy](https://github.com/vllm-project/vllm/tree/"
           "main/SECURITY.md), vulnerabilities may be reported via\n"
           "[GitHub](https://github.com/vllm-project/vllm/security/advisories/new).")
    assert clean_markup(raw) == ("As mentioned in the security policy, vulnerabilities may be "
                                 "reported via GitHub.")


def test_github_autolinks_read_as_paths_and_numbers() -> None:
    raw = ("Add a parser similar to <gh-file:vllm/reasoning/parser.py>, in <gh-dir:vllm/reasoning>"
           " (see <gh-pr:7279> and <gh-issue:9238>).")
    assert clean_markup(raw) == ("Add a parser similar to `vllm/reasoning/parser.py`, in "
                                 "`vllm/reasoning` (see pull request #7279 and issue #9238).")


def test_html_in_prose_shows_as_its_text_and_placeholders_stay() -> None:
    # YARD's docs/Tags.md writes its notes in HTML; a README's `<p align=...>`, `<br>` too.
    raw = ('<p class="note">If a tag is specific to a given project, consider namespacing it '
           "by naming it in the form <tt>projectname.tagname</tt>, ie.,\n"
           "<tt>yard.tag_signature</tt>.</p>")
    assert clean_markup(raw) == ("If a tag is specific to a given project, consider "
                                 "namespacing it by naming it in the form "
                                 "`projectname.tagname`, ie., `yard.tag_signature`.")
    assert clean_markup("Run <strong>vllm serve &lt;model&gt;</strong>.<br/>Then wait.") == (
        "Run vllm serve <model>. Then wait.")
    # Not HTML: a placeholder, a generic type, and HTML inside a fence.
    kept = "Pass `--model <name>` or a List<String> of them."
    assert clean_markup(kept) == kept
    assert clean_markup("```html\n<p>as written</p>\n```") == "```html\n<p>as written</p>\n```"


def test_html_inside_inline_code_is_code_and_stays() -> None:
    # Issue 37: requests' docs wrote "with the `<br>` tag"; shown as "with the ` ` tag", the
    # answer no longer matched its source. Tags in prose still go, tags in code stay.
    raw = ("Insert a line break with the `<br>` tag, fold with ``<details>``, show\n"
           'an image with `<img src="logo.png">`; a <b>buffer</b> is a `Vec<u8>`.')
    assert clean_markup(raw) == (
        "Insert a line break with the `<br>` tag, fold with `<details>`, show an image with "
        '`<img src="logo.png">`; a buffer is a `Vec<u8>`.')
    assert clean_markup("Write `[a](b)` for [a link](b).") == "Write `[a](b)` for a link."


def test_a_blockquote_loses_its_markers_and_reads_as_prose() -> None:
    # Session 34: fastify's and ent's docs quote their warnings; joined as they were, a
    # quoted warning read "the first one takes >   precedence".
    raw = ("> ⚠ Warning:\n> * When using both `return value` and `reply.send(value)`, the "
           "first one takes\n>   precedence, the second is discarded.\n> * Calling "
           "`reply.send()` outside\n>   of the promise needs care.")
    assert clean_markup(raw) == (
        "⚠ Warning:\n* When using both `return value` and `reply.send(value)`, the first one "
        "takes precedence, the second is discarded.\n* Calling `reply.send()` outside of the "
        "promise needs care.")
    assert clean_markup("> [!NOTE]\n> Nested\n> > quotes too.") == "Nested quotes too."
    # A doctest is no quote (shown as a block), nor a comparison inside a sentence.
    assert clean_markup(">>> f(1)\n2") == "```\n>>> f(1)\n2\n```"
    assert clean_markup("Use a > b only.") == "Use a > b only."


def test_yard_references_show_as_their_title_or_target() -> None:
    raw = ("The tags {tag:!macro} and {tag:!method} are directives; see {file:docs/Tags.md "
           "meta-data tags} and {file:README.md}.")
    assert clean_markup(raw) == ("The tags `@!macro` and `@!method` are directives; see "
                                 "meta-data tags and `README.md`.")


def test_table_rule_lines_go_and_rows_stay_rows() -> None:
    assert clean_markup("| Name | Use |\n| :--- | ---: |\n| pplx | one node |") == (
        "Name | Use\npplx | one node")
    assert clean_markup("| Name |\n|---|\n| pplx |") == "Name\npplx"


def test_a_list_items_wrapped_line_joins_the_item() -> None:
    raw = ("* `--enable-auto-tool-choice` -- **mandatory** It tells vLLM to let the model call\n"
           "tools when it deems appropriate.\n* `--tool-parser-plugin` -- **optional**")
    assert clean_markup(raw).split("\n") == [
        "* `--enable-auto-tool-choice` -- **mandatory** It tells vLLM to let the model call "
        "tools when it deems appropriate.",
        "* `--tool-parser-plugin` -- **optional**"]


@pytest.mark.parametrize("introduction, block", [
    ("The following table lists the prepare-and-finalize implementations at the time of "
     "writing,",
     "| Implementation | Comments |\n| :--- | :--- |\n"
     "| MoEPrepareAndFinalizeNoEP | Used when there is no expert parallelism. |"),
    ("- Start the vLLM server with the supported chat completion model, e.g.",
     "```bash\nvllm serve qwen/Qwen1.5-0.5B-Chat\n```"),
])
def test_a_sentence_ending_in_a_comma_or_eg_brings_its_block(introduction: str,
                                                             block: str) -> None:
    """A sentence cannot end in a comma or an "e.g.": it runs on into the block after it, so
    it is never shown without that block."""
    text = f"{introduction}\n\n{block}\n"
    source = SourceText(1, "docs/design/moe.md", "markdown", text)
    texts = [p.text for p in split_passages(source)]
    assert text.strip() in texts
    passages = select_passages("Which implementation is used with the chat completion model "
                               "when there is no expert parallelism?", [source])
    assert passages and all(p.text != introduction for p in passages)


def test_a_block_of_snippet_includes_is_never_shown() -> None:
    """The code a reader wants is in another file; the block shows only a directive."""
    text = ("The following extra parameters of the translation API are supported:\n\n"
            '```python\n--8<-- "vllm/entrypoints/openai/protocol.py:translation-extra-params"\n'
            "```\n\nThe translation API accepts the same extra sampling parameters as the "
            "transcription API.\n")
    source = SourceText(1, "docs/serving/openai_compatible_server.md", "markdown", text)
    passages = select_passages("Which extra parameters does the translation API support?",
                               [source])
    assert passages and not any("--8<--" in p.text for p in passages)


def test_a_paragraph_continuing_a_sentence_a_block_interrupted_is_never_shown() -> None:
    text = ("If you see an error about freeze_support like this:\n\n```console\nRuntimeError: "
            "An attempt has been made to start a new process\n```\n\nthen you must update your "
            "Python code to guard usage of `vllm` behind a main block.\n\nvLLM guards the "
            "usage of worker processes behind a main block in every example script.\n")
    source = SourceText(1, "docs/usage/troubleshooting.md", "markdown", text)
    passages = select_passages("How do you guard usage of vllm behind a main block?", [source])
    assert passages and not any(p.text.startswith("then you must") for p in passages)


# A realistic model class (after vllm/model_executor/layers/rotary_embedding.py): its
# definition is far longer than a code unit, so it is cut into pieces.
ROPE_PY = '''class YaRNScalingRotaryEmbedding(nn.Module):
    """RotaryEmbedding extended with YaRN method.

    Credits to Peng et al. github.com/jquesnelle/yarn
    """

    def __init__(
        self,
        head_size: int,
        rotary_dim: int,
        max_position_embeddings: int,
        base: float,
        is_neox_style: bool,
        scaling_factor: float,
        dtype: torch.dtype,
        *,
        extrapolation_factor: float = 1,
        attn_factor: float = 1,
        beta_fast: int = 32,
        beta_slow: int = 1,
    ) -> None:
        super().__init__()
        self.head_size = head_size
        self.rotary_dim = rotary_dim
        self.max_position_embeddings = max_position_embeddings
        self.base = base
        self.is_neox_style = is_neox_style
        self.scaling_factor = scaling_factor
        self.extrapolation_factor = extrapolation_factor
        self.attn_factor = attn_factor
        self.beta_fast = beta_fast
        self.beta_slow = beta_slow
        # Get n-d magnitude scaling corrected for interpolation
        self.mscale = float(
            _yarn_get_mscale(self.scaling_factor) * attn_factor)
        cache = self._compute_cos_sin_cache()
        cache = cache.to(dtype)
        self.register_buffer("cos_sin_cache", cache, persistent=False)

    def _compute_inv_freq(self, scaling_factor: float) -> torch.Tensor:
        pos_freqs = self.base**(
            torch.arange(0, self.rotary_dim, 2, dtype=torch.float) /
            self.rotary_dim)
        inv_freq_extrapolation = 1.0 / pos_freqs
        inv_freq_interpolation = 1.0 / (scaling_factor * pos_freqs)
        return inv_freq_interpolation * inv_freq_extrapolation
'''


def test_a_long_definition_shows_the_lines_that_answer_under_their_signature() -> None:
    """Asked for a constructor parameter's default, the answer shows the parameter's line with
    the class and def lines it lies in, each a verbatim line of the source, not the class's
    head."""
    source = SourceText(1, "vllm/model_executor/layers/rotary_embedding.py", "python", ROPE_PY)
    assert len(ROPE_PY) > 1200  # cut into pieces: its head alone is no answer
    passages = select_passages(
        "What is the default beta_fast of the YaRNScalingRotaryEmbedding constructor?", [source])
    check_verbatim(passages, [source])
    text, cited = compose(passages)
    assert cited == [1]
    shown = text.split("```")[1].strip("\n").split("\n")
    assert shown[0] == "class YaRNScalingRotaryEmbedding(nn.Module):"
    assert "    def __init__(" in shown[:4]
    assert "        beta_fast: int = 32," in shown
    source_lines = set(ROPE_PY.split("\n"))
    for passage in passages:
        for start, line in passage.context:
            assert ROPE_PY[start:start + len(line)] == line and line in source_lines
    for line in shown:  # every line shown is a line of the source, or marks lines left out
        assert line.strip() == "..." or any(line in s for s in source_lines), line


def test_a_long_c_function_shows_its_header_not_its_opening_brace() -> None:
    """In a brace language the signature is the function's header; a lone `{` line under it
    is no signature line."""
    body = "\n".join(f"  int64_t stride_{i} = input.stride({i});" for i in range(40))
    text = ("void rms_norm(torch::Tensor& out, torch::Tensor& input, torch::Tensor& weight,\n"
            "              double epsilon)\n{\n" + body + "\n  if (num_tokens > 4096) {\n"
            "    int block_size = 256;\n  }\n  dim3 grid(num_tokens);\n}\n")
    source = SourceText(1, "csrc/layernorm_kernels.cu", "cuda", text)
    passages = select_passages("What block_size does rms_norm use when num_tokens is large?",
                               [source])
    check_verbatim(passages, [source])
    shown = compose(passages)[0].split("```")[1].strip("\n").split("\n")
    assert shown[0] == ("void rms_norm(torch::Tensor& out, torch::Tensor& input, "
                        "torch::Tensor& weight,")
    assert shown[1] == "  ..." and "{" not in shown
    assert "    int block_size = 256;" in shown
