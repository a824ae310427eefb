"""The claim check of written answers, on real vLLM source text (no model is run here).

Each answer below is the kind a small writer produces (several were written by
Qwen2.5-Coder-1.5B from these very sources); the check must keep what the cited source
supports, drop the rest, and never leave a citation of a source that was not given.
"""

from __future__ import annotations

import re

import pytest

from ragdb.generate.blocks import Block
from ragdb.generate.checking import WRITTEN_CODE, CitedSource, check_answer, split_units
from ragdb.generate.cleaning import renumber_citations
from ragdb.generate.generator import cited_sentences_regex
from ragdb.generate.prompt import PromptSource
from ragdb.generate.styles import _Gate, writer_sources

# vllm-0.10.1 docs/features/lora.md, lines 52-68 (verbatim).
LORA = CitedSource(1, "docs/features/lora.md", (
    "## Serving LoRA Adapters\n\n"
    "LoRA adapted models can also be served with the Open-AI compatible vLLM server. To do so, "
    "we use\n`--lora-modules {name}={path} {name}={path}` to specify each LoRA module when we "
    "kickoff the server:\n\n"
    "```bash\nvllm serve meta-llama/Llama-2-7b-hf \\\n    --enable-lora \\\n"
    "    --lora-modules sql-lora=$HOME/.cache/huggingface/hub/models--yard1--llama-2-7b-sql-"
    "lora-test/snapshots/0dfa347e8877a4d4ed19ee56c140fa518470028c/\n```\n\n"
    "!!! note\n    The commit ID `0dfa347e8877a4d4ed19ee56c140fa518470028c` may change over "
    "time. Please check the latest commit ID in your environment to ensure you are using the "
    "correct one.\n\n"
    "The server entrypoint accepts all other LoRA configuration parameters (`max_loras`, "
    "`max_lora_rank`, `max_cpu_loras`,\netc.), which will apply to all forthcoming requests.\n"
))
# vllm-0.10.1 docs/deployment/integrations/production-stack.md, lines 47-59 (verbatim).
STACK = CitedSource(2, "docs/deployment/integrations/production-stack.md", (
    "### Send a Query to the Stack\n\n"
    "Forward the `vllm-router-service` port to the host machine:\n\n"
    "```bash\nsudo kubectl port-forward svc/vllm-router-service 30080:80\n```\n\n"
    "And then you can send out a query to the OpenAI-compatible API to check the available "
    "models:\n\n```bash\ncurl -o- http://localhost:30080/models\n```\n"
))
# vllm-0.10.1 vllm/lora/request.py, lines 12-35 (verbatim): a code source.
REQUEST = CitedSource(3, "vllm/lora/request.py", (
    "class LoRARequest(\n        msgspec.Struct,\n        omit_defaults=True,  # type: "
    "ignore[call-arg]\n        array_like=True):  # type: ignore[call-arg]\n    \"\"\"\n"
    "    Request for a LoRA adapter.\n\n    Note that this class should be used internally. "
    "For online\n    serving, it is recommended to not allow users to use this class but\n"
    "    instead provide another layer of abstraction to prevent users from\n"
    "    accessing unauthorized LoRA adapters.\n\n    lora_int_id must be globally unique for "
    "a given adapter.\n    This is currently not enforced in vLLM.\n    \"\"\"\n"
    "    __metaclass__ = AdapterRequest\n\n    lora_name: str\n    lora_int_id: int\n"
    "    lora_path: str = \"\"\n    lora_local_path: Optional[str] = msgspec.field(default=None)\n"
    "    long_lora_max_len: Optional[int] = None\n"
))
# vllm-0.10.1 docs/usage/troubleshooting.md, line 297 (verbatim).
ZMQ = CitedSource(4, "docs/usage/troubleshooting.md", (
    "- In `v0.5.2`, `v0.5.3`, and `v0.5.3.post1`, there is a bug caused by "
    "[zmq](https://github.com/zeromq/pyzmq/issues/2000) , which can occasionally cause vLLM to "
    "hang depending on the machine configuration. The solution is to upgrade to the latest "
    "version of `vllm` to include the [fix](gh-pr:6759).\n"
))
ALL = [LORA, STACK, REQUEST, ZMQ]


