"""Build data/datasets/paraphrased_vllm.json: questions that avoid the words of their answer.

The files were drawn before any question was written: random.Random(7).sample over the docs
pages (docs/**/*.md, > 1,500 bytes, not docs/api) and the vllm/**/*.py files (> 2,000 bytes)
that no public question and no held-out question cites; the first 20 of each draw are used.
Each question describes behaviour in other words than the file's (no identifiers, paths,
flags or product names of the answer). Spans are found from a start and an end anchor and
printed with --show for checking.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = "data/raw/vllm-0.10.1/"
OUT = Path("data/datasets/paraphrased_vllm.json")

# (file, start anchor, end anchor (inclusive), question, answer)
DOCS = [
    ("docs/deployment/k8s.md", "### Startup Probe or Readiness Probe Failure",
     "measuring how much time it takes for the model server to show it's ready to serve.",
     "My model server container on the cluster keeps being restarted before it finishes "
     "starting, and its log ends with an interrupted message. What should I change?",
     "The startup/readiness probe gives up too early: raise its failure threshold so the "
     "server has time to load."),
    ("docs/contributing/model/tests.md", "### Model loading",
     "to skip the test in CI until the model is released.",
     "Where do I register an example checkpoint of a newly added architecture so the "
     "automated checks can verify that it builds with placeholder weights?",
     "Add an example Hugging Face repository to tests/models/registry.py (kept in "
     "alphabetical order)."),
    ("docs/design/prefix_caching.md", "### Free",
     "As a result, it should be evicted first.",
     "When a finished request gives its memory pages back, in what order are they put in "
     "the list of reusable pages, and why?",
     "In reverse order at the tail of the free queue: the last block hashes more tokens and "
     "is less likely to be reused, so it should be evicted first."),
    ("docs/getting_started/installation/cpu/x86.inc.md", "- OS: Linux",
     "Use `lscpu` to check the CPU flags.",
     "What instruction set extensions should an ordinary server processor have to run "
     "inference without an accelerator, and how do I see which ones my machine has?",
     "avx512f recommended, avx512_bf16 and avx512_vnni optional; check with lscpu."),
    ("docs/contributing/README.md", "Thank you for your interest",
     "or simply offer your appreciation by starring our repository!",
     "Apart from writing code, in what ways can an outsider help the project?",
     "Report issues, request or add models, suggest features, improve documentation, answer "
     "questions, review PRs, and spread the word."),
    ("docs/contributing/ci/failures.md", "## Reproducing a Failure",
     "test_kv_cache_events[True-tcp]\n```",
     "A test in the automated pipeline only fails once in a while; how can I run it over and "
     "over to catch the failure?",
     "Use the rerun-test.sh script, which runs a test repeatedly in a bash loop."),
    ("docs/features/quantization/modelopt.md", "The [NVIDIA TensorRT Model Optimizer]",
     "pip install nvidia-modelopt\n```",
     "Which toolkit from the graphics card vendor compresses networks either after training "
     "or during training, and how do I install it?",
     "NVIDIA TensorRT Model Optimizer (PTQ and QAT); pip install nvidia-modelopt."),
    ("docs/contributing/deprecation_policy.md", "### 2.Deprecated (Off By Default)",
     "blocks silent breakage before full removal.",
     "While an outdated capability is switched off by default but not yet deleted, how can "
     "users still use it, and what happens if they don't opt back in?",
     "It can be re-enabled with a CLI flag or environment variable; using it without "
     "re-enabling raises an error."),
    ("docs/design/mm_processing.md", "### The problem",
     "to keep the output tokens and multi-modal data consistent with each other.",
     "Why can't the upstream preprocessors for pictures and audio simply be called when the "
     "prompt arrives already converted to integer ids?",
     "They only accept text plus media: with token ids the placeholder count does not match "
     "and prompt updates must be applied by vLLM itself."),
    ("docs/features/quantization/torchao.md", "We recommend installing the latest torchao",
     "--index-url https://download.pytorch.org/whl/nightly/cu126\n```",
     "How do I install the pre-release build of the PyTorch-native low-precision library "
     "that matches my GPU toolkit version?",
     "pip install --pre torchao>=10.0.0 from the PyTorch nightly index for your CUDA version."),
    ("docs/models/extensions/runai_model_streamer.md", "You can control the size of the CPU",
     "--model-loader-extra-config '{\"memory_limit\":5368709120}'\n```",
     "When streaming weights from object storage, how can I cap how much host RAM is used "
     "as the staging area?",
     "Pass memory_limit in --model-loader-extra-config."),
    ("docs/features/quantization/gguf.md", "    Currently, vllm only supports loading single",
     "to merge them to a single-file model.",
     "My quantized checkpoint in the llama.cpp format is split across several files; can it "
     "be loaded as it is?",
     "No, only single-file GGUF models load; merge the parts with gguf-split first."),
    ("docs/deployment/frameworks/cerebrium.md", "vLLM can be run on a cloud based GPU machine",
     "cerebrium init vllm-project\n```",
     "How do I get started on a serverless hosting platform for AI apps: installing its "
     "client, logging in and creating a project?",
     "pip install cerebrium, cerebrium login, then cerebrium init vllm-project."),
    ("docs/configuration/optimization.md", "## Preemption",
     "you can log the cumulative number of preemption requests by setting "
     "`disable_log_stats=False`.",
     "Requests keep getting kicked out and recomputed because there is not enough room for "
     "the attention keys and values. Which settings can I change to reduce that?",
     "Raise gpu_memory_utilization, lower max_num_seqs or max_num_batched_tokens, or raise "
     "tensor or pipeline parallel size."),
    ("docs/contributing/ci/update_pytorch_version.md", "## Address long vLLM build time",
     "to warm it up so that future builds are faster.",
     "Why do builds against a freshly released deep learning framework take hours in the "
     "pipeline, and what is the temporary workaround?",
     "The compiler cache is cold; use the custom CI branch that raises the timeout and writes "
     "the cache."),
    ("docs/features/compatibility_matrix.md", "The symbols used have the following meanings:",
     "- ❔ = Unknown or TBD",
     "In the tables of which features work together, what do the different marks stand for?",
     "Full, partial, no compatibility, or unknown."),
    ("docs/features/automatic_prefix_caching.md", "## Limits",
     "(so that the computation cannot be reused).",
     "In which situations does reusing the computed state of shared prompt beginnings bring "
     "no speedup?",
     "It only shortens prefill: no gain when generation dominates or queries share no prefix."),
    ("docs/getting_started/installation/gpu/xpu.inc.md", "vLLM initially supports basic model",
     "- OneAPI requirements: oneAPI 2025.0",
     "Are there ready-made packages for the data-centre and consumer discrete graphics cards "
     "of the big laptop-processor maker, or must I compile it myself, and which toolkit "
     "version is needed?",
     "No pre-built wheels or images: build from source; Intel Data Center and Arc GPUs, "
     "oneAPI 2025.0."),
    ("docs/contributing/dockerfile/dockerfile.md", "Below is a visual representation",
     "a different argument to the flag `--filename`.)",
     "How can I redraw the picture of build stages and their dependencies for the container "
     "image recipe?",
     "Run dockerfilegraph (or its container image) on docker/Dockerfile from the repo root."),
    ("docs/features/quantization/quantized_kvcache.md", "### FP8 Formats",
     "alongside each quantized tensor.",
     "Of the two 8-bit floating point layouts for storing cached attention state, which is "
     "more precise and what does it need alongside it?",
     "E4M3 is more precise than E5M2 but needs a higher-precision (FP32) scaling factor."),
]

CODE = [
    ("vllm/model_executor/model_loader/tensorizer_loader.py", "def validate_config(",
     "is not an allowed Tensorizer argument.\")",
     "Where are forbidden options refused when loading weights from serialized tensor files?",
     "validate_config raises ValueError for blacklisted arguments."),
    ("vllm/entrypoints/utils.py", "def with_cancellation(handler_func):",
     "        return None\n\n    return wrapper",
     "How does the HTTP server stop working on a request when the client hangs up before the "
     "reply is ready?",
     "A decorator races the handler against a task listening for disconnect and cancels the "
     "one still pending."),
    ("vllm/model_executor/models/llava_next.py", "    def _get_num_unpadded_features(",
     "        return (unpadded_features, newline_features)",
     "How many picture features remain once the padding added to keep the original "
     "width-to-height ratio of a tiled image is removed?",
     "Compare aspect ratios, remove the padded rows or columns, count height*width plus one "
     "newline feature per row."),
    ("vllm/compilation/pass_manager.py", "    def __call__(self, graph: fx.Graph):",
     "        self.fix_functionalization = FixFunctionalizationPass(config)",
     "How is the list of graph rewriting steps assembled from the compiler settings, and "
     "which step always runs last?",
     "configure adds passes by pass_config flags; fix_functionalization always runs last."),
    ("vllm/distributed/device_communicators/ray_communicator.py",
     "    def _build_actor_rank_mapping(self):",
     "            self._actor_id_to_rank[actor_id] = rank",
     "How does the communicator for remote worker processes work out each worker's "
     "position by exchanging their identifiers?",
     "All-gather every actor's 32-character id and map id to rank."),
    ("vllm/v1/attention/backends/flash_attn.py", "def _get_sliding_window_configs(",
     "    return sliding_window_configs",
     "How do we collect the distinct local attention span settings used by all layers of a "
     "model?",
     "Iterate the Attention layers from the config and add each impl's sliding_window to a set."),
    ("vllm/engine/async_llm_engine.py", "def _log_task_completion(task: asyncio.Task,",
     "\"actual cause.\") from e",
     "What happens when the background loop of the asynchronous engine ends, either "
     "normally or because of an error?",
     "Cancelled: logged as graceful shutdown; any other exception: logged, passed to the "
     "error callback and raised as AsyncEngineDeadError."),
    ("vllm/model_executor/models/gpt_bigcode.py", "class GPTBigMLP(nn.Module):",
     "        hidden_states, _ = self.c_proj(hidden_states)\n        return hidden_states",
     "What does the two-layer feed-forward block of the code-generation model family with "
     "multi-query attention do with its hidden states?",
     "Column-parallel up-projection, activation, row-parallel down-projection."),
    ("vllm/v1/sample/logits_processor/state.py", "    def _ensure_removed_sorted(self) -> None:",
     "            return self._removed.pop()\n        return None",
     "When requests leave the persistent batch, how are their slot numbers tracked so that "
     "the lowest freed one is handed out first?",
     "Removed indices are kept sorted in descending order; peek/pop take the last (lowest)."),
    ("vllm/core/block/interfaces.py", "class Block(ABC):",
     "    def is_full(self) -> bool:\n        pass",
     "What must a unit of paged attention memory be able to do, such as taking extra token "
     "ids and reporting free room?",
     "Abstract Block: append_token_ids, block_id, token_ids, num_tokens_total, "
     "num_empty_slots, is_full, ..."),
    ("vllm/transformers_utils/configs/deepseek_vl2.py", "class DeepseekVLV2Config(",
     "        self.vocab_size = self.text_config.vocab_size",
     "How is the composite settings object of a tiling vision-language model built from the "
     "settings of its image encoder, its projector and its text part?",
     "DeepseekVLV2Config builds VisionEncoderConfig, MlpProjectorConfig and DeepseekV2Config "
     "from kwargs."),
    ("vllm/model_executor/layers/mamba/mamba_mixer.py", "def split_batch_to_prefill_and_decode(",
     "        # In v0, prefill tokens come first, then decode tokens.",
     "For the state-space sequence layer, how is a mixed batch split into prompt processing "
     "and generation parts, and does the order differ between engine generations?",
     "In V1 decode tokens come first, then prefill; in V0 the reverse; tensors are split "
     "accordingly."),
    ("vllm/compilation/collective_fusion.py", "class GEMMReduceScatterPattern(BasePattern):",
     "                                pm.fwd_only, pm_pass)",
     "Which rewrite replaces a matrix multiply followed by a sum-and-split across devices "
     "with one fused symmetric-memory kernel?",
     "GEMMReduceScatterPattern: mm + reduce_scatter -> fused_matmul_reduce_scatter."),
    ("vllm/distributed/kv_transfer/kv_lookup_buffer/base.py", "    def drop_select(",
     "            NotImplementedError: This method must be implemented in subclasses.\n"
     "        \"\"\"\n        raise NotImplementedError",
     "Which operation picks cached attention state matching some tokens and removes it from "
     "the transfer buffer at the same time?",
     "drop_select: select and drop entries, any entry when tokens and mask are None."),
    ("vllm/model_executor/models/phimoe.py", "def sparsemixer(scores, jitter_eps=0.01):",
     "        multiplier,\n        selected_experts,\n    )",
     "How does the expert router pick its top two experts with a jitter-based mask instead "
     "of a plain top-k?",
     "sparsemixer: mask scores far from the max (relative to jitter_eps), softmax, take the "
     "max; mask it out and repeat for the second."),
    ("vllm/model_executor/models/nvlm_d.py", "    def get_image_repl(",
     "        return PromptUpdateDetails.select_text(repl, IMG_PAD)",
     "How is the placeholder text for a picture built from per-tile tags and padding "
     "tokens, and why are the opening and closing markers part of it?",
     "One tag per tile (plus a global thumbnail) followed by padding tokens, wrapped in "
     "<Image>...</Image> so tokenization finds the tags."),
    ("vllm/distributed/device_communicators/custom_all_reduce.py",
     "    def should_custom_ar(self, inp: torch.Tensor):",
     "            return inp_size < self.max_size\n        return False",
     "When is the hand-written GPU summation across devices used instead of the vendor's "
     "communication library?",
     "When enabled, the size is a multiple of 16 bytes, the tensor is weakly contiguous, and "
     "there are 2 GPUs or a fully connected topology, under max_size."),
    ("vllm/model_executor/layers/quantization/compressed_tensors/schemes/"
     "compressed_tensors_wNa16.py", "    def __init__(self,\n                 strategy: str,",
     "                           WNA16_SUPPORTED_TYPES_MAP[num_bits])",
     "What is checked when setting up a weight-only low-bit scheme that packs several values "
     "into each 32-bit integer?",
     "Group size or channelwise strategy required; num_bits must be supported; zero-point "
     "types when asymmetric."),
    ("vllm/distributed/kv_transfer/kv_pipe/pynccl_pipe.py", "    def block_if_full(self):",
     "            time.sleep(0.05)",
     "How does the sender avoid overfilling the channel that ships attention state between "
     "instances?",
     "block_if_full sleeps while buffer_size is above the threshold."),
    ("vllm/v1/core/encoder_cache_manager.py", "    def free_encoder_input(self,",
     "        self.freed.append((req_id, input_id))",
     "How is room given back once the output of the picture encoder for one input is no "
     "longer needed by the decoder?",
     "free_encoder_input removes the id from the request's cached set and returns its token "
     "count to the free slots."),
]


def build(show: bool) -> dict:
    questions = []
    for prefix, items in (("para-docs", DOCS), ("para-code", CODE)):
        for n, (rel, start, end, question, answer) in enumerate(items, 1):
            path = ROOT + rel
            text = Path(path).read_text(encoding="utf-8")
            first = text.find(start)
            last = text.find(end, first) + len(end) if first >= 0 else -1
            if first < 0 or last < len(end) or text.count(start) != 1:
                sys.exit(f"{rel}: anchors not found once ({first}, {last})")
            if last - first > 2000:
                sys.exit(f"{rel}: span of {last - first} characters")
            if show:
                print(f"--- {prefix}-{n:02d} {rel} [{first}:{last}]\n{text[first:last]}\n")
            questions.append({
                "question_id": f"{prefix}-{n:02d}", "question": question, "answer": answer,
                "sources": [{"file_path": path, "first_character_index": first,
                             "last_character_index": last}],
            })
    return {"rag_questions": questions}


if __name__ == "__main__":
    data = build("--show" in sys.argv)
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(data['rag_questions'])} questions -> {OUT}")
