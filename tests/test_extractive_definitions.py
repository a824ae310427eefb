"""Code windows that keep the line setting the name a question asks about: the list literal,
the parameter's default, the constant, rather than only the lines that use it.

The sources are chunks of real files as the search returned them for bench_accept's sample
(tests/sources/, verbatim), asked the sample's questions.
"""

from __future__ import annotations

from ragdb.generate.answer_signals import asked, signals
from ragdb.generate.code_window import defines_asked, setting_passage
from ragdb.generate.spans import terms
from tests.test_extractive_coherence import answer, code_lines, source

ARCHITECTURE = ("model_loader_architecture", "vllm/model_executor/model_loader/utils.py",
                "python")
ROUTING = ("routing_simulator_simulate", "vllm/model_executor/layers/fused_moe/"
           "routing_simulator.py", "python")


def test_a_window_using_an_asked_list_shows_the_list_it_is_set_to() -> None:
    """Asked which quantization methods Mixtral supports, the window showed only
    `... not in mixtral_supported` and elided the `mixtral_supported = [...]` list above it:
    the line that sets the asked name is taken, with the list whole."""
    text = answer("What quantization methods are supported for Mixtral models in vLLM?",
                  [source(*ARCHITECTURE)])
    code = [line.strip() for line in code_lines(text, elisions=False)]
    assert "mixtral_supported = [" in code
    for method in ('"fp8",', '"compressed-tensors",', '"gptq_marlin",', '"awq_marlin",',
                   '"quark",', '"bitsandbytes",'):
        assert method in code
    assert "and model_config.quantization not in mixtral_supported" in code


def test_a_window_on_an_asked_parameter_shows_its_default_in_the_signature() -> None:
    """Asked the default of `indices_type`, the window showed the docstring's line about it
    and elided the signature line that holds `= None`: that line now wins the window."""
    text = answer("What is the default data type for indices_type parameter in the routing "
                  "simulator's expert selection method?", [source(*ROUTING)])
    code = [line.strip() for line in code_lines(text, elisions=False)]
    assert "indices_type: Optional[torch.dtype] = None," in code
    assert code[0] == "def simulate_routing("


def test_only_a_line_setting_a_name_of_the_question_counts_as_its_definition() -> None:
    """Assignments, annotated defaults and constants of a name whose words the question holds
    count; a call passing the name on (`x=x`), a comparison, a one-word name and a name the
    question does not ask about do not."""
    query = set(terms("What is the default of indices_type, and the value of UTC_Z, and which "
                      "methods are supported for Mixtral, with weights, in the KV cache?"))
    for line in ("        indices_type: Optional[torch.dtype] = None,",
                 "    mixtral_supported = [",
                 "pub(crate) const UTC_Z: Opt = 1 << 7;",
                 "        self.indices_type = torch.long",
                 "#define UTC_Z 128"):
        assert defines_asked(line, query), line
    for line in ("            indices_type=indices_type,",
                 "    if indices_type == torch.long:",
                 "    default = 3",
                 "    supported_bits = [1, 2]",
                 "    _ = 1",
                 "        self.num_kv_cache_groups = len(kv_cache_config.kv_cache_groups)",
                 "    x = 1",
                 "        q_weight = Parameter(qkv_weight[:q_proj_size], requires_grad=False)",
                 "        indices_type: Data type for expert indices"):
        assert not defines_asked(line, query), line


W4A16 = "vllm/model_executor/layers/quantization/compressed_tensors/schemes/" \
    "compressed_tensors_w4a16_24.py"
KEYE = "vllm/model_executor/models/keye.py"