def test_supported_sentences_are_kept_as_written() -> None:
    answer = ("Use `--lora-modules {name}={path} {name}={path}` to specify each LoRA module "
              "when you kickoff the server [1]. Forward the `vllm-router-service` port with "
              "`sudo kubectl port-forward svc/vllm-router-service 30080:80` [2].")
    checked = check_answer(answer, ALL, question="How do I serve several LoRA adapters at once "
                           "and reach the router?")
    assert checked.text == answer
    assert checked.cited == [1, 2]
    assert checked.report.kept == checked.report.sentences == 2
    assert not checked.report.dropped and not checked.too_little


def test_a_flag_the_cited_source_lacks_drops_the_sentence() -> None:
    # --max-lora-rank is not in source 1 (it writes max_lora_rank); the first sentence is
    # (dropped by the order rule: its words are not the block's, in its order).
    answer = ("The server accepts LoRA configuration parameters such as `max_loras` [1]. "
              "Set --max-lora-rank 64 to allow larger adapters [1].")
    checked = check_answer(answer, ALL)
    assert checked.text == "The server accepts LoRA configuration parameters such as " \
                           "`max_loras` [1]."
    [dropped] = checked.report.dropped
    assert "--max-lora-rank" in dropped["text"] and "[1]" in dropped["reason"]


def test_the_port_must_be_the_one_the_source_gives() -> None:
    checked = check_answer("Forward the router port to 8080 on the host [2].", ALL)
    assert checked.text == "" and checked.too_little
    assert "8080" in checked.report.dropped[0]["text"]


def test_a_citation_of_a_source_not_given_is_never_shown() -> None:
    answer = "Forward the `vllm-router-service` port to the host machine [7]. It needs jq [9]."
    checked = check_answer(answer, ALL)
    assert checked.text == "" and checked.cited == [] and checked.too_little
    assert checked.report.removed_citations == [7, 9]
    assert all("[7]" not in d["text"] and "[9]" not in d["text"]
               for d in checked.report.dropped)
    # Beside a valid one, the invented number just goes.
    kept = check_answer("Forward the `vllm-router-service` port to the host machine [2][7].",
                        ALL)
    assert kept.text == "Forward the `vllm-router-service` port to the host machine [2]."
    assert kept.cited == [2] and kept.report.removed_citations == [7]


def test_uncited_sentences_are_dropped() -> None:
    checked = check_answer("You can serve several adapters at once. Use the LoRA flags.", ALL)
    assert checked.text == "" and checked.report.sentences == 2
    assert {d["reason"] for d in checked.report.dropped} == {"cites no source"}


def test_an_inexact_command_drops_the_sentence() -> None:
    """Issue 39: replacing an inexact command by the source's own line wrote broken
    sentences; the sentence is dropped (the blocks beneath show the command as it is)."""
    answer = "Run `kubectl port-forward svc/vllm-router 30080:80` on the host [2]."
    checked = check_answer(answer, ALL)
    assert checked.text == "" and checked.report.dropped[0]["reason"] == (
        "`kubectl port-forward svc/vllm-router 30080:80` is not in [2]")
    exact = ("Forward the `vllm-router-service` port with `sudo kubectl port-forward "
             "svc/vllm-router-service 30080:80` [2].")
    assert check_answer(exact, ALL).text == exact


def test_a_code_block_the_model_writes_is_dropped_even_verbatim() -> None:
    """Code comes from the sources' blocks, never from the model (generate/styles.py): the
    sentence before a written block stays, the block goes, verbatim in its source or not."""
    for code in ("vllm serve meta-llama/Llama-2-7b-hf --enable-lora",  # joined: in the source
                 "vllm serve meta-llama/Llama-2-7b-hf --enable-lora --max-loras 4",
                 "llm.load_adapter('x')\nengine.reload()"):
        said = "LoRA adapted models can also be served with the vLLM server [1]."
        written = f"{said}\n\n```bash\n{code}\n```\n[1]"
        checked = check_answer(written, ALL, question="How do I serve LoRA adapters?")
        assert checked.text == said
        assert checked.report.sentences == 3 and checked.report.kept == 1
        assert checked.report.dropped[0]["reason"] == WRITTEN_CODE


def test_sources_that_are_all_code_check_identifiers_against_the_code() -> None:
    answer = ("A `LoRARequest` has the fields `lora_name`, `lora_int_id` and "
              "`lora_path` [3]. The `lora_int_id` must be globally unique for an adapter [3]. "
              "Call `LoRARequest.load()` to read it from disk [3].")
    checked = check_answer(answer, [REQUEST])
    assert checked.text == "The `lora_int_id` must be globally unique for an adapter [3]."
    assert "LoRARequest.load" in checked.report.dropped[-1]["reason"]


