"""Extractive answers, round 6 of issue 19: the rules of passage choice the strict readers'
rejections pointed at (a list question given one bullet of the list, a pointer sentence
chosen over the content, the wrong method of the right class). Each case is a real source
text of the vLLM tree; every passage stays verbatim (check_verbatim)."""

from __future__ import annotations

from dataclasses import replace

from ragdb.generate.answer_signals import asked, signals
from ragdb.generate.answer_units import split_passages
from ragdb.generate.extractive import SourceText, compose
from ragdb.generate.passage_choice import DEFAULT_SETTINGS, select_passages
from tests.test_extractive_choice import check_verbatim
from tests.test_extractive_coherence import answer, code_lines, source

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
    # The list under its label; before it, the sentence on the validation before a release,
    # the question's other words, which the list does not hold (cover_share).
    assert "[1]\n\n**Current Coverage:**" in text
    assert text.startswith("Before each release, we perform end-to-end performance validation")


# vLLM 0.10.1 docs/features/quantization/supported_hardware.md, the chunk after the chart
# (its first rows cut by the chunk's start), and docs/getting_started/installation/cpu.md.
HARDWARE_MD = """| GGUF                  | ✅︎      | ✅︎       | ❌          | ❌         |
| INC (W8A8)            | ❌      | ❌       | ❌          | ✅︎         |

- Volta refers to SM 7.0, Turing to SM 7.5, Ampere to SM 8.0/8.6, Ada to SM 8.9, and Hopper \
to SM 9.0.
- ✅︎ indicates that the quantization method is supported on the specified hardware.
- ❌ indicates that the quantization method is not supported on the specified hardware.

!!! note
    This compatibility chart is subject to change as vLLM continues to evolve and expand its \
support for different hardware platforms and quantization methods.

    For the most up-to-date information on hardware support and quantization methods, please \
refer to <gh-dir:vllm/model_executor/layers/quantization> or consult with the vLLM development \
team."""

CPU_FAQ_MD = """### Which quantization configs does vLLM CPU support?

- vLLM CPU supports quantizations:
    - AWQ (x86 only)
    - GPTQ (x86 only)
    - compressed-tensor INT8 W8A8 (x86, s390x)

### (x86 only) What is the purpose of `VLLM_CPU_MOE_PREPACK` and `VLLM_CPU_SGL_KERNEL`?

- Both of them requires `amx` CPU flag.
    - `VLLM_CPU_MOE_PREPACK` can provides better performance for MoE models
    - `VLLM_CPU_SGL_KERNEL` can provides better performance for MoE models and small-batch \
scenarios."""


def test_a_pointer_yields_to_a_unit_that_holds_the_content() -> None:
    """"Please refer to ... for the most up-to-date information on quantization methods"
    holds every word of the question and won, halved as a pointer, over the list of methods
    from the second source; a pointer is now taken only where nothing else scores half of it,
    and a "where" question still gets it."""
    sources = [SourceText(1, "docs/features/quantization/supported_hardware.md", "markdown",
                          HARDWARE_MD),
               SourceText(2, "docs/getting_started/installation/cpu.md", "markdown",
                          CPU_FAQ_MD)]
    question = "Which quantization methods does vLLM support on CPU hardware?"
    passages = select_passages(question, sources)
    check_verbatim(passages, sources)
    text = compose(passages)[0]
    assert "GPTQ (x86 only)" in text
    assert "please refer to" not in text
    where = select_passages("Where can I find up-to-date information on quantization methods "
                            "and hardware support?", sources)
    assert "please refer to" in compose(where)[0]


# vLLM 0.10.1 docs/getting_started/installation/gpu/cuda.inc.md, two chunks of the source
# build section.
CUDA_EDITABLE_MD = """commit in the installation using the \
`VLLM_PRECOMPILED_WHEEL_LOCATION` environment variable.

```bash
export VLLM_COMMIT=72d9c316d3f6ede485146fe5aabd4e61dbc59069 # use full commit hash from the main \
branch
export VLLM_PRECOMPILED_WHEEL_LOCATION=https://wheels.vllm.ai/${VLLM_COMMIT}/\
vllm-1.0.0.dev-cp38-abi3-manylinux1_x86_64.whl
uv pip install --editable .
```

You can find more information about vLLM's wheels in \
[install-the-latest-code][install-the-latest-code].

!!! note
    There is a possibility that your source code may have a different commit ID compared to \
the latest vLLM wheel, which could potentially lead to unknown errors.
    It is recommended to use the same commit ID for the source code as the vLLM wheel you have \
installed. Please refer to [install-the-latest-code][install-the-latest-code] for instructions \
on how to install a specified wheel."""

CUDA_FULL_BUILD_MD = """#### Full build (with compilation)

If you want to modify C++ or CUDA code, you'll need to build vLLM from source. This can take \
several minutes:

```bash
git clone https://github.com/vllm-project/vllm.git
cd vllm
uv pip install -e .
```

!!! tip
    Building from source requires a lot of compilation. If you are building from source \
repeatedly, it's more efficient to cache the compilation results."""


def test_find_more_information_and_a_see_after_a_comma_are_pointers() -> None:
    """"You can find more information about vLLM's wheels in ..." (the whole answer to how to
    build a wheel from source, in the answers the readers rejected) and "For pythonic tool
    calling ..., see the `pythonic` tool parser below" send the reader elsewhere, as a
    sentence starting "See ..." does; "as you can see" does not."""
    ask = asked("How do I build a vLLM wheel from source?")

    def pointer(sentence: str) -> bool:
        return signals(ask, sentence, sentence, code=False, listed=False).pointer

    source = SourceText(1, "docs/getting_started/installation/gpu/cuda.inc.md", "markdown",
                        CUDA_EDITABLE_MD)
    found = next(p.text for p in split_passages(source) if p.text.startswith("You can find"))
    assert pointer(found)
    assert pointer("For pythonic tool calling introduced by the Llama-3.2 models, see the "
                   "`pythonic` tool parser below.")
    assert not pointer("As you can see, the wheel is built with `uv pip install -e .`.")
    assert not pointer("If you want to modify C++ or CUDA code, you'll need to build vLLM "
                       "from source.")


