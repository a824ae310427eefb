"""What every benchmark shares: the host line, percentiles, the corpus and the question sets."""

from __future__ import annotations

import math
import os
import platform
import sys
import tarfile
from pathlib import Path
from typing import Sequence

CORPUS_TGZ = Path("../shared/corpus/vllm-0.10.1.tar.gz")
CORPUS = Path("data/raw/vllm-0.10.1")
DATASETS = Path("../shared/datasets/public")
BENCH_DIR = Path("data/bench")
SETS = ("docs", "code")
# Ten questions written in this project (5 docs, 5 code) about files sampled at random from
# those no public question cites: a check that settings tuned on the public sets generalise.
HELDOUT = Path("data/datasets/heldout_vllm.json")
#: Instruction sets that decide how fast int8/fp32 inference runs (MODELS.md, "Hosts differ").
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "amx_bf16")


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: a value that was actually observed."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def isa_flags() -> list[str]:
    """Which of ISA_FLAGS this CPU has (Linux; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
            break
    return [flag for flag in ISA_FLAGS if flag in flags]


def host_line() -> str:
    """The line every timing is printed under: timings only compare on the same kind of host."""
    flags = isa_flags()
    return (f"host: {cpu_model()}; {os.cpu_count()} cores; "
            f"{' '.join(flags) if flags else 'no AVX2/AVX-512/VNNI/AMX'}; "
            f"{platform.machine()}, Python {platform.python_version()}")


def ensure_corpus() -> None:
    if CORPUS.is_dir():
        return
    print(f"extracting {CORPUS_TGZ} into data/raw/", file=sys.stderr)
    with tarfile.open(CORPUS_TGZ) as tar:
        tar.extractall("data/raw", filter="data")


def dataset(name: str, answered: bool = True) -> Path:
    if name == "heldout":
        return HELDOUT
    folder = "AnsweredQuestions" if answered else "UnansweredQuestions"
    return DATASETS / folder / f"dataset_{name}_public.json"