def test_an_empty_answer_is_too_little() -> None:
    for text in ("", "   ", "[1]"):
        checked = check_answer(text, ALL)
        assert checked.text == "" and checked.too_little and checked.cited == []


def test_sentences_split_on_full_stops_not_on_dotted_names() -> None:
    units = split_units("Use `vllm.LLM` with v0.5.3.post1 [4]. Then upgrade [4].\n"
                        "- one item [1]\n```bash\ncurl -o- http://localhost:30080/models\n```\n[2]")
    assert [(u.kind, u.cites) for u in units] == [
        ("prose", [4]), ("prose", [4]), ("prose", [1]), ("code", []), ("prose", [2])]


def test_the_writer_grammar_admits_only_cited_sentences_of_given_sources() -> None:
    pattern = re.compile(cited_sentences_regex(2))
    assert pattern.fullmatch("Use `--enable-lora` [1]. Then query `/models` [2][1].")
    # No code (the answer's code is its blocks'), and three sentences at most.
    assert not pattern.fullmatch("Forward the port [2]:\n```bash\nsudo kubectl port-forward x"
                                 "\n```")
    assert pattern.fullmatch("One [1]. Two [1]. Three [2].")
    assert not pattern.fullmatch("One [1]. Two [1]. Three [2]. Four [2].")
    assert pattern.fullmatch("It hangs on v0.5.2 [1].")
    assert pattern.fullmatch("It hangs on v0.5.2. [1] Upgrade to the latest version. [2]")
    # Text beyond ASCII, which the model otherwise cannot write and stops at.
    assert pattern.fullmatch("The VllmConfig class – é [1].")
    # No brackets but citations: links came out as "[The endpoint is `/v1/x`.]([1])" (9 of 65
    # tuning drafts); the writer is shown link text only, so it needs none.
    for bad in ("No citation.", "Two sentences. One citation [1].", "Wrong source [3].",
                "Cited mid-sentence [1] and on", "[1]", "Ends uncited. [1] Then not.",
                "A link to [1](http://x) [1].", "The [VllmConfig](https://x.org/c.py) class [1].",
                "[The endpoint is `/v1/x`.]([1])"):
        assert not pattern.fullmatch(bad), bad


@pytest.mark.parametrize("step", [1, 3, 7])
def test_streaming_shows_only_checked_sentences_and_ends_on_the_answer(step: int) -> None:
    """The gate emits sentence by sentence; what it shows is always a prefix of the final
    checked answer, and a sentence that fails is never shown, however the pieces are cut."""
    written = ("Forward the `vllm-router-service` port to the host machine [1]. "
               "It listens on 8080 [1]. Then query the models with "
               "`curl -o- http://localhost:30080/models` [1].")
    mapping = {1: 2}  # the writer saw source 2 as its [1]
    shown: list[str] = []
    gate = _Gate("How do I query the models?", mapping, [STACK], shown.append)
    for i in range(0, len(written), step):
        gate.feed(written[i:i + step])
        assert "8080 [" not in "".join(shown)
    final = check_answer(renumber_citations(written, mapping), [STACK],
                         question="How do I query the models?")
    gate.emit(final.text)
    assert "".join(shown) == final.text
    assert final.text.endswith("`curl -o- http://localhost:30080/models` [2].")
    assert "8080" in final.report.dropped[0]["text"]


def test_writer_sources_are_the_blocks_at_their_lines() -> None:
    """The writer is shown each block as the answer shows it (code fenced under its signature
    lines), numbered 1..n, mapped back to its source's own number; the check reads the same."""
    lora = PromptSource("docs/features/lora.md", 1000, 1000 + len(LORA.text), 52, 68,
                        LORA.text)
    request = PromptSource("vllm/lora/request.py", 0, len(REQUEST.text), 12, 35, REQUEST.text)
    lines = REQUEST.text.split("\n")
    at = lines.index("    lora_name: str")
    blocks = [Block(2, request.file_path, 30, 31, lines[at:at + 2], "python", True,
                    heads=[(12, lines[0])]),
              Block(1, lora.file_path, 66, 67, LORA.text.split("\n")[14:16], "markdown", False)]
    shown, mapping, given = writer_sources(blocks, [lora, request])
    assert mapping == {1: 2, 2: 1}
    assert [(s.file_path, s.start_line, s.end_line) for s in shown] == [
        ("vllm/lora/request.py", 30, 31), ("docs/features/lora.md", 66, 67)]
    assert shown[0].text == ("```python\nclass LoRARequest(\n    ...\n    lora_name: str\n"
                             "    lora_int_id: int\n```")
    assert shown[1].text == "\n".join(LORA.text.split("\n")[14:16])
    assert [(c.number, c.text) for c in given] == [(2, shown[0].text), (1, shown[1].text)]