def test_code_using_an_asked_constant_is_shown_with_the_statement_setting_it() -> None:
    """Asked what value `_MAX_IMAGE_SIZE` has, the answer showed only the method passing it
    on; the module's `_MAX_IMAGE_SIZE = 9999999`, in another chunk of the same file, is shown
    with it."""
    text = answer("What value does _MAX_IMAGE_SIZE use in vLLM's keye model for determining "
                  "the image size with most features?",
                  [source("keye_most_features", KEYE, "python", 1),
                   source("keye_constants", KEYE, "python", 2)])
    assert "image_width=_MAX_IMAGE_SIZE," in [x.strip() for x in code_lines(text, 0)]
    assert code_lines(text, 1) == ["_MAX_IMAGE_SIZE = 9999999"]


def test_an_asked_constant_comes_with_the_statements_it_is_made_of() -> None:
    """`W4A16SPARSE24_SUPPORTED_BITS = list(W4A16SPARSE24_SUPPORTED_TYPES_MAP.keys())` says
    no value by itself: the map just above it, whose keys it is, is shown whole with it (for
    the `__init__` that names the constant, from the chunk of module lines of its file)."""
    query = set(terms("What are the supported bit values for W4A16Sparse24 quantization in "
                      "vLLM's compressed tensors?"))
    init = source("w4a16_24_init", W4A16, "python", 1)
    constants = source("w4a16_24_constants", W4A16, "python", 2)
    found = setting_passage(constants, init.text, query, 1.0, [])
    assert found is not None and found.text.split("\n") == [
        "W4A16SPARSE24_SUPPORTED_TYPES_MAP = {",
        "    4: scalar_types.uint4b8,",
        "}",
        "W4A16SPARSE24_SUPPORTED_BITS = list(W4A16SPARSE24_SUPPORTED_TYPES_MAP.keys())"]
    assert found.text == constants.text[found.start:found.end]
    # Already on view: not shown twice.
    assert setting_passage(constants, init.text, query, 1.0, [(found.start, found.end)]) is None


def test_a_setting_inside_a_definition_is_not_shown_apart_from_it() -> None:
    """Only a module's own statements join the answer: a parameter's default or a local of
    another chunk means nothing without the definition around it."""
    question = ("What is the default data type for indices_type parameter in the routing "
                "simulator's expert selection method?")
    routing = source(*ROUTING)
    other = source(ROUTING[0], ROUTING[1], ROUTING[2], 2)
    text = answer(question, [routing, other])
    assert text.count("indices_type: Optional[torch.dtype] = None,") == 1


def test_a_method_the_question_names_by_a_plain_word_counts_as_an_asked_name() -> None:
    """"Gemma2DecoderLayer's forward method": code defining `forward` defines an asked name
    as much as code defining the class does (it counted for nothing, so the class's head
    outranked the method that answers); "the helper function" names nothing."""
    ask = asked("What happens when the residual parameter is None in Gemma2DecoderLayer's "
                "forward method?")
    assert {"gemma2decoderlayer", "forward"} <= ask.names
    forward = source("gemma2_decoder_forward", "vllm/model_executor/models/gemma2.py",
                     "python").text
    assert signals(ask, forward, forward, code=True, listed=False).defines == 0.5
    assert "helper" not in asked("What does the helper function return?").names


def test_code_next_to_the_shown_code_holding_a_question_term_it_lacks_is_shown() -> None:
    """"... and what about the deprecated ones?": the flags' block was shown and the
    `// deprecated` constants right after it (`= 0`), the only lines holding "deprecated",
    were left out; they are shown too."""
    text = answer("In orjson's Rust source, what integer values do option flags such as "
                  "`INDENT_2`, `UTC_Z` and `APPEND_NEWLINE` have, and what about the deprecated "
                  "ones?", [source("orjson_opt", "src/opt.rs", "rust")])
    code = [line for block in range(text.count("```") // 2)
            for line in code_lines(text, block)]
    for line in ("pub(crate) const INDENT_2: Opt = 1;", "pub(crate) const UTC_Z: Opt = 1 << 7;",
                 "// deprecated", "pub(crate) const SERIALIZE_DATACLASS: Opt = 0;",
                 "pub(crate) const SERIALIZE_UUID: Opt = 0;"):
        assert line in code
