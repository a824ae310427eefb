"""Extractive answers hold what answers (issue 19): the passage with the asked thing, not the
one that restates the question; lists, tables and literal blocks whole; no passage that
starts mid-thought. Each case is a real source text; every passage stays verbatim."""

from __future__ import annotations

from dataclasses import replace

from ragdb.generate.extractive import Passage, SourceText, clean_markup, compose
from ragdb.generate.passage_choice import DEFAULT_SETTINGS, select_passages


def check_verbatim(passages: list[Passage], sources: list[SourceText]) -> None:
    by_number = {s.number: s for s in sources}
    for p in passages:
        assert by_number[p.number].text[p.start:p.end] == p.text
        for start, line in p.context:
            assert by_number[p.number].text[start:start + len(line)] == line


def answer_text(question: str, sources: list[SourceText], **changes: float) -> str:
    """The composed answer under the default settings with `changes`, checked verbatim."""
    settings = replace(DEFAULT_SETTINGS, **changes)  # type: ignore[arg-type]
    passages = select_passages(question, sources, settings=settings)
    check_verbatim(passages, sources)
    return compose(passages)[0]


# The answer signals off, and the passage for a part of the question left out (cover_share),
# which would otherwise bring what the signals are tested to find.
NO_SIGNALS = {"kind_weight": 0.0, "missing_kind": 0.0, "focus_weight": 0.0,
              "missing_focus": 0.0, "pointer_penalty": 0.0, "restating_penalty": 0.0,
              "define_weight": 0.0, "cover_share": 0.0}


# -- the passage that answers ------------------------------------------------------------------


CALIBRATION_MD = """# INT4 quantization

When quantizing weights to INT4, you need calibration samples to estimate the weight updates
and calibrated scales.

## Calibration data

We recommend 512 calibration samples for INT4: more samples give better scales but take
longer.

The recipe then runs the model over them once.
"""


def test_the_sentence_with_the_asked_number_wins_over_the_one_that_restates_the_question() -> None:
    """Asked "how many", the answer is the sentence holding a number the question lacks; the
    restating sentence shares more of the question's words and won on BM25 and cosine."""
    source = SourceText(1, "docs/features/quantization/int4.md", "markdown", CALIBRATION_MD)
    question = "How many calibration samples are recommended when quantizing weights to INT4?"
    assert "512" not in answer_text(question, [source], max_passages=1, **NO_SIGNALS)
    assert "512" in answer_text(question, [source], max_passages=1)


RAY_MD = """# Ray Serve LLM

Ray Serve LLM enables scalable, production-grade serving of the vLLM engine. It integrates
tightly with vLLM.

Key capabilities:

- Exposes an OpenAI-compatible HTTP API as well as a Pythonic API.
- Scales from a single GPU to a multi-node cluster without code changes.
- Provides observability and autoscaling policies through Ray dashboards and metrics.

Learn more about Ray Serve LLM with the official Ray Serve LLM documentation.
"""


def test_the_asked_things_phrase_finds_the_list_and_a_pointer_loses() -> None:
    """"What are the key capabilities of X?": the list introduced by "Key capabilities" holds
    the asked phrase; the lead sentence and the "Learn more" pointer name only X."""
    source = SourceText(1, "docs/serving/ray.md", "markdown", RAY_MD)
    question = "What are the key capabilities of Ray Serve LLM for vLLM deployment?"
    assert "Scales from a single GPU" not in answer_text(question, [source], **NO_SIGNALS)
    text = answer_text(question, [source])
    assert text.startswith("Key capabilities:")
    assert "Scales from a single GPU" in text and "Learn more" not in text


STRUCTURED_MD = """# Structured outputs

You can generate structured outputs using the OpenAI Completions and Chat API.

See also: [full example](../../examples/online_serving/structured_outputs.md)
"""


def test_a_where_answer_keeps_its_link_target() -> None:
    source = SourceText(1, "docs/features/structured_outputs.md", "markdown", STRUCTURED_MD)
    text = answer_text("Where can I find a full example of structured outputs?", [source])
    assert "full example (../../examples/online_serving/structured_outputs.md)" in text
    # Elsewhere a link reads as its text alone.
    assert clean_markup("See [the guide](guide.md).") == "See the guide."