def test_an_introduction_leaning_on_the_sentence_before_it_comes_with_that_sentence() -> None:
    """"This can take several minutes:" introduces the build commands but says nothing
    alone: the unit of the commands starts at the sentence it leans on (what "this" is)."""
    source = SourceText(1, "docs/getting_started/installation/gpu/cuda.inc.md", "markdown",
                        CUDA_FULL_BUILD_MD)
    passages = select_passages("How do I build vLLM from source to modify its CUDA code?",
                               [source], settings=replace(DEFAULT_SETTINGS, max_passages=1))
    check_verbatim(passages, [source])
    text = compose(passages)[0]
    assert text.startswith("If you want to modify C++ or CUDA code, you'll need to build vLLM "
                           "from source. This can take several minutes:")
    assert "uv pip install -e ." in text


GEMMA2 = "vllm/model_executor/models/gemma2.py"


def test_the_method_the_question_names_wins_over_its_class_head_and_init() -> None:
    """Asked about `residual` in Gemma2DecoderLayer's forward method, the class's head (its
    one line shares the class's name, rare in the sources) was shown as its `__init__`
    window; the chunk holding `def forward` answers. Code that defines the routine the
    question names weighs more, and other code less; `__init__` names no routine, since
    every class has one."""
    sources = [source("gemma2_decoder_forward", GEMMA2, "python", 1),
               source("gemma2_decoder_layer_init", GEMMA2, "python", 2)]
    question = ("What happens when the residual parameter is None in Gemma2DecoderLayer's "
                "forward method?")
    text = answer(question, sources)
    code = [line.strip() for line in code_lines(text)]
    assert code[0] == "def forward(" and "if residual is None:" in code
    assert "def __init__(" not in text
    assert asked(question).routines == {"forward"}
    assert not asked("What is the default of bias in the __init__ method of the convolution "
                     "class?").routines


# psutil docs/index.rst, two chunks in a row of the "C heap introspection" section: the
# second starts with the last line of the first (the chunker's overlap).
HEAP_RST = """C heap introspection
====================

The following functions provide direct access to the platform's native C heap
allocator (such as glibc's ``malloc`` on Linux or ``jemalloc`` on BSD). They
are low-level interfaces intended for detecting memory leaks in C extensions,
which are usually not revealed via standard RSS/VMS metrics. These functions do
not reflect Python object memory; they operate solely on allocations made in C
via ``malloc()``, ``free()``, and related calls.

The general idea behind these functions is straightforward: capture the state
of the C heap before and after repeatedly invoking a function implemented in a
C extension, and compare the results. If ``heap_used`` or ``mmap_used`` grows
steadily across iterations, the C code is likely retaining memory it should be
releasing. This provides an allocator-level way to spot native leaks that
Python's memory tracking misses."""

HEAP_NEXT_RST = """Python's memory tracking misses.

Checkout `psleak`_ project to see a practical example of how these APIs can be
used to detect memory leaks in C extensions.

.. function:: heap_info()

  Return low-level heap statistics from the system's C allocator. On Linux,
  this exposes ``uordblks`` and ``hblkhd`` fields from glibc's `mallinfo2`_."""


def test_a_chunk_opening_with_the_end_of_a_sentence_of_another_chunk_does_not_show_it() -> None:
    """The second chunk opens with "Python's memory tracking misses.", the end of the first
    chunk's last sentence: shown, it was a stray fragment repeated under the full sentence.
    A source's first sentence that another source of the same file has after a word (no
    sentence end, no blank line before it) is cut out of its sentence; a source of another
    file, or one whose copy starts a paragraph, is not."""
    first = SourceText(1, "docs/index.rst", "rst", HEAP_RST)
    second = SourceText(2, "docs/index.rst", "rst", HEAP_NEXT_RST)
    question = "How do I detect memory leaks in C extensions with psutil?"
    for sources in ([first, second], [second, first]):
        passages = select_passages(question, sources)
        check_verbatim(passages, sources)
        assert not any(p.number == second.number and p.start == 0 for p in passages)
    alone = replace(second, file_path="docs/other.rst")
    assert any(p.start == 0 for p in select_passages("What does Python's memory tracking "
                                                     "miss?", [alone]))


NEMOTRON_VL = "vllm/model_executor/models/nemotron_vl.py"


def test_asked_for_a_default_the_code_whose_line_sets_the_name_wins() -> None:
    """Asked the default of `min_dynamic_patch`, the answer was a method whose signature
    passes `min_dynamic_patch: Optional[int] = None` on; the processor's `__init__`, whose line
    `min_dynamic_patch = 1` sets the value used, was left out. Code with a line setting an
    asked name weighs more where the question asks for a value or a default. The first three
    chunks the search returned, with the real MiniLM vectors (as answers are scored)."""
    from ragdb.embedder import load_embedder

    sources = [source(f"nemotron_vl_{n}", NEMOTRON_VL, "python", n) for n in range(1, 4)]
    passages = select_passages("What is the default value for min_dynamic_patch parameter in "
                               "NemotronVL model initialization?", sources,
                               load_embedder().embed)
    check_verbatim(passages, sources)
    text = compose(passages)[0]
    assert "min_dynamic_patch = 1" in [line.strip() for block in range(text.count("```") // 2)
                                       for line in code_lines(text, block)]
