"""Stage 2: one rag.db a package, built by ragdb itself, so training sees ragdb's own chunks.

    python -m training.index [--vectors] [--only NAME ...]

Each package fetched under `data/train/raw/NAME/` is indexed as its own repository into
`data/train/index/NAME.db` (BM25 statistics per repository, as a user's index has them).
`ragdb index` is incremental, so a stopped run resumes where it was; `--vectors` embeds too
(hours on 2 cores for all 97 packages: run it in the background at low priority).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from training.fetch import read_pins

RAW = Path("data/train/raw")
INDEXES = Path("data/train/index")


def index_package(name: str, vectors: bool, raw: Path = RAW, indexes: Path = INDEXES) -> str:
    """Index one fetched package with the ragdb CLI; returns its summary line."""
    source = raw / name
    if not source.is_dir():
        raise FileNotFoundError(f"{source} is not fetched: run python -m training.fetch first")
    indexes.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "ragdb", "index", str(source), "--db",
               str(indexes / f"{name}.db"), "--vectors" if vectors else "--no-vectors"]
    done = subprocess.run(command, capture_output=True, text=True)
    lines = (done.stdout + done.stderr).strip().splitlines()
    if done.returncode != 0:
        raise RuntimeError(lines[-1] if lines else f"ragdb index exited {done.returncode}")
    summary = [line for line in lines if " files: " in line]
    return summary[-1] if summary else (lines[-1] if lines else "")


def main(argv: list[str] | None = None) -> int:
    """Index every fetched pin (or those named), one progress line each."""
    parser = argparse.ArgumentParser(prog="python -m training.index",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--vectors", action="store_true", help="embed the chunks too")
    parser.add_argument("--only", nargs="*", default=None, help="pin names (default: all)")
    args = parser.parse_args(argv)
    names = [p.name for p in read_pins() if args.only is None or p.name in args.only]
    failed = 0
    for number, name in enumerate(names, start=1):
        started = time.monotonic()
        try:
            summary = index_package(name, args.vectors)
        except (OSError, RuntimeError) as error:
            failed += 1
            print(f"index: {name}: {error}", file=sys.stderr)
            continue
        seconds = time.monotonic() - started
        print(f"[{number}/{len(names)}] {name} ({seconds:.0f} s): {summary.split(';')[0]}",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