# --------------------------------------------------------------------------------------------
# The stricter check: a sentence's own words, where they sit in the source, what the question
# already said. Sentences below were written by the writer for tuning questions
# (benchmarks/bench_writer.py) from these very sources (verbatim excerpts).

# vllm-0.10.1 vllm/v1/structured_output/backend_xgrammar.py (verbatim).
XGRAMMAR = CitedSource(1, "vllm/v1/structured_output/backend_xgrammar.py", (
    "        self.compiler = xgr.GrammarCompiler(\n            tokenizer_info,\n"
    "            max_threads=8,\n            cache_enabled=True,\n"
    "            cache_limit_bytes=vllm.envs.VLLM_XGRAMMAR_CACHE_MB * 1024 * 1024,\n"
    "        )\n\n        self.num_speculative_tokens = 0\n"
))
# click docs/faqs.md and docs/utils.md (verbatim excerpts).
FAQS = CitedSource(1, "docs/faqs.md", (
    "### The `edit` utility fails to open Visual Studio Code\n\nLet's say our default editor is "
    "Visual Studio Code. A Click CLI calling `edit()` is supposed to open a new VSCode window "
    "on a temporary file then wait for us to edit that file before returning back the CLI "
    "execution.\n"
))
UTILS = CitedSource(2, "docs/utils.md", (
    "## Launching Editors\n\nClick supports launching editors automatically through "
    "{func}`edit`. This is very useful for asking users for multi-line\ninput. It will "
    "automatically open the user's defined editor or fall back to a sensible default. If the "
    "user closes the\neditor without saving, the return value will be `None`, otherwise the "
    "entered text.\n"
))
# psutil docs/index.rst (verbatim excerpt).
WAIT = CitedSource(1, "docs/index.rst", (
    "    *timeout* is expressed in seconds. If specified and the process is still\n"
    "    alive raise :class:`TimeoutExpired` exception.\n"
    "    ``timeout=0`` can be used in non-blocking apps: it will either return\n"
    "    immediately or raise :class:`TimeoutExpired`.\n\n    The return value is cached.\n"
    "    To wait for multiple processes use :func:`psutil.wait_procs()`.\n"
))
# vllm-0.10.1 benchmarks/kernels/benchmark_w8a8_block_fp8.py (verbatim excerpt).
TUNE = CitedSource(4, "benchmarks/kernels/benchmark_w8a8_block_fp8.py", (
    "def tune(M, N, K, block_size, out_dtype, search_space, input_type):\n"
    "    factor_for_scale = 1e-2\n\n    if input_type == \"fp8\":\n"
    "        fp8_info = torch.finfo(torch.float8_e4m3fn)\n"
    "        fp8_max, fp8_min = fp8_info.max, fp8_info.min\n"
))


def test_words_the_cited_source_lacks_drop_the_sentence() -> None:
    question = "What does `psutil.wait_procs()` return, and does it raise when the timeout expires?"
    checked = check_answer("`psutil.wait_procs()` returns a list of the processes that were "
                           "still running after the timeout [1].", [WAIT], question=question)
    assert checked.text == "" and checked.too_little
    assert "order" in checked.report.dropped[0]["reason"]  # "running" is not in [1]


def test_a_sentence_that_only_restates_the_question_is_dropped() -> None:
    question = ("What is the default max_threads value used when creating the GrammarCompiler "
                "in vLLM's XGrammar backend?")
    for empty in ("The default max_threads value used when creating the GrammarCompiler is "
                  "[1].", "The GrammarCompiler in vLLM's XGrammar backend uses a default "
                  "max_threads value [1]."):
        checked = check_answer(empty, [XGRAMMAR], question=question)
        assert checked.text == "", empty
        assert checked.report.dropped[0]["reason"] == "says nothing the question did not"
    said = "The compiler is `xgr.GrammarCompiler` with max_threads=8 [1]."
    assert check_answer(said, [XGRAMMAR], question=question).text == said