# -- lists, tables and literal blocks whole -------------------------------------------------------


GAUDI_MD = """# Intel Gaudi

This page provides instructions on running vLLM with Intel Gaudi devices.

## Requirements

- OS: Ubuntu 22.04 LTS
- Python: 3.10
- Intel Gaudi accelerator
- Intel Gaudi software version 1.18.0

## Quick start

There are no pre-built wheels for Intel Gaudi devices, so you must build vLLM from source.
"""


def test_a_list_under_its_heading_comes_whole() -> None:
    """Asked for the requirements, the answer is the whole list under "Requirements", not one
    item of it."""
    source = SourceText(1, "docs/getting_started/installation/gaudi.md", "markdown", GAUDI_MD)
    text = answer_text("What are the system requirements for running vLLM with Intel Gaudi?",
                       [source])
    assert text.startswith("Requirements\n\n- OS: Ubuntu 22.04 LTS")
    assert all(item in text for item in ("Python: 3.10", "Intel Gaudi accelerator",
                                         "software version 1.18.0"))


EXCEPTIONS_MD = """# Exceptions

How a command ends decides what Click does.

| How the command ends | Standalone mode | `standalone_mode=False` |
| --- | --- | --- |
| It returns | Exit with code `0` | Return the value of {meth}`Command.invoke` |
| It called {meth}`Context.exit` | Exit with the given code | Return the given code |
| The user pressed {kbd}`Ctrl+C` | Print `Aborted!` and exit with code `1` | Raise {exc}`Abort` |
"""


def test_a_table_row_is_shown_under_its_column_names() -> None:
    """A row alone does not say what its cells are: it comes under the header row, and two
    rows of one table share it. MyST roles read as code."""
    source = SourceText(1, "docs/exceptions.md", "markdown", EXCEPTIONS_MD)
    text = answer_text("What does Click do when the user presses Ctrl+C, with and without "
                       "standalone mode?", [source])
    lines = text.split("\n")
    assert lines[0] == "How the command ends | Standalone mode | `standalone_mode=False`"
    assert "The user pressed `Ctrl+C` | Print `Aborted!` and exit with code `1` | Raise `Abort` " \
        "[1]" in lines
    assert text.count("How the command ends") == 1 and "{kbd}" not in text


CPU_COUNT_RST = """.. function:: cpu_count(logical=True)

  Return the number of logical CPUs in the system or ``None`` if undetermined.
  Unlike `os.cpu_count`_, this is not influenced by the environment.
  Example on a system having 2 cores + Hyper Threading:

    >>> import psutil
    >>> psutil.cpu_count()
    4
    >>> psutil.cpu_count(logical=False)
    2

  To count the physical cores only, use::

    cores = psutil.cpu_count(logical=False)
"""


def test_rst_doctests_and_literal_blocks_are_code_not_sentences() -> None:
    """A doctest and a `::` literal block keep their lines (fenced), instead of being joined
    into one "sentence" (`>>> import psutil >>> psutil.cpu_count() 4 ...`)."""
    source = SourceText(1, "docs/index.rst", "rst", CPU_COUNT_RST)
    text = answer_text("What does cpu_count return on a system having 2 cores and Hyper "
                       "Threading?", [source])
    assert "```\n>>> import psutil\n>>> psutil.cpu_count()\n4\n" in text
    assert ">>> import psutil >>>" not in text
    shown = clean_markup(CPU_COUNT_RST)
    assert "To count the physical cores only, use:\n```\ncores = psutil.cpu_count(logical=False)" \
        in shown
    assert "Unlike os.cpu_count, this" in shown  # an rst reference reads as its text


# -- no passage that starts mid-thought -----------------------------------------------------------


SPECULATORS_MD = """# MLP speculators

MLP speculative models currently need to be run without tensor parallelism, although the main
model can still use tensor parallelism. Since the speculative models are relatively small, we
still see significant speedups. However, this limitation will be fixed in a future release.

## Serving

Start the server with the speculator as the draft model.
"""


def test_a_sentence_pointing_back_inside_comes_with_what_it_points_at() -> None:
    """"However, this limitation will be fixed" needs the sentence that states the limitation,
    two sentences back."""
    source = SourceText(1, "docs/features/spec_decode.md", "markdown", SPECULATORS_MD)
    text = answer_text("What is the current limitation of MLP speculators, and will this "
                       "limitation be fixed?", [source])
    assert "this limitation will be fixed" in text
    assert text.startswith("MLP speculative models currently need to be run without tensor")


