"""`make bench`: index the reference corpus from scratch and measure speed and recall.

Writes its database under data/bench/ (the user's rag.db is left alone) and prints a Markdown
table for the README. Run it on an otherwise idle machine; it reports medians.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import urllib.request
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.common import (
    BENCH_DIR,
    CORPUS,
    SETS,
    VLLM_DB,
    dataset,
    ensure_corpus,
    host_line,
    percentile,
)
from benchmarks.loadtest import load_test
from ragdb import RagDB, evaluate
from ragdb.db import write_transaction
from ragdb.retrieve import Mode
from ragdb.schemas import RagDataset


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - started


def recall(rag: RagDB, name: str, mode: Mode, k: int = 10) -> dict[int, float]:
    data = RagDataset.model_validate_json(dataset(name).read_text())
    return evaluate.evaluate(rag.search_dataset(data, k, mode), data).recall


def latency(rag: RagDB, mode: Mode, k: int = 10) -> tuple[float, float]:
    questions = [
        q.question
        for name in SETS
        for q in RagDataset.model_validate_json(dataset(name, False).read_text()).rag_questions
    ]
    times = []
    for question in questions:
        started = time.perf_counter()
        rag.search(question, k, mode)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000, percentile(times, 0.95) * 1000


def search_dataset_wall(db: Path, mode: Mode) -> float:
    """Two real `python -m ragdb search_dataset` processes, start-up and model load included.

    The query cache is emptied first: this measures cold runs, not cache hits.
    """
    with RagDB(db) as rag, write_transaction(rag.conn):
        rag.conn.execute("DELETE FROM query_cache")
    started = time.perf_counter()
    for name in SETS:
        subprocess.run(
            [sys.executable, "-m", "ragdb", "search_dataset", "--dataset_path",
             str(dataset(name, False)), "--k", "10", "--save_directory",
             str(BENCH_DIR / "search_results"), "--mode", mode.value, "--db", str(db)],
            check=True, stdout=subprocess.DEVNULL,
        )
    return time.perf_counter() - started


def command_walls(db: Path, repeats: int) -> dict[str, float]:
    """One whole `ragdb search` / `ragdb answer` process each, as a user runs them: Python
    start-up, imports, the query model's load and the search (and the answer's unit
    embedding) included, median of `repeats`, each a public question not asked before (the
    query cache is emptied first, so none is a cache hit)."""
    with RagDB(db) as rag, write_transaction(rag.conn):
        rag.conn.execute("DELETE FROM query_cache")
    data = RagDataset.model_validate_json(dataset("docs").read_text())
    runs = {"search, lexical": ["search", "--mode", "lexical"], "search, hybrid": ["search"],
            "answer (extractive), hybrid": ["answer", "--style", "extractive"]}
    if repeats * len(runs) > len(data.rag_questions):  # a repeated question is a cache hit
        raise SystemExit(f"--repeats {repeats}: at most {len(data.rag_questions) // len(runs)} "
                         "(each run asks a public docs question not asked before)")
    questions = iter(q.question for q in data.rag_questions)
    out = {}
    for label, command in runs.items():
        times = []
        for _ in range(repeats):
            args = [sys.executable, "-m", "ragdb", command[0], next(questions), *command[1:],
                    "--db", str(db)]
            times.append(timed(subprocess.run, args, check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)[1])
        out[label] = statistics.median(times)
    return out


def print_command_walls(db: Path, repeats: int) -> None:
    print("\n| one whole process, a new question (start-up included) | seconds |\n|---|---|")
    for label, seconds in command_walls(db, repeats).items():
        print(f"| `ragdb {label}` | {seconds:.2f} |")


def fresh_db(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def index_timings(db: Path, repeats: int, vectors: bool) -> dict[str, float]:
    """Full build (fresh each time), no-op re-run and one-changed-file re-run, as `ragdb index`
    does them, in process; plus the embedding work of the last full build."""
    fulls, rows_at = [], []
    result = None
    for _ in range(repeats):
        fresh_db(db)
        rag = RagDB(db)
        result, seconds = timed(rag.index, [Path("data/raw")], vectors=vectors)
        fulls.append(seconds)
        rows_at.append(result.stats.seconds)  # the lexical index is committed (searchable)
    build = partial(rag.index, [Path("data/raw")], vectors=vectors)
    noop = statistics.median(timed(build)[1] for _ in range(repeats))
    victim = CORPUS / "docs/features/lora.md"
    original = victim.read_bytes()
    changed = []
    try:
        for i in range(repeats):
            victim.write_bytes(original + f"\n<!-- bench edit {i} -->\n".encode())
            changed.append(timed(build)[1])
    finally:
        victim.write_bytes(original)
        build()
    cli_noop = statistics.median(timed(subprocess.run, [
        sys.executable, "-m", "ragdb", "index", "data/raw", "--db", str(db)]
        + ([] if vectors else ["--no-vectors"]), check=True, stdout=subprocess.DEVNULL)[1]
        for _ in range(repeats))
    out = {"full": statistics.median(fulls), "rows": statistics.median(rows_at), "noop": noop,
           "one_changed": statistics.median(changed), "cli_noop": cli_noop}
    vstats = result.vectors if result is not None else None
    if vstats is not None:
        out.update(windows=vstats.windows, tokens=vstats.tokens, embed_s=vstats.seconds)
    return out


def cached_repeat_ms(rag: RagDB, question: str, repeats: int = 50) -> float:
    rag.search(question, 10, Mode.hybrid)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        rag.search(question, 10, Mode.hybrid)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def serve_load(db: Path, port: int = 8765) -> None:
    """200 searches, 8 at a time, against a real `ragdb serve` while it re-indexes."""
    server = subprocess.Popen(
        [sys.executable, "-m", "ragdb", "serve", "--port", str(port), "--db", str(db)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(base + "/-/ragdb/status", timeout=5):
                    break
            except OSError:
                time.sleep(0.5)
        result = load_test(base, n=200, concurrency=8, during_index=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("\n| HTTP load: 200 hybrid searches, 8 at a time, during an index run | |\n|---|---|")
    print(f"| p50 / p95 | {result['p50_ms']:.1f} / {result['p95_ms']:.1f} ms |")
    print(f"| errors | {result['errors']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk-sizes", default="500,1000,2000",
                        help="max_chunk_size values for the recall-vs-size table")
    parser.add_argument("--quick", action="store_true", help="skip the chunk-size sweep")
    parser.add_argument("--startup", action="store_true",
                        help="only the whole-process times of `ragdb search` and `ragdb answer` "
                        "on data/bench/rag.db as it is")
    args = parser.parse_args()
    ensure_corpus()
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    print(f"{host_line()}; medians of {args.repeats} runs")
    if args.startup:
        print_command_walls(VLLM_DB, max(args.repeats, 5))
        return
    print("\n| measure | lexical only | with vectors |\n|---|---|---|")
    lexical_db, hybrid_db = BENCH_DIR / "lexical.db", VLLM_DB
    lex_t = index_timings(lexical_db, args.repeats, vectors=False)
    vec_t = index_timings(hybrid_db, args.repeats, vectors=True)
    for key, label in (("full", "full index"),
                       ("rows", "lexical index committed (searchable) after"),
                       ("noop", "no-op re-index (in process)"),
                       ("cli_noop", "no-op `ragdb index` (whole process)"),
                       ("one_changed", "one file changed")):
        print(f"| {label} | {lex_t[key]:.2f} s | {vec_t[key]:.2f} s |")
    if "windows" in vec_t and vec_t["embed_s"]:
        print(f"| windows / tokens embedded (full index) | | {vec_t['windows']:.0f} / "
              f"{vec_t['tokens']:.0f} |")
        print(f"| embedding throughput | | {vec_t['windows'] / vec_t['embed_s']:.1f} windows/s, "
              f"{vec_t['tokens'] / vec_t['embed_s']:.0f} tokens/s |")
    rag = RagDB(hybrid_db)
    status = rag.status()
    print(f"| chunks / vectors | {status['chunks']} | {status['vectors']} |")

    print("\n| mode | two search_dataset processes (199 q) | query p50 | query p95 |")
    print("|---|---|---|---|")
    for mode in Mode:
        wall = statistics.median(search_dataset_wall(hybrid_db, mode) for _ in range(args.repeats))
        p50, p95 = latency(RagDB(hybrid_db, use_cache=False), mode)
        print(f"| {mode.value} | {wall:.2f} s | {p50:.1f} ms | {p95:.1f} ms |")
    repeat = cached_repeat_ms(rag, "How do I serve several LoRA adapters at once?")
    print(f"| hybrid, cached repeat | | {repeat:.2f} ms | |")
    print_command_walls(hybrid_db, max(args.repeats, 5))

    print("\n| mode | set | recall@1 | recall@3 | recall@5 | recall@10 |")
    print("|---|---|---|---|---|---|")
    for mode in Mode:
        uncached = RagDB(hybrid_db, use_cache=False)
        for name in (*SETS, "heldout"):
            r = recall(uncached, name, mode)
            print(f"| {mode.value} | {name} | "
                  + " | ".join(f"{r[k]:.3f}" for k in evaluate.KS) + " |")
    serve_load(hybrid_db)
    if args.quick:
        return
    print("\n| max_chunk_size (lexical) | set | recall@1 | recall@5 | recall@10 | full index |")
    print("|---|---|---|---|---|---|")
    for size in [int(s) for s in args.chunk_sizes.split(",")]:
        sized = BENCH_DIR / f"lexical-{size}.db"
        fresh_db(sized)
        sized_rag = RagDB(sized, use_cache=False)
        _, seconds = timed(sized_rag.index, [Path("data/raw")], max_chunk_size=size,
                           vectors=False)
        for name in SETS:
            r = recall(sized_rag, name, Mode.lexical)
            print(f"| {size} | {name} | {r[1]:.3f} | {r[5]:.3f} | {r[10]:.3f} | {seconds:.1f} s |")


if __name__ == "__main__":
    main()