def test_links_that_are_no_links_become_their_text() -> None:
    # Written by the writer before links left its grammar (and by any model asked to cite).
    question = "What is the default max_threads value of the GrammarCompiler?"
    checked = check_answer("[1]([1]) The [compiler](self) is `xgr.GrammarCompiler` with "
                           "max_threads=8 [1].", [XGRAMMAR], question=question)
    assert checked.text == "The compiler is `xgr.GrammarCompiler` with max_threads=8 [1]."


def test_a_sentence_about_names_the_source_lacks_is_dropped() -> None:
    # None of the names the sentence repeats from the question is in the source: it is about
    # another place (the benchmark's local fp8_min is not the module's FP8_MIN).
    question = ("What are the default values for FP8_MIN and FP8_MAX constants in vLLM's "
                "triton_flash_attention module?")
    written = ("The default values for FP8_MIN and FP8_MAX constants in vLLM's "
               "triton_flash_attention module are `fp8_info.max` and `fp8_info.min` [4].")
    checked = check_answer(written, [TUNE], question=question)
    assert checked.text == "" and checked.report.dropped[0]["text"] == written


EDITOR = "It will open the user's defined editor or fall back to a sensible default"


def test_a_sentence_citing_the_wrong_given_source_is_cited_to_the_one_that_says_it() -> None:
    question = "Which editor does `click.edit()` open if I don't configure one?"
    checked = check_answer(f"{EDITOR} [1].", [FAQS, UTILS], question=question)
    assert checked.text == f"{EDITOR} [2]."
    assert checked.cited == [2]
    assert checked.report.recited == [{"text": f"{EDITOR} [1].", "from": [1], "to": 2}]
    # Where no given source says it, it is dropped, not moved.
    gone = check_answer("If no editor is configured, it opens nano [1].", [FAQS, UTILS],
                        question=question)
    assert gone.text == "" and not gone.report.recited


def test_talk_about_citing_is_no_claim() -> None:
    question = "How long does psutil cache the return value of wait()?"
    checked = check_answer("With `timeout=0` it returns immediately or raises "
                           "`TimeoutExpired`, as stated in [1].", [WAIT], question=question)
    assert checked.text == "" and checked.too_little  # "stated" is no word of the block


def test_the_one_line_summary_says_what_the_check_moved_and_added() -> None:
    from ragdb.cli.query import _check_summary

    checked = check_answer(f"{EDITOR} [1].", [FAQS, UTILS], question="Which editor does "
                           "`click.edit()` open if I don't configure one?")
    report = checked.report.as_json()
    assert report["recited"] and report["checked"][-3:] == [
        "says more than the question", "a not said where its words are",
        "worded as the cited source words it, in its order"]
    report["evidence_from"] = [2]
    assert _check_summary(report) == (
        "checked 1 written sentences against their sources: 1 kept, 0 dropped; 1 cited to the "
        "given source that says it; followed by the blocks it was written from")


# What SmolLM2-135M printed for `--style generate` (issue 37): no answer at all.
DEGENERATE = ["According to [1], [2] and [3],,,,,,,,,,,,,,,", "\n".join(["```", "```"] * 11)
              + "\n[1]", "```python\n\n```\n```python\n```\n[2]", "[1] [2], [3].",
              "See [1], [2], [3], [4]."]


@pytest.mark.parametrize("written", DEGENERATE)
def test_a_degenerate_answer_fails_the_check_and_says_why(written: str) -> None:
    """No sentence of it passes, so the blocks are shown alone (a rule of its own for such
    answers changed nothing measured: benchmarks/README.md, "Not kept")."""
    from ragdb.cli.query import _check_summary

    checked = check_answer(written, [LORA, STACK, REQUEST, ZMQ],
                           question="How do I serve LoRA adapters?")
    assert checked.too_little and checked.text == ""
    report = checked.report.as_json()
    report.update(fallback="extractive", fallback_reason=checked.why_not_shown)
    line = _check_summary(report)
    assert "\n" not in line and line.endswith(
        f"the written answer was not shown (none of its {checked.report.sentences} sentences "
        "passed the check): the blocks alone instead")


# Rules no test above reaches, each on the case its comment names.


def test_a_sentence_whose_subject_was_a_citation_is_dropped() -> None:
    source = CitedSource(1, "docs/features/lora.md", "LoRA adapted models can also be served "
                         "with the Open-AI compatible vLLM server.")
    checked = check_answer("[1]([1]) states that LoRA adapted models can be served with the "
                           "vLLM server [1].", [source], question="Can LoRA models be served?")
    assert not checked.text and checked.report.dropped  # "states" is no word of the block
