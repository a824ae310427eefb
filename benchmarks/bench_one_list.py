"""Issues 39/40: one list for "code that is not the implementation", measured.

    uv run --frozen python -m benchmarks.bench_one_list run      # both variants, every set
    uv run --frozen python -m benchmarks.bench_one_list report   # the tables, from saved ranks

Three path classifiers said nearly the same thing, each a little differently: the ranking's path
prior (`retrieve.PRIOR_PATHS`, GLOBs, score x 0.3), the first answer slot's test paths
(`blocks._TEST_PATH`, a regex) and the definition block's sample paths (`named.SAMPLE_PATH`).
`NOT_IMPLEMENTATION` (below; in ragdb/file_types.py while it was measured) is their union, one
list of lower-cased GLOBs with a Python matcher derived from it (`not_implementation`). For
the ranking it adds spec, specs, testing, testdata, samples, demos folders, fuzz and harness
anywhere, `*_test.*` and `test_*` of any language, xUnit's `FooTest.java`-style names, and
each folder and name also at the top of a path. Here the ranking with it is compared with
today's list (`TODAY`, written out).

Protocol, written and committed before the first run that reads any result; not changed after:

- Variants: "today" (SearchParams(prior_paths=TODAY)) and "one list"
  (SearchParams(prior_paths=NOT_IMPLEMENTATION)); every other setting as the default. Hybrid,
  k = 10, reranking and the query cache off, every set on its bench index as built (never
  rebuilt here), as bench_ablation. Ranks saved under data/bench/one_list/ (the five evaluated
  sets) and data/bench/one_list/held/ (repos5 and repos6).
- Sets and halves: `benchmarks.common.evaluated_sets()` (vLLM public, repos, repos2, repos3,
  repos4), halves by `bench_rerank_quality.half`; repos5 and repos6
  (`benchmarks.common.BY_NAME`), both halves, which chose nothing here.
- Hits: code hits = code questions at rank 1 + code questions within rank 5; docs hits the same
  for docs questions (bench_ablation.score).
- Acceptance on half A, pooled over the five sets (bench_ablation.passes): code hits >= today's
  AND docs hits >= today's AND vLLM public half A R@5 hits not lower for code nor for docs.
- Then reported: half B pooled, repos5 and repos6 (R@1/5/10 code and docs, hits). The one list
  ships as the ranking's default only if it passes on half A AND half B pooled code + docs
  hits (their sum) are not lower than today's AND repos5 + repos6 pooled code + docs hits
  (their sum, both halves) are not lower than today's.
- If the ranking fails: the ranking keeps today's list, and the answer side (blocks' test
  paths, named's sample paths) takes the one definition only if the default answers are
  byte-identical on the sample, repos5 and repos6 (`bench_blocks answer`, the default rerun
  before the change as the baseline); otherwise it is reported and left.

Read on 2026-12-05 (benchmarks/README.md, "One list for code that is not the implementation"):
half A passed and half B held, but repos5 + repos6 lost one code hit (147 of 148), so the
ranking keeps today's list; the answer side changed 1 of 430 default answers, so it stays too.
The list left ragdb/file_types.py for this module (`NOT_IMPLEMENTATION`, as measured; with its
matcher it last lived there in commit 110d9c9, where blocks and named read it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from benchmarks.bench_ablation import Score, load, measure, passes, score, slug
from benchmarks.common import BENCH_DIR, evaluated_sets, recall
from ragdb.retrieve import SearchParams

OUT = BENCH_DIR / "one_list"
HELD = OUT / "held"
HELD_SETS = ("repos5", "repos6")
TODAY, ONE = "today", "one list"
# The union of the three, lower-cased GLOBs (`*` only, crossing `/`, as SQLite's GLOB); each
# folder and name at the top of a path and under any folder.
_DIRS = ("tests", "test", "__tests__", "spec", "specs", "testing", "testdata", "examples",
         "example", "samples", "demos")
_NAMES = ("test_*", "conftest.py", "changelog*", "changes.*", "changes", "history.*", "news.*",
          "news")
_ANYWHERE = ("*_test.*", "*.test.*", "*.spec.*", "*fuzz*", "*harness*")
# xUnit's class-per-file naming (FooTest.java, FooTests.cs), lower-cased: only where it is the
# convention (a lower-cased `*tests.*` would take eslint-plugin-jest's `no-focused-tests.js`).
_CAMEL_TEST_SUFFIXES = ("java", "kt", "cs", "swift")
#: The one list as measured (51 GLOBs).
NOT_IMPLEMENTATION: tuple[str, ...] = (
    *(glob for d in _DIRS for glob in (f"{d}/*", f"*/{d}/*")),
    *(glob for n in _NAMES for glob in (n, f"*/{n}")),
    *_ANYWHERE,
    *(f"*{word}.{suffix}" for suffix in _CAMEL_TEST_SUFFIXES for word in ("test", "tests")),
)
#: retrieve.PRIOR_PATHS before the one list (commit 32e3e6a).
TODAY_PATHS = (
    "*/tests/*", "*/test/*", "*/__tests__/*", "*/test_*.py", "*_test.py", "*_test.go",
    "*.test.*", "*.spec.*", "*/conftest.py", "*/examples/*", "*/example/*",
    "*/changelog*", "*/changes.*", "*/changes", "*/history.*", "*/news.*", "*/news",
)
VARIANTS = {TODAY: SearchParams(prior_paths=TODAY_PATHS),
            ONE: SearchParams(prior_paths=NOT_IMPLEMENTATION)}


def run() -> None:
    sets = evaluated_sets()
    held = evaluated_sets(HELD_SETS)
    if not sets or len(held) != len(HELD_SETS):
        print("a bench index is missing (data/bench/*.db): nothing measured", file=sys.stderr)
        raise SystemExit(1)
    measure(VARIANTS, sets, OUT)
    measure(VARIANTS, held, HELD)


def both(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of either half, as half "AB" (held-out sets count whole)."""
    return [{**r, "half": "AB"} for r in rows]


