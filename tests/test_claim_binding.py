"""The claim check's exact rules for what a strict reader found unsupported in written answers,
on real source texts (vllm-0.10.1 and orjson, verbatim; no model is run here).

Each rule holds a sentence to what its cited source states: a default must be the value the
source binds to that name as its default; a "not" must be said where the sentence's words are.
Each test also keeps, or has the rule itself pass, the correct sentence about the same source:
the rule drops only the claim. (Sentences the order rule alone now drops, once the word-level
rules it made redundant left the code, are asserted dropped.)
"""

from __future__ import annotations

from ragdb.generate.checking import CitedSource, check_answer
from ragdb.generate.claim_binding import default_unbound

# vllm/model_executor/layers/fused_moe/routing_simulator.py (verbatim, the chunk the sample
# cited: the signature, docstring and body of RoutingSimulator.simulate_routing).
ROUTING = CitedSource(1, "vllm/model_executor/layers/fused_moe/routing_simulator.py", (
    "    @staticmethod\n"
    "    def simulate_routing(\n"
    "        hidden_states: torch.Tensor,\n"
    "        router_logits: torch.Tensor,\n"
    "        strategy_name: str,\n"
    "        top_k: int,\n"
    "        indices_type: Optional[torch.dtype] = None,\n"
    "    ) -> tuple[torch.Tensor, torch.Tensor]:\n"
    "        \"\"\"\n"
    "        Simulate token-to-expert routing using the specified strategy.\n"
    "\n"
    "        Args:\n"
    "            hidden_states: Input hidden states [num_tokens, hidden_size]\n"
    "            router_logits: Router logits [num_tokens, num_experts]\n"
    "            strategy_name: Name of the routing strategy to use\n"
    "            top_k: Number of experts to select per token\n"
    "            indices_type: Data type for expert indices\n"
    "\n"
    "        Returns:\n"
    "            tuple of (topk_weights, topk_ids)\n"
    "        \"\"\"\n"
    "        if strategy_name not in RoutingSimulator._routing_strategies:\n"
    "            raise ValueError(\n"
    "                f\"Unknown routing strategy: {strategy_name}. \"\n"
    "                f\"Available strategies: \"\n"
    "                f\"{list(RoutingSimulator._routing_strategies.keys())}\")\n"
    "\n"
    "        strategy = RoutingSimulator._routing_strategies[strategy_name]\n"
    "        return strategy.route_tokens(\n"
    "            hidden_states=hidden_states,\n"
    "            router_logits=router_logits,\n"
    "            top_k=top_k,\n"
    "            indices_type=indices_type,\n"
    "        )"
))
# vllm/distributed/communication_op.py (verbatim): a default on the second line of a signature.
GATHER = CitedSource(1, "vllm/distributed/communication_op.py", (
    "def tensor_model_parallel_gather(input_: torch.Tensor,\n"
    "                                 dst: int = 0,\n"
    "                                 dim: int = -1) -> Optional[torch.Tensor]:\n"
    "    \"\"\"Gather the input tensor across model parallel group.\"\"\"\n"
    "    return get_tp_group().gather(input_, dst, dim)\n"
))
# docs/features/quantization/inc.md (verbatim): a value given as an example, not a default.
INC = CitedSource(1, "docs/features/quantization/inc.md", (
    "!!! tip\n    When using FP8 models, you may experience timeouts caused by the long "
    "compilation time of FP8 operations. To mitigate this problem, you can use the below "
    "environment variables:\n    `VLLM_ENGINE_ITERATION_TIMEOUT_S` - to adjust the vLLM server "
    "timeout. You can set the value in seconds, e.g., 600 equals 10 minutes.\n"
    "    `VLLM_RPC_TIMEOUT` - to adjust the RPC protocol timeout used by the OpenAI-compatible "
    "API. This value is in microseconds, e.g., 600000 equals 10 minutes.\n"
))
# docs/design/torch_compile.md (verbatim).
TORCH_COMPILE = CitedSource(1, "docs/design/torch_compile.md", (
    "By default, vLLM will try to determine a set of sizes to capture cudagraph. You can also "
    "override it using the config `cudagraph_capture_sizes`:\n\n```bash\n"
    "vllm serve meta-llama/Llama-3.2-1B \\\n"
    "  --compilation-config '{\"cudagraph_capture_sizes\": [1, 2, 4, 8]}'\n```\n\n"
    "Then it will only capture cudagraph for the specified sizes. It can be useful to have "
    "fine-grained control over the cudagraph capture."
))
# vllm/entrypoints/openai/tool_parsers/mistral_tool_parser.py (verbatim): a method whose
# class line lies above the excerpt.
MISTRAL = CitedSource(1, "vllm/entrypoints/openai/tool_parsers/mistral_tool_parser.py", (
    "    def extract_tool_calls(\n"
    "        self,\n"
    "        model_output: str,\n"
    "        request: ChatCompletionRequest,\n"
    "    ) -> ExtractedToolCallInformation:\n"
    "        \"\"\"\n"
    "        Extract the tool calls from a complete model response. Requires\n"
    "        find-and-replacing single quotes with double quotes for JSON parsing,\n"
    "        make sure your tool call arguments don't ever include quotes!\n"
    "        \"\"\"\n"
    "\n"
    "        # case -- if a tool call token is not present, return a text response\n"
    "        if self.bot_token not in model_output:\n"
    "            return ExtractedToolCallInformation(tools_called=False,\n"
    "                                                tool_calls=[],\n"
    "                                                content=model_output)"
))


