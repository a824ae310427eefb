"""Code windows that keep the line setting the name a question asks about: the list literal,
the parameter's default, the constant, rather than only the lines that use it.

The sources are chunks of real files as the search returned them for bench_accept's sample
(tests/sources/, verbatim), asked the sample's questions.
"""

from __future__ import annotations

from ragdb.generate.code_window import defines_asked
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
