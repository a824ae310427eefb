"""Issue 40, "Delete what it replaces": which hand-set ranking rules still earn their place?

    uv run --frozen python -m benchmarks.bench_ablation run      # every variant, then the
                                                                 # combination (about 15 min)
    uv run --frozen python -m benchmarks.bench_ablation report   # the tables, from the saved ranks

The project's rule: a rule earns its place by a measurement on unseen data; when a simpler design
does as well, the rule goes. Each hand-set rule of the hybrid order is turned off alone (its
neutral value; `RULES`) and today's order is compared with it.

Protocol, written before the first run and not changed after reading any result:

- Sets: every set `benchmarks.common.evaluated_sets()` returns (vLLM public, repos, repos2,
  repos3, repos4), on their bench indexes as built (never rebuilt here). Hybrid, k = 10,
  reranking off, the query cache off (as `bench_repos.run`). The ranks of every variant are
  saved to data/bench/ablation/VARIANT.json.
- Halves: `bench_rerank_quality.half` (a hash of the question id), as every issue-40 benchmark.
  Everything is chosen on half A pooled over all sets; half B is reported and chooses nothing.
- Score of a variant on a half: code hits = (code questions at rank 1) + (code questions within
  rank 5), docs hits the same for docs questions, and the vLLM public R@5 hit counts of code and
  of docs on their own.
- A rule goes if, with it off, half A pooled code hits >= today's AND docs hits >= today's, and
  vLLM public half A R@5 hits are not lower than today's for code nor for docs.
- "Gate always open" (the code lift without its gate) and "no lift" (the lift and its gate) are
  two variants. If both pass, "no lift" stands for both in the combination (the gate means
  nothing without the lift); if it is then dropped, "gate always open" takes its place.
- The rules that go are then turned off together (interactions) and checked by the same rule on
  half A. If the combination fails, the rule whose single removal cost the most leaves the
  removal list (cost = today's half A code hits + docs hits minus the variant's; the larger
  leaves first, ties the one listed first in `RULES`), and the smaller combination is checked,
  until one passes (or the list is empty). Half B is reported for every variant and every
  combination checked.
- "Everything off" (weighted RRF of BM25 and the vectors with equal column weights: the
  simplest design) is measured and reported; the decision is the single rules' and their
  combination's.
- `max_distance` (the dense leg's cosine cut-off, off = 2, no cut) is measured and reported but
  is not a candidate: what it is for (a nonsense question finds no dense match) is not what
  recall measures.
- Options already off by default (`definition_over_docs`, `w_bridge_named`, `join_words`,
  `w_dense_plain`): today's order does not use them, so off they give today's order by
  construction and pass; they are not run.

Read on 2026-12-05 (benchmarks/README.md, "Issue 40: which hand-set rules earn their place"):
`identifier_runs` went, and the four options; their rules left `RULES` with their code (last
in commit ec6c6ed), and `report` still prints their saved ranks. A run now measures the rules
that remain, against today's order without them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.bench_rerank_quality import half
from benchmarks.common import (BENCH_DIR, Question, evaluated_sets, first_rank, host_line,
                               recall)
from ragdb import RagDB
from ragdb.retrieve import Mode, Searcher, SearchParams

OUT = BENCH_DIR / "ablation"
K = 10
TODAY = "today"


@dataclass(frozen=True)
class Rule:
    """One hand-set rule and how it is turned off (its neutral value)."""

    name: str  # the variant's label and file name
    off: dict[str, Any]  # SearchParams fields at their neutral values
    candidate: bool = True  # False: measured and reported, never deleted by this benchmark


RULES = (
    Rule("margin_cap 1 (no lexical margin)", {"margin_cap": 1.0}),
    Rule("gate always open", {"gate_near": 0.0, "gate_far": 0.0, "gate_low": 0.0,
                              "gate_high": 0.0}),
    Rule("no lift (w_absent 0)", {"w_absent": 0.0}),
    Rule("prior 1 (no path prior)", {"prior": 1.0}),
    Rule("root_prior 1 (no repository prior)", {"root_prior": 1.0}),
    Rule("w_bridge 0 (no bridge leg)", {"w_bridge": 0.0}),
    Rule("callee_first off", {"callee_first": False}),
    Rule("w_symbol 0 (no symbol leg)", {"w_symbol": 0.0}),
    Rule("w_path 1 (equal column weights)", {"w_path": 1.0}),
    Rule("max_distance 2 (no dense cut-off)", {"max_distance": 2.0}, candidate=False),
)
GATE, LIFT = "gate always open", "no lift (w_absent 0)"
EVERYTHING = "everything off (weighted RRF)"


def turned_off(rules: Sequence[Rule], base: SearchParams = SearchParams()) -> SearchParams:
    """Today's parameters with each of `rules` at its neutral value."""
    off: dict[str, Any] = {}
    for rule in rules:
        off.update(rule.off)
    return replace(base, **off)