# orjson src/opt.rs (verbatim).
OPT = CitedSource(1, "orjson/src/opt.rs", (
    "pub(crate) const INDENT_2: Opt = 1;\npub(crate) const NAIVE_UTC: Opt = 1 << 1;\n"
    "pub(crate) const NON_STR_KEYS: Opt = 1 << 2;\n"
    "pub(crate) const OMIT_MICROSECONDS: Opt = 1 << 3;\n"
    "pub(crate) const SERIALIZE_NUMPY: Opt = 1 << 4;\npub(crate) const SORT_KEYS: Opt = 1 << 5;\n"
    "pub(crate) const STRICT_INTEGER: Opt = 1 << 6;\npub(crate) const UTC_Z: Opt = 1 << 7;\n"
    "pub(crate) const PASSTHROUGH_SUBCLASS: Opt = 1 << 8;\n"
    "pub(crate) const PASSTHROUGH_DATETIME: Opt = 1 << 9;\n"
    "pub(crate) const APPEND_NEWLINE: Opt = 1 << 10;\n"
    "pub(crate) const PASSTHROUGH_DATACLASS: Opt = 1 << 11;\n\n// deprecated\n"
    "pub(crate) const SERIALIZE_DATACLASS: Opt = 0;\npub(crate) const SERIALIZE_UUID: Opt = 0;\n"
))
# vllm/lora/request.py (verbatim): a source that does say "not".
REQUEST = CitedSource(1, "vllm/lora/request.py", (
    "    lora_int_id must be globally unique for a given adapter.\n"
    "    This is currently not enforced in vLLM.\n    \"\"\"\n"
    "    __metaclass__ = AdapterRequest\n\n    lora_name: str\n    lora_int_id: int\n"
))


def _reason(answer: str, sources: list[CitedSource], question: str) -> str | None:
    """Why the one sentence of `answer` was dropped (None where it was kept as written)."""
    checked = check_answer(answer, sources, question=question)
    if not checked.report.dropped:
        assert checked.text == answer
        return None
    return checked.report.dropped[0]["reason"]


def test_a_default_must_be_the_value_the_source_binds_to_that_name() -> None:
    question = ("What is the default data type for indices_type parameter in the routing "
                "simulator's expert selection method?")
    # `int` is in the source (top_k: int), but it is not indices_type's default.
    assert str(_reason("The default data type for indices_type is `int` [1].", [ROUTING],
                       question)).startswith("[1] does not give int as the default of")
    assert default_unbound("The default data type for indices_type is `None` [1].", [ROUTING],
                           question) is None


def test_a_default_on_the_second_line_of_a_signature_is_bound() -> None:
    assert default_unbound("The default value of the dst parameter in "
                           "tensor_model_parallel_gather is 0 [1].", [GATHER], "What is the "
                           "default value of the dst parameter in tensor_model_parallel_gather "
                           "function?") is None
    assert "does not give 1 as the default" in str(_reason(
        "The default value of dst in tensor_model_parallel_gather is 1 [1].", [GATHER],
        "What is the default value of dst in tensor_model_parallel_gather?"))


def test_an_example_value_is_no_default() -> None:
    question = "What is the default timeout value for VLLM_RPC_TIMEOUT environment variable?"
    assert str(_reason("The default timeout value for VLLM_RPC_TIMEOUT is 600000 microseconds "
                       "[1].", [INC], question)).startswith("[1] does not give 600000 as the "
                                                            "default of")
    # What the source does say about the same value is kept.
    assert default_unbound("`VLLM_RPC_TIMEOUT` is in microseconds: 600000 equals 10 minutes "
                           "[1].", [INC], question) is None
    assert _reason("This value is in microseconds, e.g., 600000 equals 10 minutes [1].", [INC],
                   question) is None


def test_a_method_the_source_does_not_speak_of_is_no_claim_about_it() -> None:
    question = ("What happens when cudagraph_capture_sizes is already set in vLLM's "
                "init_with_cudagraph_sizes method?")
    assert _reason("When cudagraph_capture_sizes is set in the init_with_cudagraph_sizes "
                   "method, it will only capture cudagraph for the specified sizes [1].",
                   [TORCH_COMPILE], question) is not None
    assert _reason("Then it will only capture cudagraph for the specified sizes [1].",
                   [TORCH_COMPILE], question) is None


def test_a_not_the_question_says_is_no_claim() -> None:
    question = ("What does the extract_tool_calls method in MistralToolParser return when the "
                "bot_token is not present in the model output?")
    assert _reason("If a tool call token is not present, return a text response [1].",
                   [MISTRAL], question) is None


def test_a_not_must_be_said_where_the_sentence_reads_its_words() -> None:
    question = "What happens when cudagraph_capture_sizes is set?"
    # "only the specified sizes" is no "not any sizes".
    assert _reason("When cudagraph_capture_sizes is set, it will not capture any sizes [1].",
                   [TORCH_COMPILE], question) == "[1] does not say that it is not so"
    assert _reason("The deprecated options `NAIVE_UTC` and `SORT_KEYS` do not have integer "
                   "values [1].", [OPT], "What integer values do orjson's option flags have, "
                   "and what about the deprecated ones?") == "[1] does not say that it is not so"
    assert _reason("This is currently not enforced in vLLM [1].", [REQUEST],
                   "Must lora_int_id be unique?") is None
