"""Every language versus Python and prose only: index speed per megabyte, what each language
adds, and whether the new files change recall on the public sets.

    uv run --frozen python -m benchmarks.bench_languages [--repeats 2] [--hybrid]

Indexes the reference corpus lexical-only twice, side by side, under data/bench/: with the
default file set (every language ragdb knows, .gitignore honoured) and with the old default
(`--exclude '*' --include '*.py' '*.md' '*.txt' '*.rst'`), and prints MB/s of each and
their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from pathlib import Path

from benchmarks.common import BENCH_DIR, SETS, dataset, ensure_corpus, host_line
from ragdb import RagDB, evaluate
from ragdb.db import scalar
from ragdb.walking import EVERYTHING, PYTHON_AND_DOCS
from ragdb.retrieve import Mode, search_results
from ragdb.schemas import RagDataset

PROSE_AND_PYTHON = ("python", "markdown", "rst", "text")


def _fresh(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def index_rate(db: Path, include: tuple[str, ...], vectors: bool = False) -> tuple[float, float]:
    """(seconds, megabytes of text indexed) of a full index from scratch."""
    _fresh(db)
    rag = RagDB(db, use_cache=False)
    started = time.perf_counter()
    # Only the files `include` names (Python and prose), or the default rule (every file).
    rag.index([Path("data/raw")], include=include, exclude=EVERYTHING if include else (),
              vectors=vectors)
    seconds = time.perf_counter() - started
    size = int(scalar(rag.conn, "SELECT coalesce(sum(size), 0) FROM files"))
    rag.close()
    return seconds, size / 1e6


def per_language(db: Path) -> list[tuple[str, int, int, float]]:
    rag = RagDB(db)
    rows = rag.conn.execute(
        "SELECT f.kind, count(DISTINCT f.id), count(c.id), sum(length(c.text)) / 1e6 "
        "FROM files AS f LEFT JOIN chunks AS c ON c.file_id = f.id "
        "GROUP BY f.kind ORDER BY count(c.id) DESC").fetchall()
    rag.close()
    return [(str(a), int(b), int(c), float(d or 0)) for a, b, c, d in rows]


def recall_and_intruders(db: Path, mode: Mode, k: int = 10) -> None:
    """Recall per public set, and how many of the top-5 sources are in a new language."""
    rag = RagDB(db, use_cache=False)
    for name in SETS:
        data = RagDataset.model_validate_json(dataset(name).read_text())
        found = rag.search_many([q.question for q in data.rag_questions], k, mode)
        r = evaluate.evaluate(search_results(data.rag_questions, found, k), data).recall
        langs = Counter(h.language for hits in found for h in hits[:5])
        other = sum(n for lang, n in langs.items() if lang not in PROSE_AND_PYTHON)
        total = sum(langs.values())
        intruders = ", ".join(f"{lang} {n}" for lang, n in langs.most_common()
                              if lang not in PROSE_AND_PYTHON) or "-"
        print(f"| {db.stem} | {mode.value} | {name} | "
              + " | ".join(f"{r[k]:.3f}" for k in evaluate.KS)
              + f" | {other}/{total} ({intruders}) |")
    rag.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--hybrid", action="store_true",
                        help="also index with vectors and measure hybrid recall (slow)")
    parser.add_argument("--hybrid-only", action="store_true", help="only the --hybrid part")
    args = parser.parse_args()
    ensure_corpus()
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    print(host_line())
    if args.hybrid_only:
        hybrid_recall()
        return
    every, old = BENCH_DIR / "any.db", BENCH_DIR / "pydocs.db"
    rates: dict[str, list[float]] = {"any": [], "pydocs": []}
    sizes: dict[str, float] = {}
    times: dict[str, list[float]] = {"any": [], "pydocs": []}
    for _ in range(args.repeats):  # interleaved, so a busy neighbour slows both alike
        for name, db, include in (("pydocs", old, PYTHON_AND_DOCS), ("any", every, ())):
            seconds, mb = index_rate(db, include)
            rates[name].append(mb / seconds)
            times[name].append(seconds)
            sizes[name] = mb
    print("\n| file set | MB indexed | full index (lexical) | MB/s |\n|---|---|---|---|")
    for name in ("pydocs", "any"):
        print(f"| {name} | {sizes[name]:.1f} | {statistics.median(times[name]):.2f} s "
              f"| {statistics.median(rates[name]):.2f} |")
    ratio = statistics.median(rates["any"]) / statistics.median(rates["pydocs"])
    print(f"\nMB/s every language / Python+prose: {ratio:.2f} (>= 1: no slower per MB)")
    print("\n| language | files | chunks | MB of chunk text |\n|---|---|---|---|")
    for lang, files, chunks, mb in per_language(every):
        print(f"| {lang} | {files} | {chunks} | {mb:.2f} |")
    rag = RagDB(every)
    run = rag.conn.execute(
        "SELECT files_seen, files_skipped, parse_fallbacks FROM index_runs "
        "ORDER BY id DESC LIMIT 1").fetchall()[0]
    rag.close()
    print(f"\nlast run: {run[0]} files seen, {run[1]} skipped, {run[2]} parse fallbacks")
    print("\n| index | mode | set | recall@1 | recall@3 | recall@5 | recall@10 "
          "| top-5 sources in new languages |\n|---|---|---|---|---|---|---|---|")
    for db in (old, every):
        recall_and_intruders(db, Mode.lexical)
    if args.hybrid:
        hybrid_recall()


def hybrid_recall() -> None:
    """Both file sets indexed with vectors (docs only, the default policy): hybrid recall."""
    for db, include in ((BENCH_DIR / "pydocs-vec.db", PYTHON_AND_DOCS),
                        (BENCH_DIR / "any-vec.db", ())):
        seconds, _ = index_rate(db, include, vectors=True)
        print(f"| {db.stem} | (index with vectors: {seconds:.1f} s) | | | | | | |")
        recall_and_intruders(db, Mode.hybrid)
        recall_and_intruders(db, Mode.lexical)


if __name__ == "__main__":
    main()
