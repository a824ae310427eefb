"""Extractive answers a reader can follow: code under a line naming it, code windows that end
with the blocks, statements and docstrings they begin and begin with the comments they show,
sentences that stand without the one before them.

The sources are chunks of real files as the search returned them for bench_accept's sample
(tests/sources/, verbatim), asked the sample's questions.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.bench_answer import verbatim_share
from ragdb.generate.answer_units import source_units
from ragdb.generate.extractive import SourceText, compose, is_label
from ragdb.generate.passage_choice import select_passages
from tests.test_extractive import check_verbatim

SOURCES = Path(__file__).parent / "sources"


def source(name: str, path: str, kind: str, number: int = 1) -> SourceText:
    return SourceText(number, path, kind, (SOURCES / f"{name}.txt").read_text())


def answer(question: str, sources: list[SourceText]) -> str:
    """The composed answer, its passages checked verbatim (and by bench_answer's check, which
    reads the answer as shown)."""
    passages = select_passages(question, sources)
    check_verbatim(passages, sources)
    text = compose(passages)[0]
    found, total = verbatim_share(text, [s.text for s in sources])
    assert found == total > 0
    return text


def code_lines(text: str, block: int = 0, elisions: bool = True) -> list[str]:
    lines = text.split("```")[2 * block + 1].strip("\n").split("\n")
    return lines if elisions else [line for line in lines if line.strip() != "..."]


POOLER = ("llava_next_video_pooler", "vllm/model_executor/models/llava_next_video.py",
          "python")


def test_a_code_block_is_under_a_label_naming_its_file_and_definition() -> None:
    """Code is never a bare dump: a line of ragdb's own names the file and the definition the
    lines show (`From `path`, `name`:`), right above the fence; it is not a quote, and the
    verbatim check leaves it out."""
    text = answer("What are the supported spatial pooling modes in LlavaNextVideoPooler?",
                  [source(*POOLER)])
    label = "From `vllm/model_executor/models/llava_next_video.py`, `LlavaNextVideoPooler`:"
    assert text.startswith(label + "\n```\n")
    assert is_label(label) and not is_label("From the docs:")


def test_a_window_ending_on_an_if_shows_the_whole_if_elif_else_chain() -> None:
    """The window of the pooler's `__init__` stopped at `if mode == "average":`, its body and
    the other modes cut off; it now ends with the chain's `else` branch."""
    text = answer("What are the supported spatial pooling modes in LlavaNextVideoPooler?",
                  [source(*POOLER)])
    code = [line.strip() for line in code_lines(text, elisions=False)]
    assert code[-1] != 'if mode == "average":'
    for line in ('if mode == "average":', 'elif mode == "max":', "else:",
                 "self.pool = nn.MaxPool2d(kernel_size=stride, stride=stride)"):
        assert line in code
    assert code[-1].startswith('f"Unknown pooling mode: {mode}.')


def test_a_window_ending_on_a_comment_shows_the_statement_it_is_about() -> None:
    """`# NOTE: ... this condition is for v0 compatibility.` ended the window of the forward
    pass; the `elif inputs_embeds is None:` branch it is about (where input_ids becomes None)
    is shown with it."""
    forward = source("llava_next_video_forward", "vllm/model_executor/models/"
                     "llava_next_video.py", "python")
    text = answer("What happens to input_ids when inputs_embeds is None in LlaVA-NeXT-Video's "
                  "forward pass?", [forward])
    code = [line.strip() for line in code_lines(text, elisions=False)]
    assert not code[-1].startswith("#")
    assert "elif inputs_embeds is None:" in code and code[-1] == "input_ids = None"


def test_a_window_begins_with_the_first_line_of_a_comment_it_shows() -> None:
    """A window began on `#  kernels calls made within the graph`, the second line of a
    comment: the comment is shown from its first line."""
    runner = source("model_runner_cudagraph", "vllm/worker/model_runner.py", "python")
    text = answer("What conditions must be met for vLLM's ModelRunner to use CUDA graphs "
                  "instead of the regular model?", [runner])
    code = code_lines(text)
    assert code[0] == "# NOTE: this is nn.Module so the profiler can properly capture/group"
    assert code[1] == "#  kernels calls made within the graph"
    assert "`CUDAGraphRunner`" in text.split("\n")[0]


