"""`make bench-repos`: retrieval over four codebases other than vLLM, next to vLLM public.

Fetches the corpora of `../shared/datasets/repos` (click, orjson, psutil, web-vitals) with its
`fetch.sh`, indexes all four into one rag.db under data/bench/ with the defaults, runs the 80
questions (hybrid, k = 10) and prints recall@1/5/10 per repository, per kind (docs / code) and
per difficulty (identifier / paraphrase / conceptual), for two fixed halves of the questions and
pooled, then the public vLLM sets on data/bench/rag.db (built by `make bench`, else here).

The halves never look at a question's content: within each repository's docs and code
questions (10 each) the question ids are sorted and taken alternately (A: 1st, 3rd, ...; B:
2nd, 4th, ...), so each half holds 5 docs and 5 code questions of every repository. Settings
were chosen on half A with vLLM public; half B is the report.

`--unseen` adds the held-out sets, each fetched by its own fetch.sh, indexed into its own rag.db
with the defaults and reported in its own table: benchmarks/repos2 (fastify, cryptography,
greenlet; data/bench/repos2.db), benchmarks/repos3 (ent, starlette, yard; data/bench/repos3.db,
written after repos2 had been read over many rounds) and benchmarks/repos4 (tornado, undici, lz4;
data/bench/repos4.db, written for issues 39 and 40 and kept out of the reranker's training).
Nothing is chosen on them. `--sets` names held-out sets to build (if missing or without
--no-build) and report on their own, without the repos and vLLM tables: `--sets repos5` is the
only way to benchmarks/repos5 (flask, mercurius, Oniguruma; data/bench/repos5.db), so `--unseen`
runs as it did before repos5 was written.

    uv run --frozen python -m benchmarks.bench_repos              # fetch, index, measure
    uv run --frozen python -m benchmarks.bench_repos --variants   # and each ranking rule off
    uv run --frozen python -m benchmarks.bench_repos --misses     # and every question not at 1
    uv run --frozen python -m benchmarks.bench_repos --unseen     # and the held-out repos2-4
    uv run --frozen python -m benchmarks.bench_repos --sets repos5  # one held-out set alone
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from benchmarks.common import (BENCH_DIR, BY_NAME, CORPUS, DIFFICULTIES, HELD_OUT, KINDS, REPOS,
                               REPOS_DB, REPOS_ROOT, REPOS_SET, VLLM_DB, HeldOut, Question, cell,
                               ensure_corpus, first_rank, host_line, repo_questions,
                               vllm_questions)
from ragdb import RagDB
from ragdb.retrieve import Hit, Mode, Searcher, SearchParams


def run(rag: RagDB, questions: Sequence[Question], mode: Mode = Mode.hybrid, k: int = 10,
        params: SearchParams = SearchParams()) -> tuple[list[int | None], list[list[Hit]]]:
    """The first matching rank of every question (None: not in the k), and the hits."""
    searcher = Searcher(rag.conn, params, use_cache=False)
    found = searcher.search_many([q.question for q in questions], k, mode)
    return [first_rank(q, hits) for q, hits in zip(questions, found)], found


#: The ranking rules of issue 18, each turned off in turn (`--variants`; benchmarks/README.md,
#: "Which ranking rules"; issue 40's protocol is benchmarks/bench_ablation.py).
DEFAULTS = SearchParams()
VARIANTS = {
    "defaults": DEFAULTS,
    "no path prior (prior 1)": replace(DEFAULTS, prior=1.0),
    "no repository prior (root_prior 1)": replace(DEFAULTS, root_prior=1.0),
    "no lift for code (w_absent 0)": replace(DEFAULTS, w_absent=0.0),
    "lift gated by distance only": replace(DEFAULTS, gate_low=0.0, gate_high=0.0),
    "lift gated by BM25 only": replace(DEFAULTS, gate_near=0.0, gate_far=0.0),
    "lift always (no gate)": replace(DEFAULTS, gate_low=0.0, gate_high=0.0, gate_near=0.0,
                                     gate_far=0.0),
    "no bridge leg (w_bridge 0)": replace(DEFAULTS, w_bridge=0.0),
    "no callee first": replace(DEFAULTS, callee_first=False),
    "no lexical margin (margin_cap 1)": replace(DEFAULTS, margin_cap=1.0),
    "none of them (before)": replace(DEFAULTS, prior=1.0, root_prior=1.0, w_absent=0.0,
                                     w_bridge=0.0, callee_first=False, margin_cap=1.0),
}


def variants_table(repos: RagDB, vllm: RagDB, questions: Sequence[Question],
                   public: Sequence[Question]) -> None:
    """One row per variant: R@1/5/10 of docs and code per half, pooled, and vLLM public."""
    print("\n| variant | A docs | A code | B docs | B code | pooled docs | pooled code "
          "| vLLM docs | vLLM code |\n|---|---|---|---|---|---|---|---|---|")
    for label, params in VARIANTS.items():
        ranks, _ = run(repos, questions, params=params)
        vranks, _ = run(vllm, public, params=params)
        cells = [cell([r for q, r in zip(questions, ranks)
                       if (not half or q.half == half) and q.kind == kind])
                 for half in ("A", "B", "") for kind in KINDS]
        cells += [cell([r for q, r in zip(public, vranks) if q.kind == kind]) for kind in KINDS]
        print(f"| {label} | " + " | ".join(c.replace(" ", "") for c in cells) + " |",
              flush=True)


def table(questions: Sequence[Question], ranks: Sequence[int | None],
          groups: Sequence[Group]) -> None:
    print("| group | n | half A R@1/5/10 | half B R@1/5/10 | pooled R@1/5/10 |")
    print("|---|---|---|---|---|")
    for label, keep in groups:
        picked = [(q, r) for q, r in zip(questions, ranks) if keep(q)]
        by_half = {h: [r for q, r in picked if q.half == h] for h in "AB"}
        print(f"| {label} | {len(picked)} | {cell(by_half['A'])} | {cell(by_half['B'])} | "
              f"{cell([r for _, r in picked])} |")


Group = tuple[str, Callable[[Question], bool]]


def _group(label: str, set_name: str = "", kind: str = "", difficulty: str = "") -> Group:
    """Questions of a set (repository), a kind and a difficulty; '' matches any."""
    def keep(q: Question) -> bool:
        return ((not set_name or q.set_name == set_name) and (not kind or q.kind == kind)
                and (not difficulty or q.difficulty == difficulty))
    return label, keep


def repo_groups(names: Sequence[str] = REPOS) -> list[Group]:
    groups = [_group(kind, kind=kind) for kind in KINDS]
    groups += [_group(f"{kind} / {diff}", kind=kind, difficulty=diff)
               for kind in KINDS for diff in DIFFICULTIES]
    groups += [_group(f"{name} {kind}", name, kind) for name in names for kind in KINDS]
    return groups + [_group("all")]


def fetch(script: Path, target: Path) -> None:
    subprocess.run(["bash", str(script), str(target)], check=True, stdout=sys.stderr)


def build(db: Path, roots: Sequence[Path]) -> float:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    started = time.perf_counter()
    with RagDB(db) as rag:
        rag.index(list(roots))
    return time.perf_counter() - started


def misses(questions: Sequence[Question], ranks: Sequence[int | None],
           found: Sequence[list[Hit]]) -> None:
    print("\n| set | kind | difficulty | half | rank | question | top 3 |")
    print("|---|---|---|---|---|---|---|")
    for q, r, hits in zip(questions, ranks, found):
        if r == 1:
            continue
        top = ", ".join(f"{h.file_path.split('/', 3)[-1]}:{h.start_line}" for h in hits[:3])
        print(f"| {q.set_name} | {q.kind} | {q.difficulty} | {q.half} | {r or '-'} | "
              f"{q.question[:70]} | {top} |")


def unseen_report(held: HeldOut, mode: Mode, show_misses: bool = False) -> None:
    """One held-out set on its own rag.db: its table (per package, kind, difficulty; pooled)."""
    unseen = repo_questions(held.folder, held.names)
    with RagDB(held.db, use_cache=False) as rag:
        uranks, ufound = run(rag, unseen, mode)
    print(f"\nunseen set ({held.folder}: {', '.join(held.names)}), {mode.value}, k = 10, "
          f"{len(unseen)} questions, one rag.db; nothing was chosen on it\n")
    table(unseen, uranks, repo_groups(held.names))
    if show_misses:
        misses(unseen, uranks, ufound)


def held_alone(sets: Sequence[HeldOut], mode: Mode, no_build: bool, show_misses: bool) -> None:
    """`--sets`: each named held-out set fetched, indexed into its own rag.db with the defaults
    (kept with --no-build when it is there) and reported on its own."""
    for held in sets:
        if not (no_build and held.db.exists()):
            fetch(held.folder / "fetch.sh", held.root)
            seconds = build(held.db, [held.root])
            print(f"unseen index ({held.root}, defaults, with vectors): {seconds:.1f} s")
    for held in sets:
        unseen_report(held, mode, show_misses)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-build", action="store_true",
                        help="reuse data/bench/repos.db, rag.db and the held-out sets' rag.db "
                             "files as they are (a missing held-out one is built)")
    parser.add_argument("--misses", action="store_true", help="list every question not at rank 1")
    parser.add_argument("--mode", default="hybrid", choices=[m.value for m in Mode])
    parser.add_argument("--variants", action="store_true",
                        help="also each ranking rule of issue 18 turned off (hybrid)")
    parser.add_argument("--unseen", action="store_true",
                        help="also the held-out sets of benchmarks/repos2, repos3 and repos4 "
                             "(three more codebases each, one rag.db per set)")
    parser.add_argument("--sets", default="",
                        help=f"comma-separated held-out sets ({', '.join(BY_NAME)}) to build "
                             "and report alone, without the repos and vLLM tables")
    args = parser.parse_args()
    named = [s for s in args.sets.split(",") if s]
    unknown = [s for s in named if s not in BY_NAME]
    if unknown:
        raise SystemExit(f"unknown set {unknown[0]!r} (known: {', '.join(BY_NAME)})")
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    print(host_line())
    if named:
        held_alone([BY_NAME[s] for s in named], Mode(args.mode), args.no_build, args.misses)
        return
    if not args.no_build:
        fetch(REPOS_SET / "fetch.sh", REPOS_ROOT)
        seconds = build(REPOS_DB, [REPOS_ROOT / name for name in REPOS])
        print(f"\nrepos index (four roots, defaults, with vectors): {seconds:.1f} s")
    for held in HELD_OUT if args.unseen else ():
        if args.no_build and held.db.exists():
            continue  # --no-build reuses a held-out rag.db, and builds one that is missing
        fetch(held.folder / "fetch.sh", held.root)
        seconds = build(held.db, [held.root])
        print(f"unseen index ({held.root}, defaults, with vectors): {seconds:.1f} s")
    if not args.no_build and not VLLM_DB.exists():
        ensure_corpus()
        seconds = build(VLLM_DB, [CORPUS.parent])
        print(f"vLLM index (defaults, with vectors): {seconds:.1f} s")
    mode = Mode(args.mode)
    questions, public = repo_questions(), vllm_questions()
    with RagDB(REPOS_DB, use_cache=False) as repos, RagDB(VLLM_DB, use_cache=False) as vllm:
        ranks, found = run(repos, questions, mode)
        print(f"\n{mode.value}, k = 10, {len(questions)} questions, one rag.db "
              f"({', '.join(r.path for r in repos.roots())})\n")
        table(questions, ranks, repo_groups())
        vranks, vfound = run(vllm, public, mode)
        print(f"\nvLLM public ({VLLM_DB}), {mode.value}, k = 10\n")
        print("| set | n | R@1/5/10 |\n|---|---|---|")
        for kind in KINDS:
            picked = [r for q, r in zip(public, vranks) if q.kind == kind]
            print(f"| {kind} | {len(picked)} | {cell(picked)} |")
        if args.misses:
            misses(questions, ranks, found)
            misses(public, vranks, vfound)
        if args.variants:
            variants_table(repos, vllm, questions, public)
    if args.unseen:
        for held in HELD_OUT:
            unseen_report(held, mode, args.misses)


if __name__ == "__main__":
    main()
