"""Ranking settings measured over the tuning pool only, in one process, without a rebuild.

The tuning pool is half A of the repos set (benchmarks/bench_repos.py splits it), all of
repos2 (read over many rounds, so tuning data now) and vLLM public. Half B of the repos set and
repos3 are the report sets: this script never runs their questions, so a choice made from its
tables cannot have looked at them (`bench_repos --unseen` reads them).

Each variant is a set of SearchParams fields over the defaults; the query vectors are embedded
once per set and reused by every variant (they depend on the question only).

    uv run --frozen python -m benchmarks.tune_pool                        # the built-in list
    uv run --frozen python -m benchmarks.tune_pool "c 5: rrf_c=5" "d: w_dense=0.5,depth=80"
    uv run --frozen python -m benchmarks.tune_pool --diff "c 5: rrf_c=5"  # questions that move
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from benchmarks.common import (DIFFICULTIES, KINDS, REPOS2, REPOS_DB, VLLM_DB, Question,
                               first_rank, host_line, recall, repo_questions, vllm_questions)
from ragdb import RagDB
from ragdb.retrieve import Hit, Mode, Searcher, SearchParams

K = 10


class ReusedVectors(Searcher):
    """A Searcher that embeds each question once and reuses its vector for every variant."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._vectors: dict[str, bytes] = {}

    def _query_vectors(self, questions: Sequence[str], mode: Mode) -> dict[str, bytes]:
        todo = [q for q in dict.fromkeys(questions) if q not in self._vectors]
        if todo:
            self._vectors.update(super()._query_vectors(todo, mode))
        return {q: self._vectors[q] for q in questions if q in self._vectors}


def tuning_sets(vllm: bool = True) -> list[tuple[str, list[Question], Path]]:
    """The tuning pool, (name, questions, index) each: repos half A, all of repos2 and, with
    `vllm`, vLLM public; the report sets (half B, repos3) never."""
    half_a = [q for q in repo_questions() if q.half == "A"]
    sets = [("reposA", half_a, REPOS_DB),
            ("repos2", repo_questions(REPOS2.folder, REPOS2.names), REPOS2.db)]
    if vllm:
        sets.append(("vllm", vllm_questions(), VLLM_DB))
    return sets


@dataclass
class Pool:
    """One tuning set on its rag.db: its questions and a searcher kept across variants."""

    name: str
    questions: list[Question]
    searcher: ReusedVectors

    def ranks(self, params: SearchParams) -> tuple[list[int | None], list[list[Hit]]]:
        self.searcher.params = params
        found = self.searcher.search_many([q.question for q in self.questions], K, Mode.hybrid)
        return [first_rank(q, hits) for q, hits in zip(self.questions, found)], found


def parse(spec: str) -> tuple[str, SearchParams]:
    """`label: field=value,field=value` -> the defaults with those fields (types as declared)."""
    label, colon, body = spec.partition(":")
    if not colon:
        label, body = spec, spec
    types = {f.name: f.type for f in fields(SearchParams)}
    changes: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in body.split(","))):
        key, _, value = item.partition("=")
        kind = str(types[key.strip()])
        if "bool" in kind:
            changes[key.strip()] = value.strip().lower() in ("1", "true", "yes")
        elif value.strip().lower() == "none":
            changes[key.strip()] = None
        elif kind.startswith("int"):
            changes[key.strip()] = int(value)
        else:
            changes[key.strip()] = float(value)
    return label.strip(), replace(SearchParams(), **changes)