def everything_off() -> SearchParams:
    """Every candidate rule off together (the gate moot without the lift)."""
    return turned_off([rule for rule in RULES if rule.candidate and rule.name != GATE])


def slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_")


Sets = Sequence[tuple[str, Path, list[Question]]]


class _Embedded(Searcher):
    """A searcher that embeds each question once for every variant it runs (the vectors do not
    depend on the ranking parameters)."""

    def __init__(self, conn: Any) -> None:
        super().__init__(conn, use_cache=False)
        self._vectors: dict[str, bytes] = {}

    def _query_vectors(self, questions: Sequence[str], mode: Mode) -> dict[str, bytes]:
        missing = [q for q in dict.fromkeys(questions) if q not in self._vectors]
        if missing:
            self._vectors.update(super()._query_vectors(missing, mode))
        return {q: self._vectors[q] for q in questions if q in self._vectors}


def measure(variants: dict[str, SearchParams], sets: Sets, out: Path = OUT) -> None:
    """Rank every question of `sets` under each variant and save one file a variant."""
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list[dict[str, Any]]] = {label: [] for label in variants}
    for name, db, questions in sets:
        with RagDB(db, use_cache=False, rerank=False) as rag:
            searcher = _Embedded(rag.conn)
            for label, params in variants.items():
                started = time.perf_counter()
                searcher.params = params
                found = searcher.search_many([q.question for q in questions], K, Mode.hybrid)
                rows[label] += [{"set": name, "kind": q.kind, "id": q.question_id,
                                 "half": half(q), "rank": first_rank(q, hits)}
                                for q, hits in zip(questions, found)]
                print(f"{name}: {label} ({time.perf_counter() - started:.1f} s)",
                      file=sys.stderr, flush=True)
    for label, params in variants.items():
        (out / f"{slug(label)}.json").write_text(json.dumps(
            {"variant": label, "params": asdict(params), "k": K, "host": host_line(),
             "date": time.strftime("%Y-%m-%d"), "ranks": rows[label]}, indent=0))


def load(label: str, out: Path = OUT) -> list[dict[str, Any]]:
    return list(json.loads((out / f"{slug(label)}.json").read_text())["ranks"])


@dataclass(frozen=True)
class Score:
    """A variant on one half: hits at R@1 + R@5 per kind, and vLLM public's R@5 hits."""

    code: int
    docs: int
    vllm_code5: int
    vllm_docs5: int


def hits(ranks: Sequence[int | None], cut: int) -> int:
    return sum(1 for r in ranks if r is not None and r <= cut)


def score(rows: Sequence[dict[str, Any]], which: str) -> Score:
    def ranks(kind: str, only_vllm: bool = False) -> list[int | None]:
        return [r["rank"] for r in rows if r["half"] == which and r["kind"] == kind
                and (not only_vllm or r["set"] == "vllm")]

    return Score(hits(ranks("code"), 1) + hits(ranks("code"), 5),
                 hits(ranks("docs"), 1) + hits(ranks("docs"), 5),
                 hits(ranks("code", True), 5), hits(ranks("docs", True), 5))


def passes(variant: Score, today: Score) -> bool:
    """The protocol's rule: as well on pooled code and docs, and vLLM R@5 not lower."""
    return (variant.code >= today.code and variant.docs >= today.docs
            and variant.vllm_code5 >= today.vllm_code5
            and variant.vllm_docs5 >= today.vllm_docs5)


def cost(variant: Score, today: Score) -> int:
    return (today.code - variant.code) + (today.docs - variant.docs)


def combination_label(rules: Sequence[Rule]) -> str:
    return "combination: " + " + ".join(rule.name.split(" (")[0] for rule in rules)


def decide(scores: Callable[[str], Score],
           check: Callable[[list[Rule]], Score]) -> tuple[list[Rule], list[tuple[str, bool]]]:
    """The removal list by the protocol: the single rules that pass, then their combination
    shrunk until it passes. `scores` gives a saved variant's half A score, `check` measures a
    combination's. Returns the rules that go and every combination checked (label, passed)."""
    today = scores(TODAY)
    going = [rule for rule in RULES if rule.candidate and passes(scores(rule.name), today)]
    names = {rule.name for rule in going}
    spare: Rule | None = None
    if GATE in names and LIFT in names:  # the gate is moot without the lift
        spare = next(rule for rule in going if rule.name == GATE)
        going = [rule for rule in going if rule.name != GATE]
    checked: list[tuple[str, bool]] = []
    while going:
        ok = passes(check(going), today)
        checked.append((combination_label(going), ok))
        if ok:
            break
        worst = max(going, key=lambda rule: (cost(scores(rule.name), today),
                                             -RULES.index(rule)))
        going = [rule for rule in going if rule is not worst]
        if worst.name == LIFT and spare is not None:
            going = [rule for rule in RULES if rule in going or rule is spare]
            spare = None
    return going, checked


