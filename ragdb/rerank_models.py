"""Cross-encoder rerankers on OpenVINO: where one is (a folder, or a hub name fetched once into
the models folder) and how it scores (question, passage) pairs.

A reranker folder holds an OpenVINO IR cross-encoder (`openvino_model.xml` and `.bin`, at the
top or in `openvino/`) or an ONNX one (`model.onnx`, at the top or in `onnx/`), its
`tokenizer.json`, and optionally the model's `config.json` (its window). The model takes
input_ids and attention_mask (and token_type_ids, if it has that input) and gives one logit
per pair ([batch, 1] or [batch]). No torch: the hub's published OpenVINO or ONNX export is
taken and saved as IR once (`ragdb.rerank` is the stage that uses it).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragdb.embedder import _compile, _fingerprint, _import_openvino
from ragdb.errors import RagdbError

if TYPE_CHECKING:
    import numpy as np

#: The most tokens a (question, passage) pair is given, whatever the model's window: a pair
#: costs about its length squared, and 30 of them must score in well under a second.
MAX_TOKENS = 512
#: The window of a model whose folder has no config.json to say it.
DEFAULT_WINDOW = 512
#: Pairs per inference call (sorted by length, so a batch pads little).
BATCH_SIZE = 16
#: Where hub rerankers are kept, below the models folder.
HUB_FOLDER = "rerankers"
#: What is fetched of a hub reranker: the IR or ONNX export, never the torch weights.
HUB_FILES = (
    "tokenizer.json", "config.json",
    "openvino/openvino_model.xml", "openvino/openvino_model.bin",
    "openvino_model.xml", "openvino_model.bin", "onnx/model.onnx", "model.onnx",
)
_IR = ("openvino_model.xml", "openvino/openvino_model.xml")
_ONNX = ("model.onnx", "onnx/model.onnx")
_INPUTS = {"input_ids", "attention_mask", "token_type_ids"}


@dataclass(frozen=True)
class RerankerFiles:
    """A reranker found on disk: its model file, tokenizer, window and identity (name and a
    fingerprint of its weights: cached results of another model never match it)."""

    name: str
    folder: Path
    label: str
    model: Path
    tokenizer: Path
    window: int
    identity: str


def resolve_reranker(spec: str, models: Path) -> RerankerFiles:
    """The files of `--reranker NAME|FOLDER`: a local folder, else a hub name (`owner/name`)
    kept under models/rerankers once fetched; any failure is one RagdbError line."""
    spec = spec.strip()
    if not spec:
        raise RagdbError("the reranker name is empty: give a folder or a hub name")
    local = Path(spec).expanduser()
    if local.exists():
        return _folder_files(local, spec, local.resolve().name)
    if spec.count("/") != 1 or spec.startswith((".", "/", "~")) or "\\" in spec:
        raise RagdbError(f"reranker {spec} not found: no such folder, and not a hub name "
                         "(owner/name)")
    folder = models / HUB_FOLDER / spec.replace("/", "--")
    if not folder.exists():
        _fetch(spec, folder)
    return _folder_files(folder, spec, spec, hint=f"delete {folder} to fetch it again")


def _folder_files(folder: Path, name: str, label: str, hint: str = "") -> RerankerFiles:
    """Check a reranker folder and fingerprint it, without loading anything; `label` starts
    its identity (the folder's own name, or the hub name)."""
    where = f"reranker {name}" + (f" ({folder})" if str(folder) != name else "")
    advice = f": {hint}" if hint else ""
    if not folder.is_dir():
        raise RagdbError(f"{where} is not a folder: give a folder holding openvino_model.xml, "
                         "openvino_model.bin and tokenizer.json, or a hub name")
    model = _model_file(folder)
    if model is None:
        raise RagdbError(f"{where} holds no cross-encoder: openvino_model.xml with its .bin "
                         f"(or model.onnx) is missing{advice}")
    tokenizer = folder / "tokenizer.json"
    if not tokenizer.is_file():
        raise RagdbError(f"{where} has no tokenizer.json{advice}")
    weights = model.with_suffix(".bin") if model.suffix == ".xml" else model
    empty = [p.name for p in (model, weights, tokenizer) if p.stat().st_size == 0]
    if empty:
        raise RagdbError(f"{where} is incomplete: {', '.join(sorted(set(empty)))} empty{advice}")
    try:
        identity = (f"{label}@{_fingerprint(weights)}.{_fingerprint(model)}"
                    f".{_fingerprint(tokenizer)}")
    except OSError as exc:
        raise RagdbError(f"cannot read {where}: {exc.strerror or exc}") from None
    window = min(_window(folder), MAX_TOKENS)
    return RerankerFiles(name, folder, label, model, tokenizer, window,
                         f"{identity}/maxlen={window}")


def _model_file(folder: Path) -> Path | None:
    for name in _IR:
        xml = folder / name
        if xml.is_file() and xml.with_suffix(".bin").is_file():
            return xml
    for name in _ONNX:
        if (folder / name).is_file():
            return folder / name
    return None


def _window(folder: Path) -> int:
    """The model's window in tokens: config.json's max_position_embeddings (two fewer for
    RoBERTa's family, whose positions start after the padding index), else DEFAULT_WINDOW."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return DEFAULT_WINDOW
    if not isinstance(config, dict):
        return DEFAULT_WINDOW
    value = config.get("max_position_embeddings")
    if not isinstance(value, int) or isinstance(value, bool) or value < 8:
        return DEFAULT_WINDOW
    return value - 2 if "roberta" in str(config.get("model_type", "")) else value


def _fetch(repo: str, folder: Path) -> None:
    """Fetch a hub reranker's export once and keep it as IR in `folder` (which appears only
    when complete); no hub: one line saying why, as for the answer model."""
    from ragdb.generate.models import _hub_unreachable_reason, first_line

    reason = _hub_unreachable_reason()
    if reason is not None:
        raise RagdbError(f"cannot get reranker {repo}: {reason}, and it is not a local folder")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise RagdbError("fetching rerankers needs huggingface_hub: pip install "
                         "huggingface_hub") from None
    partial = folder.with_name(folder.name + ".partial")
    download = partial / "download"
    try:
        download.mkdir(parents=True, exist_ok=True)
        snapshot_download(repo_id=repo, local_dir=download, allow_patterns=list(HUB_FILES))
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # network, auth, missing repo: all end the same way for users
        raise RagdbError(f"could not download reranker {repo}: {first_line(exc)}") from None
    source = _model_file(download)
    if source is None or not (download / "tokenizer.json").is_file():
        raise RagdbError(f"{repo} has no OpenVINO or ONNX export with a tokenizer.json on the "
                         "hub: export one (optimum-cli export openvino --task "
                         "text-classification) and give its folder")
    try:
        ov = _import_openvino()
        model = ov.Core().read_model(str(source))
        ov.save_model(model, str(partial / "openvino_model.xml"))
    except Exception as exc:  # OpenVINO's reasons are long C++ messages
        raise RagdbError(f"could not convert reranker {repo} to OpenVINO: "
                         f"{first_line(exc)[:200]}") from None
    for name in ("tokenizer.json", "config.json"):
        if (download / name).is_file():
            shutil.copyfile(download / name, partial / name)
    shutil.rmtree(download, ignore_errors=True)
    os.replace(partial, folder)


class CrossEncoder:
    """A compiled cross-encoder and its tokenizer: one score per (question, passage) pair,
    each pair truncated to the model's window (the longer side first)."""

    def __init__(self, files: RerankerFiles, *, batch_size: int = BATCH_SIZE,
                 max_tokens: int = MAX_TOKENS) -> None:
        from tokenizers import Tokenizer

        self.files = files
        self.identity = files.identity
        self.window = min(files.window, max_tokens)
        self.batch_size = batch_size
        self._lock = threading.Lock()
        where = f"reranker {files.name}"
        try:
            self.tokenizer = Tokenizer.from_file(str(files.tokenizer))
            padding = self.tokenizer.padding or {}
            self.pad_id = int(padding.get("pad_id", self._pad_token()))
            self.tokenizer.no_padding()
            self.tokenizer.enable_truncation(self.window, strategy="longest_first")
            compiled = _compile(files.model)
        except Exception as exc:  # a truncated file: tokenizers and OpenVINO say it at length
            why = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise RagdbError(f"cannot load {where}: {why}") from None
        names = {name for port in compiled.inputs for name in port.get_names()}
        if not {"input_ids", "attention_mask"} <= names or names - _INPUTS:
            raise RagdbError(f"{where} is not a cross-encoder: its inputs are {sorted(names)}, "
                             "not input_ids, attention_mask (and token_type_ids)")
        self._inputs = names
        self._compiled = compiled
        self._request = compiled.create_infer_request()
        self._output = next((port for port in compiled.outputs if "logits" in port.get_names()),
                            compiled.outputs[0])
        try:
            self._scores(self._run([self.tokenizer.encode("probe", "probe")] * 2), 2)
        except RagdbError:
            raise
        except Exception as exc:
            why = " ".join(str(exc).split())[:200] or type(exc).__name__
            raise RagdbError(f"{where} cannot score a pair: {why}") from None

    def _pad_token(self) -> int:
        for token in ("[PAD]", "<pad>"):
            found = self.tokenizer.token_to_id(token)
            if found is not None:
                return int(found)
        return 0

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        """One score per passage (higher: more relevant), in their order; NaN where the model
        gave NaN (the caller decides what that means)."""
        if not passages:
            return []
        # Characters past about 10 per token can only be truncated away: never tokenised.
        limit = self.window * 10
        pairs = [(question[:limit], passage[:limit]) for passage in passages]
        with self._lock:
            encodings = self.tokenizer.encode_batch(pairs)
            order = sorted(range(len(pairs)), key=lambda i: len(encodings[i].ids))
            scores = [0.0] * len(pairs)
            for start in range(0, len(order), self.batch_size):
                batch = order[start:start + self.batch_size]
                raw = self._run([encodings[i] for i in batch])
                for i, value in zip(batch, self._scores(raw, len(batch))):
                    scores[i] = float(value)
        return scores

    def _run(self, encodings: Sequence[Any]) -> np.ndarray:
        """The model's raw output for a batch of encoded pairs, padded to the longest."""
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self.pad_id, dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            ids[row, :len(e.ids)] = e.ids
            mask[row, :len(e.ids)] = 1
            types[row, :len(e.ids)] = e.type_ids
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = types
        return np.asarray(self._request.infer(feed)[self._output], dtype=np.float32)

    def _scores(self, raw: np.ndarray, pairs: int) -> np.ndarray:
        """One score per pair from a [batch, 1] or [batch] output; any other shape is not a
        cross-encoder's (an embedder gives [batch, tokens, dim])."""
        scores = raw[:, 0] if raw.ndim == 2 and raw.shape[1] == 1 else raw
        if scores.ndim != 1 or scores.shape[0] != pairs:
            raise RagdbError(f"reranker {self.files.name} is not a cross-encoder: it gives an "
                             f"output of shape {list(raw.shape)} for {pairs} pairs, not one "
                             "score per pair")
        return scores


def load_cross_encoder(files: RerankerFiles, max_tokens: int = MAX_TOKENS) -> CrossEncoder:
    """Compile a resolved reranker (pairs cut to `max_tokens` where its window is longer);
    its files must still be the ones fingerprinted (a folder replaced meanwhile would serve
    one model's results under another's name)."""
    encoder = CrossEncoder(files, max_tokens=max_tokens)
    if _folder_files(files.folder, files.name, files.label).identity != files.identity:
        raise RagdbError(f"reranker {files.name} changed on disk while it was loading: "
                         "search again")
    return encoder