#: The ninth round's coordinate search: each global knob one or two steps either way over the
#: defaults (benchmarks/README.md, "Which ranking rules"). The options it also tried
#: (w_bridge_named, w_dense_plain, definition_over_docs) were deleted in issue 40 ("Issue 40:
#: which hand-set rules earn their place").
CANDIDATES = [
    "defaults:",
    "w_absent 0.6: w_absent=0.6", "w_absent 1.0: w_absent=1.0", "w_absent 1.2: w_absent=1.2",
    "gate_near 0.2: gate_near=0.2", "gate_near 0.3: gate_near=0.3",
    "gate_far 0.4: gate_far=0.4", "gate_far 0.5: gate_far=0.5",
    "gate_low 0.7: gate_low=0.7", "gate_low 0.9: gate_low=0.9",
    "gate_high 1.0: gate_high=1.0", "gate_high 1.4: gate_high=1.4",
    "w_bridge 0.1: w_bridge=0.1", "w_bridge 0.3: w_bridge=0.3", "w_bridge 0.4: w_bridge=0.4",
    "bridge_docs 2: bridge_docs=2", "bridge_docs 5: bridge_docs=5",
    "rrf_c 5: rrf_c=5", "rrf_c 15: rrf_c=15", "rrf_c 20: rrf_c=20",
    "w_dense 0.3: w_dense=0.3", "w_dense 0.5: w_dense=0.5",
    "margin_cap 1.5: margin_cap=1.5", "margin_cap 3: margin_cap=3",
    "prior 0.2: prior=0.2", "prior 0.5: prior=0.5",
    "depth 30: depth=30", "depth 100: depth=100",
    "callee_first off: callee_first=false",
]


def _cells(ranks: Sequence[int | None]) -> str:
    hits = [sum(1 for r in ranks if r is not None and r <= c) for c in (1, 5, 10)]
    return "/".join(f"{recall(ranks, c):.3f}" for c in (1, 5, 10)) + f" ({hits[1]})"


def row(label: str, pools: Sequence[Pool], params: SearchParams,
        ) -> tuple[str, dict[str, list[int | None]]]:
    """A table row: R@1/5/10 (R@5 count) of each set and kind, pooled code, code by difficulty."""
    per: dict[str, list[int | None]] = {}
    by_id: dict[str, list[int | None]] = {}
    cells = []
    pooled_code: list[tuple[Question, int | None]] = []
    for pool in pools:
        ranks, _ = pool.ranks(params)
        for q, r in zip(pool.questions, ranks):
            key = f"{pool.name}/{q.set_name}/{q.question_id[:8]} {q.kind} {q.difficulty}"
            by_id[key] = [r]
        for kind in KINDS:
            picked = [r for q, r in zip(pool.questions, ranks) if q.kind == kind]
            per[f"{pool.name} {kind}"] = picked
            cells.append(_cells(picked))
        if pool.name != "vllm":
            pooled_code += [(q, r) for q, r in zip(pool.questions, ranks) if q.kind == "code"]
    cells.append(_cells([r for _, r in pooled_code]))
    cells.append(" ".join(f"{recall([r for q, r in pooled_code if q.difficulty == d], 5):.2f}"
                          for d in DIFFICULTIES))
    return f"| {label} | " + " | ".join(cells) + " |", by_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("variants", nargs="*",
                        help="`label: field=value,...` over the defaults (default: CANDIDATES)")
    parser.add_argument("--diff", action="store_true",
                        help="after the table, each question whose rank differs from the defaults")
    args = parser.parse_args()
    specs = args.variants or CANDIDATES
    if args.variants and "defaults:" not in specs:
        specs = ["defaults:", *specs]
    variants = [parse(spec) for spec in specs]
    print(host_line())
    with ExitStack() as stack:
        pools = [Pool(name, questions, ReusedVectors(
                      stack.enter_context(RagDB(db, use_cache=False)).conn, use_cache=False))
                 for name, questions, db in tuning_sets()]
        print("\nhybrid, k = 10; R@1/5/10 (questions in the top 5); tuning pool only\n")
        print("| variant | reposA docs (20) | reposA code (20) | repos2 docs (30) "
              "| repos2 code (30) | vLLM docs (100) | vLLM code (99) | pooled code A+repos2 (50) "
              "| code R@5 ident/para/concept |")
        print("|" + "---|" * 9)
        base: dict[str, list[int | None]] = {}
        for label, params in variants:
            line, by_id = row(label, pools, params)
            print(line, flush=True)
            if not base:
                base = by_id
            elif args.diff:
                moved = [(key, base[key][0], r[0]) for key, r in by_id.items()
                         if r != base[key]]
                for key, before, after in moved:
                    print(f"    {key}: {before or '-'} -> {after or '-'}")


if __name__ == "__main__":
    main()