def hits_sum(s: Score) -> int:
    return s.code + s.docs


def _recalls(rows: Sequence[dict[str, Any]], kind: str) -> str:
    ranks = [r["rank"] for r in rows if r["kind"] == kind]
    return " / ".join(f"{recall(ranks, c):.3f}" for c in (1, 5, 10)) + f" ({len(ranks)})"


def table(title: str, rows: dict[str, list[dict[str, Any]]], which: str) -> None:
    print(f"\n{title}\n\n| variant | code R@1 / 5 / 10 (n) | docs R@1 / 5 / 10 (n) | code hits "
          "| docs hits | vLLM R@5 code / docs |\n|---|---|---|---|---|---|")
    for label, saved in rows.items():
        picked = [r for r in saved if r["half"] == which]
        s = score(picked, which)
        print(f"| {label} | {_recalls(picked, 'code')} | {_recalls(picked, 'docs')} | {s.code} "
              f"| {s.docs} | {s.vllm_code5} / {s.vllm_docs5} |")


def report() -> bool:
    """The tables and the decision; whether the one list ships."""
    if not all((OUT / f"{slug(v)}.json").exists() and (HELD / f"{slug(v)}.json").exists()
               for v in VARIANTS):
        print("no saved ranks: run `python -m benchmarks.bench_one_list run`", file=sys.stderr)
        raise SystemExit(1)
    saved = json.loads((OUT / f"{slug(TODAY)}.json").read_text())
    print(f"{saved['host']}; {saved['date']}; hybrid, k = {saved['k']}, reranking off")
    main = {v: load(v, OUT) for v in VARIANTS}
    held = {v: both(load(v, HELD)) for v in VARIANTS}
    table("Half A, pooled over vLLM public, repos, repos2, repos3, repos4:", main, "A")
    table("Half B, pooled the same:", main, "B")
    for name in HELD_SETS:
        table(f"{name}, both halves:", {v: [r for r in rows if r["set"] == name]
                                        for v, rows in held.items()}, "AB")
    table("repos5 + repos6 pooled:", held, "AB")
    a = {v: score(main[v], "A") for v in VARIANTS}
    b = {v: score(main[v], "B") for v in VARIANTS}
    h = {v: score(held[v], "AB") for v in VARIANTS}
    on_a = passes(a[ONE], a[TODAY])
    on_b = hits_sum(b[ONE]) >= hits_sum(b[TODAY])
    on_held = hits_sum(h[ONE]) >= hits_sum(h[TODAY])
    print(f"\nHalf A: {'passes' if on_a else 'fails'}; half B code + docs hits "
          f"{hits_sum(b[TODAY])} -> {hits_sum(b[ONE])}: {'not lower' if on_b else 'lower'}; "
          f"repos5 + repos6 {hits_sum(h[TODAY])} -> {hits_sum(h[ONE])}: "
          f"{'not lower' if on_held else 'lower'}.")
    ships = on_a and on_b and on_held
    print("The one list " + ("ships as the ranking's default." if ships
                             else "does not ship in the ranking."))
    return ships


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["run", "report"])
    args = parser.parse_args()
    if args.action == "run":
        run()
    report()


if __name__ == "__main__":
    main()