FOLLOWING_MD = """# Configuration

The following code configures the engine with a custom scheduler

```python
llm = LLM(model="facebook/opt-125m", scheduler_cls=MyScheduler)
```

Schedulers are loaded when the engine starts.
"""


def test_a_sentence_naming_the_following_code_comes_with_it() -> None:
    source = SourceText(1, "docs/configuration/scheduler.md", "markdown", FOLLOWING_MD)
    text = answer_text("How do I configure the engine with a custom scheduler?", [source])
    assert text.startswith("The following code configures the engine with a custom scheduler")
    assert 'scheduler_cls=MyScheduler' in text


# -- code: the lines that answer, whole, with the source's own prose ------------------------------


def _layer(n: int) -> str:
    return f"        self.proj_{n} = nn.Linear(hidden_size, hidden_size, bias=False)\n"


SWIN_PY = ('class SwinDecoderLayer(nn.Module):\n'
           '    """One decoder layer of the Swin model."""\n\n'
           '    def __init__(self, config: PretrainedConfig, hidden_size: int) -> None:\n'
           '        super().__init__()\n'
           + "".join(_layer(n) for n in range(24))
           + '        rope_theta = getattr(config, "rope_theta", 10000)\n'
           '        max_position_embeddings = getattr(config, "max_position_embeddings",\n'
           '                                          4096)\n'
           '        self.max_position_embeddings = max_position_embeddings\n')


def test_a_code_window_does_not_stop_inside_a_statement() -> None:
    """The window around `max_position_embeddings = getattr(config, ...,` goes on to the line
    that closes the call: the default, 4096, is on it."""
    source = SourceText(1, "vllm/model_executor/models/swin.py", "python", SWIN_PY)
    text = answer_text("What's the default value of max_position_embeddings in "
                       "SwinDecoderLayer?", [source])
    code = text.split("```")[1]
    assert "max_position_embeddings = getattr(config, \"max_position_embeddings\"," in code
    assert "4096)" in code
    assert code.count("(") == code.count(")") + code.count("...") * 0


ATTN_PY = ('    ENABLE_DROPOUT: tl.constexpr,\n'
           '    RETURN_ENCODED_SOFTMAX: tl.constexpr,\n'
           '    FP8_MIN: tl.constexpr = float8_info.min,\n'
           '    FP8_MAX: tl.constexpr = float8_info.max,\n'
           '):\n'
           '    start_m = tl.program_id(0)\n'
           '    off_h_q = tl.program_id(1)\n\n\n'
           'def attn_bwd(q, k, v, sm_scale):\n'
           '    """The backward pass of the attention kernel."""\n'
           '    return q, k, v\n')


def test_code_cut_out_of_its_statement_is_shown_as_its_lines_under_an_elision() -> None:
    """A chunk that begins inside a function's parameter list: the parameters asked for are
    shown as whole lines under `...` (the lines before are in another chunk), never the
    chunk's own first line, which may be cut inside."""
    source = SourceText(1, "vllm/attention/ops/triton_flash_attention.py", "python", ATTN_PY)
    passages = select_passages("What are the default values of FP8_MIN and FP8_MAX?", [source])
    check_verbatim(passages, [source])
    text = compose(passages)[0]
    code = text.split("```")[1].strip("\n").split("\n")
    assert code[0].strip() == "..."
    assert "FP8_MIN: tl.constexpr = float8_info.min," in [line.strip() for line in code]
    assert "FP8_MAX: tl.constexpr = float8_info.max," in [line.strip() for line in code]
    assert not any(line.startswith("ENABLE_DROPOUT") for line in code)
    assert any(p.elided for p in passages)


CONNECTOR_PY = ('''class NixlConnector(KVConnectorBase):

    def get_num_new_matched_tokens(
            self, request: "Request",
            num_computed_tokens: int) -> tuple[int, bool]:
        """Get the number of tokens that can be loaded from the external KV cache beyond
        the computed ones, and whether they load asynchronously.

        Args:
            request: the request.
        """
''' + "".join(f"        self.stat_{n} = self.counters.get({n}, 0)\n" for n in range(20))
                + '''        assert self.connector_scheduler is not None
        return self.connector_scheduler.get_num_new_matched_tokens(
            request, num_computed_tokens)
''')

