"""`make bench`: index the reference corpus from scratch and measure speed and recall.

Writes its database under data/bench/ (the user's rag.db is left alone) and prints a Markdown
table for the README. Run it on an otherwise idle machine; it reports medians.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from ragdb import evaluate, store
from ragdb.retrieve import Mode, Searcher
from ragdb.schemas import MinimalSource, RagDataset, StudentSearchResults, MinimalSearchResults

CORPUS_TGZ = Path("../shared/corpus/vllm-0.10.1.tar.gz")
CORPUS = Path("data/raw/vllm-0.10.1")
DATASETS = Path("../shared/datasets/public")
BENCH_DIR = Path("data/bench")
SETS = ("docs", "code")


def ensure_corpus() -> None:
    if CORPUS.is_dir():
        return
    print(f"extracting {CORPUS_TGZ} into data/raw/", file=sys.stderr)
    with tarfile.open(CORPUS_TGZ) as tar:
        tar.extractall("data/raw", filter="data")


def timed(fn: object, *args: object, **kwargs: object) -> tuple[object, float]:
    started = time.perf_counter()
    result = fn(*args, **kwargs)  # type: ignore[operator]
    return result, time.perf_counter() - started


def dataset(name: str, answered: bool = True) -> Path:
    folder = "AnsweredQuestions" if answered else "UnansweredQuestions"
    return DATASETS / folder / f"dataset_{name}_public.json"


def recall(searcher: Searcher, name: str, mode: Mode, k: int = 10) -> dict[int, float]:
    data = RagDataset.model_validate_json(dataset(name).read_text())
    results = []
    for question in data.rag_questions:
        hits = searcher.search(question.question, k, mode)
        results.append(
            MinimalSearchResults(
                question_id=question.question_id,
                question=question.question,
                question_str=question.question,
                retrieved_sources=[
                    MinimalSource(
                        file_path=h.file_path,
                        first_character_index=h.first,
                        last_character_index=h.last,
                    )
                    for h in hits
                ],
            )
        )
    return evaluate.evaluate(StudentSearchResults(search_results=results, k=k), data).recall


def latency(searcher: Searcher, mode: Mode, k: int = 10) -> tuple[float, float]:
    questions = [
        q.question
        for name in SETS
        for q in RagDataset.model_validate_json(dataset(name, False).read_text()).rag_questions
    ]
    times = []
    for question in questions:
        started = time.perf_counter()
        searcher.search(question, k, mode)
        times.append(time.perf_counter() - started)
    times.sort()
    return statistics.median(times) * 1000, times[int(len(times) * 0.95)] * 1000


def search_dataset_wall(db: Path, mode: Mode) -> float:
    """Two real `python -m ragdb search_dataset` processes, start-up included."""
    started = time.perf_counter()
    for name in SETS:
        subprocess.run(
            [sys.executable, "-m", "ragdb", "search_dataset", "--dataset_path",
             str(dataset(name, False)), "--k", "10", "--save_directory",
             str(BENCH_DIR / "search_results"), "--mode", mode.value, "--db", str(db)],
            check=True, stdout=subprocess.DEVNULL,
        )
    return time.perf_counter() - started


def index_timings(db: Path, max_chunk_size: int, repeats: int) -> dict[str, float]:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    conn = store.connect(db, create=True)
    _, full = timed(store.index_paths, conn, [Path("data/raw")], max_chunk_size=max_chunk_size)
    noop = statistics.median(
        timed(store.index_paths, conn, [Path("data/raw")], max_chunk_size=max_chunk_size)[1]
        for _ in range(repeats)
    )
    victim = CORPUS / "docs/features/lora.md"
    original = victim.read_bytes()
    changed = []
    try:
        for i in range(repeats):
            victim.write_bytes(original + f"\n<!-- bench edit {i} -->\n".encode())
            changed.append(
                timed(store.index_paths, conn, [Path("data/raw")],
                      max_chunk_size=max_chunk_size)[1]
            )
    finally:
        victim.write_bytes(original)
        store.index_paths(conn, [Path("data/raw")], max_chunk_size=max_chunk_size)
    return {"full": full, "noop": noop, "one_changed": statistics.median(changed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk-sizes", default="500,1000,2000",
                        help="max_chunk_size values for the recall-vs-size table")
    parser.add_argument("--quick", action="store_true", help="skip the chunk-size sweep")
    args = parser.parse_args()
    ensure_corpus()
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    db = BENCH_DIR / "rag.db"
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    timings = index_timings(db, store.MAX_CHUNK_SIZE, args.repeats)
    conn = store.connect(db)
    searcher = Searcher(conn)
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchall()[0][0]
    print(f"\n| measure | value |\n|---|---|")
    print(f"| chunks (max_chunk_size 2000) | {chunks} |")
    print(f"| full index | {timings['full']:.1f} s |")
    print(f"| no-op re-index (median of {args.repeats}) | {timings['noop']:.2f} s |")
    print(f"| one file changed (median of {args.repeats}) | {timings['one_changed']:.2f} s |")
    modes = [Mode.lexical]
    for mode in modes:
        wall = statistics.median(search_dataset_wall(db, mode) for _ in range(args.repeats))
        p50, p95 = latency(searcher, mode)
        print(f"| {mode.value}: two search_dataset processes, 199 questions | {wall:.2f} s |")
        print(f"| {mode.value}: in-process query p50 / p95 | {p50:.1f} / {p95:.1f} ms |")
    print("\n| mode | set | recall@1 | recall@3 | recall@5 | recall@10 |\n|---|---|---|---|---|---|")
    for mode in modes:
        for name in SETS:
            r = recall(searcher, name, mode)
            print(f"| {mode.value} | {name} | " + " | ".join(f"{r[k]:.3f}" for k in evaluate.KS) + " |")
    if args.quick:
        return
    print("\n| max_chunk_size | set | recall@1 | recall@5 | recall@10 | full index |")
    print("|---|---|---|---|---|---|")
    for size in [int(s) for s in args.chunk_sizes.split(",")]:
        sized = BENCH_DIR / f"rag-{size}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{sized}{suffix}").unlink(missing_ok=True)
        sconn = store.connect(sized, create=True)
        _, seconds = timed(store.index_paths, sconn, [Path("data/raw")], max_chunk_size=size)
        for name in SETS:
            r = recall(Searcher(sconn), name, Mode.lexical)
            print(f"| {size} | {name} | {r[1]:.3f} | {r[5]:.3f} | {r[10]:.3f} | {seconds:.1f} s |")


if __name__ == "__main__":
    main()
