"""Reranking speed (issue 40): a given reranker scoring the fused top N of real questions,
warm (the model compiled, one call per question), and whole `ragdb search` processes with and
without it, on the host named. The must-reach figures: 30 candidates in <= 0.3 s warm on a
2-core VNNI host (<= 1 s on AVX2 only), a whole search at most 1.5x one without reranking.

    uv run --frozen python -m benchmarks.bench_rerank --reranker FOLDER|NAME
        [--db data/bench/rag.db] [--n 20] [--depth 30] [--processes 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import SETS, VLLM_DB, dataset, host_line, percentile
from ragdb import RagDB
from ragdb.rerank import RerankParams, passage
from ragdb.rerank_models import MAX_TOKENS
from ragdb.resources import sql
from ragdb.retrieve import Hit
from ragdb.schemas import RagDataset


def questions(n: int) -> list[str]:
    """n public vLLM questions, docs and code taken in turn (distinct: no cache hit)."""
    sets = [[q.question for q in RagDataset.model_validate_json(
        dataset(name, False).read_text()).rag_questions] for name in SETS]
    mixed = [q for pair in zip(*sets) for q in pair]
    return list(dict.fromkeys(mixed))[:n]


def candidate_passages(conn: Any, hits: list[Hit]) -> list[str]:
    """What the reranker reads of each hit, as the search builds it (ragdb.rerank.passage
    with the chunk's context)."""
    ids = "[" + ",".join(str(h.chunk_id) for h in hits) + "]"
    contexts = {int(r[0]): str(r[1] or "")
                for r in conn.execute(sql("rerank_contexts"), {"ids": ids})}
    return [passage(h, contexts.get(h.chunk_id, "")) for h in hits]


def warm(db: Path, reranker: str, asked: list[str], depth: int,
         max_tokens: int) -> tuple[list[float], float, float]:
    """Seconds to score each question's fused top `depth` (after one call to warm up), the
    seconds the model took to load, and the mean tokens per pair."""
    with RagDB(db, use_cache=False, reranker=reranker,
               rerank_params=RerankParams(depth=depth, max_tokens=max_tokens)) as rag:
        stage = rag.reranking
        assert stage is not None
        started = time.perf_counter()
        encoder = stage.encoder
        load_s = time.perf_counter() - started
        with RagDB(db, use_cache=False, rerank=False) as fused:
            candidates = [fused.search(q, depth) for q in asked]
        texts = [candidate_passages(rag.conn, hits) for hits in candidates]
        stage.score(asked[0], texts[0])  # warm-up: first-inference allocations
        times, tokens = [], []
        for question, passages in zip(asked, texts):
            started = time.perf_counter()
            stage.score(question, passages)
            times.append(time.perf_counter() - started)
            tokens += [len(e.ids) for e in encoder.tokenizer.encode_batch(
                [(question[:encoder.window * 10], p[:encoder.window * 10]) for p in passages])]
    return times, load_s, statistics.mean(tokens) if tokens else 0.0


def processes(db: Path, reranker: str, asked: list[str]) -> tuple[list[float], list[float]]:
    """Seconds of whole `ragdb search` processes per question, without and with reranking
    (different cache keys: neither run is served from the cache)."""
    plain: list[float] = []
    reranked: list[float] = []
    for question in asked:
        for args, into in (((), plain), (("--reranker", reranker), reranked)):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "ragdb", "search", question, "--db",
                                   str(db), *args], capture_output=True, text=True)
            into.append(time.perf_counter() - started)
            if done.returncode != 0:
                raise SystemExit(f"ragdb search failed: {done.stderr.strip()}")
    return plain, reranked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reranker", required=True,
                        help="a cross-encoder folder (openvino_model.xml/.bin, tokenizer.json) "
                             "or a hub name")
    parser.add_argument("--db", type=Path, default=VLLM_DB)
    parser.add_argument("--n", type=int, default=20, help="questions timed warm")
    parser.add_argument("--depth", type=int, default=30, help="candidates scored")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS,
                        help="tokens of a pair where the model's window is longer")
    parser.add_argument("--processes", type=int, default=5,
                        help="questions run as whole processes (each with and without)")
    args = parser.parse_args()
    asked = questions(max(args.n, args.processes))
    times, load_s, tokens = warm(args.db, args.reranker, asked[:args.n], args.depth,
                                 args.max_tokens)
    print(host_line())
    print(f"reranker {args.reranker}: loaded in {load_s:.2f} s; {args.depth} candidates of "
          f"at most {args.max_tokens} tokens, "
          f"{tokens:.0f} tokens per pair on average, {len(times)} questions warm: "
          f"p50 {statistics.median(times):.3f} s, p95 {percentile(times, 0.95):.3f} s, "
          f"max {max(times):.3f} s")
    if args.processes:
        plain, reranked = processes(args.db, args.reranker, asked[-args.processes:])
        a, b = statistics.median(plain), statistics.median(reranked)
        print(f"whole `ragdb search` process (hybrid, k = 5), {len(plain)} questions, median: "
              f"{a:.2f} s without reranking, {b:.2f} s with --reranker ({MAX_TOKENS} tokens "
              f"at most; {b / a:.2f}x)")


if __name__ == "__main__":
    main()
