"""A tiny BERT-shaped cross-encoder made in the test set-up (no torch, no hub): OpenVINO's
opset builds the graph (embeddings, one attention layer, a feed-forward, mean pooling, one
logit), `tokenizers` a WordPiece over a small vocabulary, and `openvino.save_model` writes the
IR, so ragdb's reranker code loads, batches, truncates and scores a real model in CI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
WORDS = (
    "how do i load a lora adapter at run time serve several adapters vllm the of to and is "
    "what where which scheduler chunked prefill default release notes install pip start "
    "server offline inference llm class sampling params generate text gemma decoder layer "
    "hidden size forward remote code trusted never unless asked model layers def return "
    "false true self int float class import math tanh docs features usage quickstart pkg "
    "py md txt notes post v1 unload name path dynamically serving base one once"
).split()


def _openvino() -> Any:
    saved = os.environ.get("CI")
    os.environ["CI"] = "true"  # OpenVINO's telemetry declines in CI (see ragdb.embedder)
    try:
        import openvino
    finally:
        if saved is None:
            del os.environ["CI"]
        else:
            os.environ["CI"] = saved
    return openvino


def write_tokenizer(path: Path, words: list[str] = WORDS) -> dict[str, int]:
    """A BERT-style tokenizer.json (lower-cased WordPiece, [CLS] A [SEP] B [SEP])."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocab = {token: i for i, token in enumerate(SPECIAL + sorted(set(words)))}
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tokenizer.save(str(path))
    return vocab


def build_cross_encoder(folder: Path, *, window: int = 64, hidden: int = 16, seed: int = 0,
                        favour: str | None = "scheduler", output: str = "logits",
                        nan: bool = False, config: bool = True, layers: int = 1) -> Path:
    """Write a randomly initialised cross-encoder into `folder`: openvino_model.xml/.bin,
    tokenizer.json and config.json (max_position_embeddings = window).

    favour: a word that adds 5 to the score of a passage holding it (tests can say which
    chunk a reranker should lift; the rest of the score is the random network's); output
    "embedding" gives [batch, hidden] (not a cross-encoder); nan gives NaN logits. `layers`
    and `hidden` of a published model (6 x 384 for MiniLM-L6, 12 x 768 for BERT-base) make a
    stand-in that costs what it costs to run (benchmarks/bench_rerank.py)."""
    ov = _openvino()
    from openvino import opset13 as ops

    folder.mkdir(parents=True, exist_ok=True)
    vocab = write_tokenizer(folder / "tokenizer.json")
    rng = np.random.default_rng(seed)

    def weight(*shape: int, scale: float = 0.3) -> Any:
        return ops.constant((rng.standard_normal(shape) * scale).astype(np.float32))

    head = rng.standard_normal(hidden).astype(np.float32)
    head /= np.linalg.norm(head)
    words = (rng.standard_normal((len(vocab), hidden)) * 0.3).astype(np.float32)

    input_ids = ops.parameter([-1, -1], np.int64, name="input_ids")
    attention_mask = ops.parameter([-1, -1], np.int64, name="attention_mask")
    token_type_ids = ops.parameter([-1, -1], np.int64, name="token_type_ids")
    for param, name in ((input_ids, "input_ids"), (attention_mask, "attention_mask"),
                        (token_type_ids, "token_type_ids")):
        param.output(0).get_tensor().set_names({name})
    axis0 = ops.constant(np.int64(0))
    x = ops.gather(ops.constant(words), input_ids, axis0)
    x = ops.add(x, ops.gather(weight(2, hidden, scale=0.05), token_type_ids, axis0))
    length = ops.gather(ops.shape_of(input_ids), ops.constant(np.int64(1)), axis0)
    positions = ops.range(ops.constant(np.int64(0)), length, ops.constant(np.int64(1)),
                          output_type="i64")
    x = ops.add(x, ops.gather(weight(window, hidden, scale=0.05), positions, axis0))

    def norm(value: Any) -> Any:
        return ops.mvn(value, ops.constant(np.array([-1], dtype=np.int64)), True, 1e-6,
                       "inside_sqrt")

    x = norm(x)
    mask = ops.convert(attention_mask, np.float32)
    bias = ops.multiply(ops.subtract(ops.constant(np.float32(1.0)), mask),
                        ops.constant(np.float32(-1e4)))
    bias = ops.unsqueeze(bias, ops.constant(np.int64(1)))  # padding: -1e4 before the softmax
    for _ in range(layers):  # self-attention (one head) and a feed-forward, each with a residual
        q, k, v = (ops.matmul(x, weight(hidden, hidden), False, False) for _ in range(3))
        scores = ops.divide(ops.matmul(q, k, False, True),
                            ops.constant(np.float32(np.sqrt(hidden))))
        attended = ops.matmul(ops.softmax(ops.add(scores, bias), -1), v, False, False)
        x = norm(ops.add(x, attended))
        feed = ops.matmul(ops.gelu(ops.matmul(x, weight(hidden, 4 * hidden), False, False),
                                   "erf"), weight(4 * hidden, hidden), False, False)
        x = norm(ops.add(x, feed))
    # Mean pooling over the real tokens, then the head.
    weights = ops.unsqueeze(mask, ops.constant(np.int64(2)))
    pooled = ops.divide(ops.reduce_sum(ops.multiply(x, weights), ops.constant(np.int64(1))),
                        ops.reduce_sum(weights, ops.constant(np.int64(1))))
    if output == "embedding":
        out = pooled
    else:
        out = ops.matmul(pooled, ops.constant(head.reshape(hidden, 1)), False, False)
        if favour is not None:  # +5 when the passage (type 1) holds the word
            held = ops.multiply(ops.convert(ops.equal(input_ids, ops.constant(
                np.int64(vocab[favour]))), np.float32), ops.convert(token_type_ids, np.float32))
            count = ops.reduce_sum(held, ops.constant(np.int64(1)), True)
            out = ops.add(out, ops.multiply(ops.minimum(count, ops.constant(np.float32(1.0))),
                                            ops.constant(np.float32(5.0))))
        if nan:
            out = ops.multiply(out, ops.constant(np.float32("nan")))
    result = ops.result(out)
    result.output(0).get_tensor().set_names({output})
    model = ov.Model([result], [input_ids, attention_mask, token_type_ids], "tiny-cross-encoder")
    ov.save_model(model, str(folder / "openvino_model.xml"), compress_to_fp16=False)
    if config:
        (folder / "config.json").write_text(json.dumps(
            {"model_type": "bert", "max_position_embeddings": window,
             "hidden_size": hidden, "num_labels": 1}), encoding="utf-8")
    return folder


if __name__ == "__main__":  # a stand-in of a published shape, for benchmarks/bench_rerank.py
    import argparse

    parser = argparse.ArgumentParser(description="Write a random cross-encoder (IR).")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--window", type=int, default=64)
    args = parser.parse_args()
    build_cross_encoder(args.folder, layers=args.layers, hidden=args.hidden, window=args.window)
    print(args.folder)