SCHEDULER_PY = '''def schedule(self) -> None:
    for request in self.waiting:
        matched, load_async = self.connector.get_num_new_matched_tokens(
            request, request.num_computed_tokens)
        request.num_computed_tokens += matched
'''


def test_the_definition_of_the_asked_name_wins_and_leads_with_its_docstring() -> None:
    """Asked what `get_num_new_matched_tokens` returns, the answer is its definition (not a
    caller), shown as the lines that return under the signature, and led by the first
    sentence of its docstring, which the window leaves out: the source's own prose."""
    sources = [SourceText(1, "vllm/core/scheduler.py", "python", SCHEDULER_PY),
               SourceText(2, "vllm/distributed/nixl_connector.py", "python", CONNECTOR_PY)]
    question = ("What does the get_num_new_matched_tokens method in NixlConnector return "
                "from connector_scheduler?")
    passages = select_passages(question, sources, settings=replace(
        DEFAULT_SETTINGS, max_passages=1))
    check_verbatim(passages, sources)
    text = compose(passages)[0]
    assert text.startswith("Get the number of tokens that can be loaded from the external KV "
                           "cache beyond the computed ones, and whether they load "
                           "asynchronously. [2]")
    code = text.split("```")[1]
    assert "return self.connector_scheduler.get_num_new_matched_tokens(" in code
    assert '"""' not in code and "self.waiting" not in text and "[1]" not in text


BANNER_PY = '''# ---------------------------------------------------------------------------
# MLPerf Dataset Implementation
# ---------------------------------------------------------------------------


class MLPerfDataset(HuggingFaceDataset):
    SUPPORTED_DATASET_PATHS = {
        "mgoin/mlperf-inference-llama2-data",
    }
'''


def test_a_comment_banner_is_never_a_passage() -> None:
    source = SourceText(1, "benchmarks/datasets.py", "python", BANNER_PY)
    text = answer_text("What datasets does the MLPerf Dataset implementation support?",
                       [source])
    assert "# ----" not in text and "SUPPORTED_DATASET_PATHS" in text


CMAKE = ('12.8 AND SCALED_MM_ARCHS)\n'
         '    message(STATUS "Building scaled_mm_c3x_sm90 for archs: ${SCALED_MM_ARCHS}")\n'
         '  else()\n'
         '    message(STATUS "Not building scaled_mm_c3x_sm90 as no compatible archs found")\n'
         '  endif()\n'
         '  endif()\n'
         '  # The cutlass_scaled_mm kernels for Blackwell SM100 require CUDA 12.8 or later\n'
         '  cuda_archs_loose_intersection(SCALED_MM_ARCHS "10.0a;10.1a" "${CUDA_ARCHS}")\n'
         '  if(${CMAKE_CUDA_COMPILER_VERSION} VERSION_GREATER_EQUAL 12.8 AND SCALED_MM_ARCHS)\n'
         '    set(SRCS "csrc/quantization/cutlass_w8a8/scaled_mm_c3x_sm100.cu")\n'
         + "".join(f'    list(APPEND VLLM_GPU_FLAGS "-DFLAG_{n}=1")\n' for n in range(30))
         + '  endif()\n')


def test_a_code_window_does_not_start_with_lines_that_close_earlier_blocks() -> None:
    """A chunk of a long CMake file that begins inside a line and inside an `else()`: the
    window starts at the lines that answer, not at the chunk's cut first line, the tail of
    the `else()` or the `endif()` lines that close it."""
    source = SourceText(1, "CMakeLists.txt", "cmake", CMAKE)
    text = answer_text("Which CUDA compiler version do the cutlass_scaled_mm kernels for "
                       "Blackwell SM100 require?", [source])
    code = text.split("```")[1].strip("\n").split("\n")
    assert code[0].startswith("# The cutlass_scaled_mm kernels for Blackwell SM100")
    assert not any(line.startswith("12.8 AND") for line in code)  # the cut first line
    assert "Not building" not in text and "else()" not in text
