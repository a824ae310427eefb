"""Embedding cost (windows, tokens) against hybrid recall, per vector policy (issue 8).

The lexical index is built once (`--no-vectors`); each policy then runs the real
`vectors.sync_vectors` on a copy of it through an embedder wrapper that counts what the model is
given (texts, and tokens after truncation, with the embedder's own tokenizer) and caches
vectors by (max_length, text) so that policies sharing windows do not pay for them twice.
Counts and recall are deterministic; `--time` builds full indexes side by side instead.

    uv run --frozen python -m benchmarks.embed_cost                 # every policy in VARIANTS
    uv run --frozen python -m benchmarks.embed_cost base tok64      # some of them
    uv run --frozen python -m benchmarks.embed_cost --time base tok64-first3-min80-skip
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import dataset
from ragdb import evaluate, vectors
from ragdb.db import connect
from ragdb.embedder import Embedder, load_embedder
from ragdb.indexing import index_paths
from ragdb.retrieve import Mode, Searcher, SearchParams, search_results
from ragdb.schemas import RagDataset

WORK = Path("data/embcost")
ROOTS = [Path("data/raw")]
SETS = {"docs": dataset("docs"), "code": dataset("code"), "para": dataset("paraphrased")}

BASE = vectors.POLICIES["docs"]  # the policy before issue 8
_SKIP = ("*/CHANGELOG*", "*/requirements/*", "*/docs/api/*")


def v(name: str, **changes: Any) -> vectors.VectorPolicy:
    return dataclasses.replace(BASE, name=name, **changes)


VARIANTS: dict[str, vectors.VectorPolicy] = {p.name: p for p in (
    v("base"),
    v("dedupe", dedupe=True),
    v("tok128", doc_max_tokens=128),
    v("tok96", doc_max_tokens=96),
    v("tok64", doc_max_tokens=64),
    v("win300", doc_window_chars=300),
    v("win600", doc_window_chars=600),
    v("win600-tok96", doc_window_chars=600, doc_max_tokens=96),
    v("head-last", doc_head="last-heading"),
    v("head-none", doc_head="none"),
    v("min40", min_window_chars=40),
    v("skip-paths", skip_paths=_SKIP),
    v("first1", max_windows=1),
    v("first2", max_windows=2),
    v("head-last-tok64", doc_head="last-heading", doc_max_tokens=64),
    v("head-last-tok96", doc_head="last-heading", doc_max_tokens=96),
    v("head-last-tok64-min40-skip", doc_head="last-heading", doc_max_tokens=64,
      min_window_chars=40, dedupe=True, skip_paths=_SKIP),
    v("head-last-first2-tok96", doc_head="last-heading", doc_max_tokens=96, max_windows=2,
      min_window_chars=40, dedupe=True),
    v("tok64-first3-min40-skip", doc_max_tokens=64, max_windows=3, min_window_chars=40,
      dedupe=True, skip_paths=_SKIP),
    v("tok64-first2-min40-skip", doc_max_tokens=64, max_windows=2, min_window_chars=40,
      dedupe=True, skip_paths=_SKIP),
    v("tok96-first2-min40-skip", doc_max_tokens=96, max_windows=2, min_window_chars=40,
      dedupe=True, skip_paths=_SKIP),
    v("win300-first2-min40-skip", doc_window_chars=300, max_windows=2, min_window_chars=40,
      dedupe=True, skip_paths=_SKIP),
    v("win300-first3-min40-skip", doc_window_chars=300, max_windows=3, min_window_chars=40,
      dedupe=True, skip_paths=_SKIP),
    v("tok64-first3-min40-skip-tests", doc_max_tokens=64, max_windows=3, min_window_chars=40,
      dedupe=True, skip_paths=_SKIP + ("*/tests/*",)),
    v("tok64-first3-min80-skip", doc_max_tokens=64, max_windows=3, min_window_chars=80,
      dedupe=True, skip_paths=_SKIP),
    v("tok64-first3-min80-skip-tests", doc_max_tokens=64, max_windows=3, min_window_chars=80,
      dedupe=True, skip_paths=_SKIP + ("*/tests/*",)),
    v("tok128-first1", doc_max_tokens=128, max_windows=1),
    v("tok64-skip", doc_max_tokens=64, dedupe=True, skip_paths=_SKIP),
    v("head-last-first3-tok64", doc_head="last-heading", doc_max_tokens=64, max_windows=3,
      min_window_chars=40, dedupe=True, skip_paths=_SKIP),
)}


class CountingEmbedder:
    """Quacks like Embedder for sync_vectors: counts model input, caches vectors."""

    def __init__(self, real: Embedder, cache: dict[tuple[int, str], np.ndarray]) -> None:
        self.real, self.cache = real, cache
        self.identity, self.dim = real.identity, real.dim
        self.texts = self.tokens = self.computed = 0

    def embed(self, texts: Sequence[str], *, max_length: int | None = None,
              batch_size: int | None = None) -> np.ndarray:
        length = max_length or self.real.max_length
        if texts:
            tok = self.real.tokenizer
            tok.enable_truncation(length)
            self.tokens += sum(len(e.ids) for e in tok.encode_batch([t[: length * 10]
                                                                     for t in texts]))
            self.texts += len(texts)
        todo = list(dict.fromkeys(t for t in texts if (length, t) not in self.cache))
        if todo:
            fresh = self.real.embed(todo, max_length=length, batch_size=batch_size)
            self.computed += len(todo)
            self.cache.update({(length, t): vec for t, vec in zip(todo, fresh)})
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self.cache[(length, t)]
        return out


def lexical_db() -> Path:
    db = WORK / "lexical.db"
    if not db.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        conn = connect(db, create=True)
        index_paths(conn, ROOTS)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    return db


def copy_db(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{dst}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(src, dst)


def recall(searcher: Searcher, path: Path, mode: Mode) -> dict[int, float]:
    data = RagDataset.model_validate_json(path.read_text())
    found = searcher.search_many([q.question for q in data.rag_questions], 10, mode)
    return evaluate.evaluate(search_results(data.rag_questions, found, 10), data).recall


def measure(conn: Any, real: Embedder, params: SearchParams = SearchParams(),
            modes: Sequence[Mode] = (Mode.hybrid,)) -> dict[str, dict[int, float]]:
    searcher = Searcher(conn, params, use_cache=False)
    searcher._embedder = real
    out = {}
    for mode in modes:
        for name, path in SETS.items():
            if path.exists():
                out[f"{mode.value}/{name}"] = recall(searcher, path, mode)
    return out


def fusion_table(conn: Any, real: Embedder, name: str) -> dict[str, Any]:
    """Recall@1/5/10 per mode. (Hybrid with a higher dense weight on plain questions,
    w_dense_plain, was deleted in issue 40: it never earned a place.)"""
    rows: dict[str, Any] = {}
    for mode in Mode:
        rows[mode.value] = measure(conn, real, modes=(mode,))
    print(f"\n{name}: | setting | " + " | ".join(f"{s} R@1/5/10" for s in SETS) + " |")
    for label, row in rows.items():
        cells = []
        for set_name in SETS:
            r = next((v for k, v in row.items() if k.endswith("/" + set_name)), None)
            cells.append(f"{r[1]:.3f}/{r[5]:.3f}/{r[10]:.3f}" if r else "-")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    return rows


def run_variants(names: Sequence[str], modes: Sequence[Mode], fusion: bool = False) -> None:
    real = load_embedder()
    cache_file = WORK / "vector_cache.pkl"
    cache = pickle.loads(cache_file.read_bytes()) if cache_file.exists() else {}
    results_file = WORK / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    src = lexical_db()
    for name in names:
        policy = VARIANTS[name]
        db = WORK / "variant.db"
        copy_db(src, db)
        conn = connect(db)
        counting = CountingEmbedder(real, cache)
        started = time.perf_counter()
        stats = vectors.sync_vectors(conn, counting, policy=policy)  # type: ignore[arg-type]
        seconds = time.perf_counter() - started
        row = {"policy": policy.key, "dedupe": policy.dedupe, "windows": counting.texts,
               "vectors": stats.total, "tokens": counting.tokens,
               "computed_now": counting.computed, "seconds": round(seconds, 1),
               "recall": measure(conn, real, modes=modes)}
        if fusion:
            row["fusion"] = fusion_table(conn, real, name)
        results[name] = row
        conn.close()
        cache_file.write_bytes(pickle.dumps(cache))
        results_file.write_text(json.dumps(results, indent=1))
        r: Any = row["recall"]
        cols = " | ".join(f"{r[k]['1']:.3f}/{r[k]['5']:.3f}" if isinstance(next(iter(r[k])), str)
                          else f"{r[k][1]:.3f}/{r[k][5]:.3f}" for k in r)
        print(f"| {name} | {row['windows']} | {row['vectors']} | {row['tokens']} | {cols} |",
              flush=True)


def time_full(names: Sequence[str], rounds: int) -> None:
    """Full index with vectors (lexical pass + sync_vectors), policies alternated."""
    real = load_embedder()
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            db = WORK / f"time-{name}.db"
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            conn = connect(db, create=True)
            started = time.perf_counter()
            index_paths(conn, ROOTS)
            vectors.sync_vectors(conn, real, policy=VARIANTS[name])
            times[name].append(time.perf_counter() - started)
            conn.close()
            print(f"{name}: {times[name][-1]:.1f} s", flush=True)
    first = min(times[names[0]])
    for name in names:
        best = min(times[name])
        print(f"| {name} | {' / '.join(f'{t:.1f}' for t in times[name])} s | best {best:.1f} s "
              f"| ratio {best / first:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="*", help=f"from: {', '.join(VARIANTS)}")
    parser.add_argument("--time", action="store_true", help="time full indexes side by side")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dense", action="store_true", help="also dense-only recall")
    parser.add_argument("--fusion", action="store_true",
                        help="also every mode, per policy")
    args = parser.parse_args()
    names = args.variants or list(VARIANTS)
    if args.time:
        time_full(names, args.rounds)
        return
    modes = (Mode.hybrid, Mode.dense) if args.dense else (Mode.hybrid,)
    print("| policy | windows | vectors | tokens | " + " | ".join(
        f"{m.value} {s} R@1/R@5" for m in modes for s in SETS if SETS[s].exists()) + " |")
    run_variants(names, modes, args.fusion)


if __name__ == "__main__":
    main()