def run(sets: Sets, out: Path = OUT) -> list[Rule]:
    """Every variant, then the combinations the protocol checks; the rules that go."""
    variants = {TODAY: SearchParams(), **{rule.name: turned_off([rule]) for rule in RULES},
                EVERYTHING: everything_off()}
    measure(variants, sets, out)

    def scores(label: str) -> Score:
        return score(load(label, out), "A")

    def check(rules: list[Rule]) -> Score:
        label = combination_label(rules)
        measure({label: turned_off(rules)}, sets, out)
        return scores(label)

    going, checked = decide(scores, check)
    (out / "decision.json").write_text(json.dumps(
        {"going": [rule.name for rule in going], "checked": checked}, indent=1))
    return going


def _row(label: str, rows: Sequence[dict[str, Any]], today: dict[str, Score]) -> str:
    cells = []
    for which in "AB":
        s, t = score(rows, which), today[which]
        cells += [f"{s.code} ({s.code - t.code:+d})", f"{s.docs} ({s.docs - t.docs:+d})",
                  f"{s.vllm_code5} / {s.vllm_docs5}"]
    mark = ("-" if label == TODAY
            else "passes" if passes(score(rows, "A"), today["A"]) else "fails")
    return f"| {label} | " + " | ".join(cells) + f" | {mark} |"


def _recalls(rows: Sequence[dict[str, Any]], which: str, kind: str) -> str:
    ranks = [r["rank"] for r in rows if r["half"] == which and r["kind"] == kind]
    return " / ".join(f"{recall(ranks, c):.3f}" for c in (1, 5, 10)) + f" ({len(ranks)})"


def report(out: Path = OUT) -> None:
    files = {json.loads(p.read_text())["variant"]: p for p in sorted(out.glob("*.json"))
             if p.name != "decision.json"}
    if TODAY not in files:
        print(f"no saved ranks under {out}: run `python -m benchmarks.bench_ablation run`",
              file=sys.stderr)
        raise SystemExit(1)
    saved = json.loads(files[TODAY].read_text())
    print(f"{saved['host']}; {saved['date']}; hybrid, k = {saved['k']}, reranking off\n")
    base = load(TODAY, out)
    today = {which: score(base, which) for which in "AB"}
    order = [TODAY] + [rule.name for rule in RULES] + [EVERYTHING]
    order += sorted(label for label in files if label not in order)  # combinations, deleted
    print("Hits at R@1 + R@5 (change against today), pooled over every set; vLLM public R@5 "
          "hits code / docs; the decision reads half A only.\n")
    print("| variant | A code | A docs | A vLLM R@5 | B code | B docs | B vLLM R@5 | half A |")
    print("|---|---|---|---|---|---|---|---|")
    for label in order:
        if label in files:
            print(_row(label, load(label, out), today))
    print("\nR@1 / 5 / 10 (questions), pooled over every set:\n")
    print("| variant | A code | A docs | B code | B docs |\n|---|---|---|---|---|")
    for label in order:
        if label in files:
            rows = load(label, out)
            print(f"| {label} | " + " | ".join(_recalls(rows, which, kind) for which in "AB"
                                               for kind in ("code", "docs")) + " |")
    decision = out / "decision.json"
    if decision.exists():
        saved_decision = json.loads(decision.read_text())
        print("\nCombinations checked: " + "; ".join(
            f"{label}: {'passes' if ok else 'fails'}" for label, ok in saved_decision["checked"])
            if saved_decision["checked"] else "\nNo single rule passed: no combination checked.")
        print("Rules that go: " + (", ".join(saved_decision["going"]) or "none"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["run", "report"])
    parser.add_argument("--sets", nargs="*", default=(),
                        help="vllm, repos, repos2, repos3, repos4 (default: every built one)")
    args = parser.parse_args()
    if args.action == "run":
        sets = evaluated_sets(args.sets)
        if not sets:
            print("no bench index is built (data/bench/*.db): nothing to measure",
                  file=sys.stderr)
            raise SystemExit(1)
        run(sets)
    report()


if __name__ == "__main__":
    main()