def test_a_window_neither_begins_nor_ends_inside_a_docstring() -> None:
    """Windows began on a docstring's last line and its closing quotes, and one ended inside a
    docstring, mid-sentence (`must be in the same order as`): each docstring is shown whole."""
    utils = source("worker_utils_sanity", "vllm/v1/worker/utils.py", "python")
    text = answer("What shape must multimodal embeddings have when returned from "
                  "get_multimodal_embeddings in vLLM multimodal models?", [utils])
    for n in range(text.count("```") // 2):
        code = "\n".join(code_lines(text, n))
        assert code.count('"""') % 2 == 0
    assert "Expected multimodal embeddings to be a list/tuple of 2D tensors" in text


def test_a_window_closing_a_call_begun_above_it_is_shown_under_an_elision() -> None:
    """The metrics window begins inside `BenchmarkMetrics(` (its `)` closes a call begun
    lines above): `...` marks the lines left out, instead of a line that seems to start it."""
    serving = source("benchmark_serving_metrics", "benchmarks/benchmark_serving.py", "python")
    text = answer("What are the default percentiles calculated for ITL and E2EL metrics in "
                  "vLLM's serve benchmark?", [serving])
    code = code_lines(text)
    assert code[0].strip() == "..."
    assert any("percentiles_e2el_ms=[" in line for line in code)


def test_a_leading_connective_is_left_out_with_the_sentence_it_links_to() -> None:
    """`Then, vLLM supports the following usage patterns:` shown without the sentence before
    it read `Then,` with nothing before it: the passage begins at `vLLM supports`."""
    usage = source("usage_README", "docs/usage/README.md", "markdown")
    text = answer("What are the three main usage patterns supported by vLLM?", [usage])
    assert text.startswith("vLLM supports the following usage patterns:")
    assert "Then," not in text and "Train or fine-tune a model." in text


def test_a_chunk_beginning_with_a_closing_fence_quotes_no_code_as_prose() -> None:
    """A docs chunk that begins inside a code block (`    print(...)`, then its closing fence,
    then a ```python block): the closing fence is known by the language fence after it, and
    the code line before it is never a sentence."""
    chunk = source("quickstart_chunk", "docs/getting_started/quickstart.md", "markdown")
    starts = [chunk.text[u.start:u.start + 6] for u in source_units(chunk)]
    assert "print(" not in starts
    text = answer("How do you apply chat templates to prompts in vLLM?", [chunk])
    assert not text.startswith("print(")
    assert "does not automatically apply the model's chat template" in text


def test_a_label_names_each_definition_the_lines_show() -> None:
    """A window that begins in one method's docstring and goes on into the next method names
    both, under their class (the window's context line), not only the first."""
    interfaces = source("interfaces_multimodal", "vllm/model_executor/models/interfaces.py",
                        "python")
    text = answer("What shape must multimodal embeddings have when returned from "
                  "get_multimodal_embeddings in vLLM multimodal models?", [interfaces])
    assert text.split("\n")[0] == (
        "From `vllm/model_executor/models/interfaces.py`, "
        "`SupportsMultiModal.get_placeholder_str`, "
        "`SupportsMultiModal.get_multimodal_embeddings`:")


def test_a_comment_of_several_lines_is_shown_from_its_first_and_a_method_is_named() -> None:
    """A TypeScript window began on `// session.`, the last line of a three-line comment: the
    comment is shown from `// If the entry occurred ...`, and the label names the method the
    lines lie in (a header with no keyword: `_processEntry(entry: LayoutShift) {`)."""
    manager = source("LayoutShiftManager", "src/lib/LayoutShiftManager.ts", "typescript")
    text = answer("How does web-vitals group layout shifts into session windows when "
                  "computing cumulative layout shift?", [manager])
    assert text.split("\n")[0] == ("From `src/lib/LayoutShiftManager.ts`, "
                                   "`LayoutShiftManager._processEntry`:")
    comment = [line.strip() for line in code_lines(text) if line.strip().startswith("//")]
    assert comment[0].startswith("// If the entry occurred less than 1 second after")
    assert "entry.startTime - firstSessionEntry.startTime < 5000" in text


def test_a_contrast_leaning_on_the_sentence_before_it_is_shown_with_it() -> None:
    """`For comparison, the standard library serializes ...` leans on what it compares: it is
    shown with the sentences it stands on, from `Serialize `dict` ...`."""
    readme = source("orjson_README_opt_non_str_keys", "README.md", "markdown")
    units = [readme.text[u.start:u.end] for u in source_units(readme)]
    assert not any(u.startswith("For comparison") for u in units)
    text = answer("Which libraries does orjson use to turn integers and floats into text?",
                  [readme])
    assert text.startswith("Serialize `dict` and `frozendict` keys of type other than `str`.")
    assert "For comparison, the standard library serializes" in text


def test_a_tables_legend_is_never_a_passage() -> None:
    """`✅︎ indicates that the quantization method is supported on the specified hardware.`
    says what a mark in the table means; without the table it answers nothing."""
    hardware = source("quantization_supported_hardware",
                      "docs/features/quantization/supported_hardware.md", "markdown")
    text = answer("What quantization methods are supported by vLLM CPU?", [hardware])
    assert "indicates that the quantization method" not in text


def test_a_window_that_stops_inside_its_definition_ends_with_an_elision() -> None:
    """The forward pass goes on past the window (`hidden_states = self.language_model...`):
    a `...` line says so, instead of code that seems to end there."""
    forward = source("llava_next_video_forward", "vllm/model_executor/models/"
                     "llava_next_video.py", "python")
    text = answer("What happens to input_ids when inputs_embeds is None in LlaVA-NeXT-Video's "
                  "forward pass?", [forward])
    code = code_lines(text)
    assert code[-1].strip() == "..." and code[-2].strip() == "input_ids = None"


def test_a_c_window_does_not_end_inside_a_block_comment() -> None:
    """A yyjson.h window stopped inside a `/** ... */` doc comment (after `@return`): the
    comment is shown to its `*/`."""
    header = source("yyjson_mut_arr", "include/yyjson/yyjson.h", "c")
    text = answer("How deeply can arrays and objects be nested before orjson's parser refuses "
                  "a document, and what else makes parsing fail?", [header])
    for n in range(text.count("```") // 2):
        code = [line.strip() for line in code_lines(text, n, elisions=False)]
        if code[0].startswith("/**"):
            assert "*/" in code
