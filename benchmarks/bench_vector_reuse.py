"""Seconds to re-index a long Markdown page after a one-line edit, with an edited file's
unchanged chunks keeping their vectors (vectors.VectorReuse) and without (every chunk of the
file embedded again), alternating, each in a scratch folder with the default embedder.

    python -m benchmarks.bench_vector_reuse data/raw-repos2/fastify/docs/Reference/Server.md 3
"""
import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import ragdb.vectors as vectors
from ragdb import RagDB

ORIGINAL = vectors.VectorReuse.before


def _none(self: vectors.VectorReuse, path: str) -> dict[tuple[str, str, str, str], int]:
    return {}


def run(source: Path, reuse: bool) -> tuple[float, int, int, int]:
    """(seconds of the re-index after the edit, chunks, chunks embedded, chunks reused)."""
    vectors.VectorReuse.before = ORIGINAL if reuse else _none  # type: ignore[method-assign]
    work = Path(tempfile.mkdtemp(prefix="reuse-"))
    os.chdir(work)
    shutil.copy(source, work / "page.md")
    rag = RagDB(work / "rag.db")
    rag.index(["page.md"])
    text = (work / "page.md").read_text()
    lines = text.split("\n")
    middle = len(lines) // 2
    while not lines[middle].strip() or lines[middle].startswith(("#", "`", "|", " ")):
        middle += 1
    lines[middle] += " (edited)"
    (work / "page.md").write_text("\n".join(lines))
    started = time.perf_counter()
    result = rag.index(["page.md"])
    seconds = time.perf_counter() - started
    rag.close()
    shutil.rmtree(work)
    embedded = result.vectors.embedded if result.vectors else 0
    return seconds, result.stats.chunks_total, embedded, result.stats.vectors_reused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", type=Path, default=Path("README.md"),
                        help="the Markdown page edited [default: README.md]")
    parser.add_argument("trials", nargs="?", type=int, default=3)
    args = parser.parse_args()
    source = args.file.resolve()
    for trial in range(args.trials):
        for reuse in (False, True):
            s, chunks, embedded, reused = run(source, reuse)
            print(f"trial {trial} reuse={reuse}: {s:.2f} s re-index; {chunks} chunks, "
                  f"{embedded} embedded, {reused} reused", flush=True)


if __name__ == "__main__":
    main()
