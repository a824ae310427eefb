"""Issue 39/40: a learned question-level code gate in place of the hand-set one?

    uv run --frozen python -m benchmarks.bench_code_gate run      # features, fit, every variant
    uv run --frozen python -m benchmarks.bench_code_gate report   # the tables, from saved ranks

The code gate (0 to 1, sql/search_hybrid.sql's `gate` CTE) scales the lift `w_absent / (c +
lexical rank)` that unembedded (code) chunks get in place of a dense term. Today it is hand-set
from two features (the nearest dense window's distance between gate_near and gate_far; the best
code BM25 over the best docs BM25 between gate_low and gate_high). The ablation (bench_ablation,
"gate always open") gained 12 code hits on half A and lost 37 docs hits: nothing tells a code
question from a docs question well. Here a small learned gate is measured against it.

Protocol, written and committed before the first run that reads any result; not changed after:

1. Bound first. Variants "today" (SearchParams()), "gate always open" (SearchParams.gate_override
   = 1 for every question) and "oracle gate" (gate_override = 1 for questions whose set labels
   them code, 0 for docs), each per half and pooled. gate_override None gives today's order by
   construction (the SQL reads the rule when it is NULL).
2. Features, per question, computable at query time (`FEATURES`, eight): `near`, the nearest dense
   window's distance within max_distance (else max_distance), as the gate reads it; `log_ratio`,
   log(best code BM25 / best docs BM25) of the lexical leg (0 when either is missing); `no_code`
   and `no_docs`, 1 when the lexical leg has no code / no docs hit; and from the question text
   alone (`text_features`): `ident` (an identifier-looking token: snake_case, CamelCase,
   dotted.name not a file name, name( ), `path` (a path with a '/' between names, or a file name
   whose suffix ragdb reads as a language), `backticks` (a `quoted` span) and `words` (the
   number of whitespace-separated words). The first four come from benchmarks/sql/
   gate_features.sql, the gate's own inputs as sql/search_hybrid.sql computes them. No bag of
   words, no per-dataset vocabulary, no question ids.
3. Model: logistic regression (numpy; features standardised by half A's mean and standard
   deviation; L2 penalty lambda = 1 on the weights, none on the intercept; Newton's method)
   predicting "the question's reference is code" (label: the question's kind), fitted on half A
   pooled over `benchmarks.common.evaluated_sets()` (vLLM public, repos, repos2, repos3, repos4;
   halves by `bench_rerank_quality.half`). The gate is its probability p ("learned p") or, the one
   extra hyper-parameter, p thresholded: 1 where p >= t else 0, t in 0.3 / 0.4 / 0.5 / 0.6 / 0.7
   ("learned t=..."). The classifier's accuracy (p >= 0.5) on half B and on repos5 is reported.
4. Acceptance (the ablation's rule, `bench_ablation.passes`): a learned variant passes on half A
   when half A pooled code hits (code questions at R@1 plus those within R@5) > today's AND docs
   hits >= today's AND vLLM public half A R@5 hits are not lower for code nor docs. Of the
   learned variants that pass, the one with the most half A code + docs hits is chosen (ties:
   more code hits, then the order of `CANDIDATES`); none passing: the learned gate fails, and
   the variant with the most half A code + docs hits is reported as the best learned one.
   Then half B (pooled over the five sets) and repos5 (`BY_NAME["repos5"]`, both halves, which
   nobody tuned retrieval on) are reported. The chosen gate ships as the default only if it
   passes on half A AND half B pooled code + docs hits (their sum) are not lower than today's
   AND repos5 code + docs hits (their sum, both halves) are not lower than today's.
5. Every set on its bench index as built (never rebuilt here); hybrid, k = 10, reranking and
   the query cache off (as bench_ablation). Ranks of every variant are saved under
   data/bench/code_gate/, the features and the fitted model beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_ablation import K, Score, _Embedded, passes, score
from benchmarks.bench_rerank_quality import half
from benchmarks.common import BENCH_DIR, Question, evaluated_sets, first_rank, host_line, recall
from ragdb import RagDB
from ragdb.retrieve import Mode, SearchParams
from ragdb.file_types import language_of

OUT = BENCH_DIR / "code_gate"
FEATURES_SQL = Path(__file__).with_name("sql") / "gate_features.sql"
FEATURES = ("near", "log_ratio", "no_code", "no_docs", "ident", "path", "backticks", "words")
TODAY, OPEN, ORACLE = "today", "gate always open", "oracle gate"
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7)
CANDIDATES = ("learned p",) + tuple(f"learned t={t}" for t in THRESHOLDS)
L2 = 1.0
HELD = "repos5"  # reported only

_SNAKE = re.compile(r"\b[A-Za-z0-9]+_[A-Za-z0-9_]+\b")
_CAMEL = re.compile(r"\b[A-Za-z][a-z0-9]+[A-Z][A-Za-z0-9]*\b|\b[A-Z]{2,}[a-z][A-Za-z0-9]*\b")
_DOTTED = re.compile(r"\b[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+\b")
_CALL = re.compile(r"\b[A-Za-z_]\w*\(")
_SLASH = re.compile(r"\w/\w")
_TICKS = re.compile(r"`[^`]+`")


def text_features(question: str) -> dict[str, float]:
    """The question-form features: what the text alone says about code."""
    dotted = [m.group(0) for m in _DOTTED.finditer(question)]
    files = [d for d in dotted if language_of(d)]  # the language ragdb indexes it as
    ident = bool(_SNAKE.search(question) or _CAMEL.search(question) or _CALL.search(question)
                 or len(files) < len(dotted))
    path = bool(_SLASH.search(question) or files)
    return {"ident": float(ident), "path": float(path),
            "backticks": float(bool(_TICKS.search(question))),
            "words": float(len(question.split()))}


def gate_inputs(nearest: float | None, code: float | None, docs: float | None,
                max_distance: float) -> dict[str, float]:
    """The features read from the gate's own inputs (benchmarks/sql/gate_features.sql)."""
    both = code is not None and docs is not None and code < 0 and docs < 0
    return {"near": float(max_distance if nearest is None else nearest),
            "log_ratio": math.log(code / docs) if code and docs and both else 0.0,
            "no_code": float(code is None), "no_docs": float(docs is None)}


@cache
def _features_sql() -> str:
    """benchmarks/sql/gate_features.sql, read once (as ragdb.resources.sql reads its own)."""
    return FEATURES_SQL.read_text()


def features(searcher: _Embedded, question: str, vector: bytes | None) -> dict[str, float]:
    """All eight features of one question on one index, as a search of it would see them."""
    params = searcher.params
    planned = searcher.plan(question, K, Mode.hybrid, vector)
    nearest: float | None = None
    code: float | None = None
    docs: float | None = None
    if planned is not None and planned[0] == "search_hybrid":
        row = searcher.conn.execute(_features_sql(), planned[1]).fetchall()[0]
        nearest, code, docs = (None if v is None else float(v) for v in row)
    return {**gate_inputs(nearest, code, docs, params.max_distance), **text_features(question)}


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2, steps: int = 50) -> np.ndarray:
    """L2 logistic regression by Newton's method on standardised x; [intercept, weights]."""
    a = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(a.shape[1])
    penalty = np.full(a.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(a @ w)))
        grad = a.T @ (p - y) + penalty * w
        hess = (a * (p * (1 - p))[:, None]).T @ a + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


class Model:
    """The fitted classifier: half A's means and deviations, and the weights."""

    def __init__(self, mean: np.ndarray, sd: np.ndarray, w: np.ndarray) -> None:
        self.mean, self.sd, self.w = mean, sd, w

    @classmethod
    def fitted(cls, rows: Sequence[dict[str, Any]]) -> "Model":
        x = np.array([[r["features"][f] for f in FEATURES] for r in rows])
        y = np.array([1.0 if r["kind"] == "code" else 0.0 for r in rows])
        mean, sd = x.mean(axis=0), x.std(axis=0)
        sd[sd == 0] = 1.0
        return cls(mean, sd, fit((x - mean) / sd, y))

    def probability(self, values: dict[str, float]) -> float:
        z = (np.array([values[f] for f in FEATURES]) - self.mean) / self.sd
        return float(1.0 / (1.0 + math.exp(-(self.w[0] + z @ self.w[1:]))))

    def as_json(self) -> dict[str, Any]:
        return {"features": list(FEATURES), "mean": self.mean.tolist(), "sd": self.sd.tolist(),
                "intercept": float(self.w[0]), "weights": self.w[1:].tolist(), "l2": L2}


def gate_of(variant: str, row: dict[str, Any]) -> float | None:
    """The gate a variant forces for one question (None: today's rule)."""
    if variant == TODAY:
        return None
    if variant == OPEN:
        return 1.0
    if variant == ORACLE:
        return 1.0 if row["kind"] == "code" else 0.0
    p = float(row["p"])
    if variant == "learned p":
        return p
    return 1.0 if p >= float(variant.split("=")[1]) else 0.0


Sets = Sequence[tuple[str, Path, list[Question]]]


def collect(sets: Sets) -> list[dict[str, Any]]:
    """Every question's features on its own index (and what the ranks are grouped by)."""
    rows: list[dict[str, Any]] = []
    for name, db, questions in sets:
        started = time.perf_counter()
        with RagDB(db, use_cache=False, rerank=False) as rag:
            searcher = _Embedded(rag.conn)
            searcher._refresh()
            searcher._query_vectors([q.question for q in questions], Mode.hybrid)
            for q in questions:
                rows.append({"set": name, "kind": q.kind, "id": q.question_id, "half": half(q),
                             "features": features(searcher, q.question,
                                                  searcher._vectors.get(q.question))})
        print(f"{name}: features ({time.perf_counter() - started:.1f} s)", file=sys.stderr,
              flush=True)
    return rows


def measure(variants: Sequence[str], sets: Sets, rows: list[dict[str, Any]],
            out: Path = OUT) -> None:
    """Rank every question under each variant (its gate forced per question) and save them."""
    by_id = {(r["set"], r["id"]): r for r in rows}
    ranks: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for name, db, questions in sets:
        with RagDB(db, use_cache=False, rerank=False) as rag:
            searcher = _Embedded(rag.conn)
            for variant in variants:
                started = time.perf_counter()
                groups: dict[float | None, list[Question]] = {}
                for q in questions:
                    groups.setdefault(gate_of(variant, by_id[(name, q.question_id)]),
                                      []).append(q)
                found: dict[str, int | None] = {}
                for gate, group in groups.items():
                    searcher.params = replace(SearchParams(), gate_override=gate)
                    hits = searcher.search_many([q.question for q in group], K, Mode.hybrid)
                    found.update({q.question_id: first_rank(q, h) for q, h in zip(group, hits)})
                ranks[variant] += [{"set": name, "kind": q.kind, "id": q.question_id,
                                    "half": half(q), "rank": found[q.question_id]}
                                   for q in questions]
                print(f"{name}: {variant} ({time.perf_counter() - started:.1f} s)",
                      file=sys.stderr, flush=True)
    for variant in variants:
        path = out / f"{_slug(variant)}.json"
        saved = json.loads(path.read_text())["ranks"] if path.exists() else []
        names = {name for name, _, _ in sets}
        kept = [r for r in saved if r["set"] not in names]
        path.write_text(json.dumps({"variant": variant, "k": K, "host": host_line(),
                                    "date": time.strftime("%Y-%m-%d"),
                                    "params": asdict(SearchParams()),
                                    "ranks": kept + ranks[variant]}, indent=0))


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_")


def load(variant: str, out: Path = OUT) -> list[dict[str, Any]]:
    return list(json.loads((out / f"{_slug(variant)}.json").read_text())["ranks"])


def pooled(rows: Sequence[dict[str, Any]], main: bool = True) -> list[dict[str, Any]]:
    """The five evaluated sets' rows (main) or repos5's."""
    return [r for r in rows if (r["set"] != HELD) == main]


def held_score(rows: Sequence[dict[str, Any]]) -> Score:
    """repos5's hits, both halves together."""
    both = [{**r, "half": "A"} for r in pooled(rows, False)]
    return score(both, "A")


def choose(scores: dict[str, Score]) -> tuple[str, bool]:
    """The protocol's choice among the learned variants on half A: (variant, passes)."""
    today = scores[TODAY]
    ok = [v for v in CANDIDATES if passes(scores[v], today) and scores[v].code > today.code]

    def key(v: str) -> tuple[int, int, int]:
        return (scores[v].code + scores[v].docs, scores[v].code, -CANDIDATES.index(v))

    if ok:
        return max(ok, key=key), True
    return max(CANDIDATES, key=key), False


def run(main_sets: Sets, held_sets: Sets = (), out: Path = OUT) -> Model:
    """Features, the model fitted on main_sets' half A, every variant's ranks; the model."""
    out.mkdir(parents=True, exist_ok=True)
    rows = collect([*main_sets, *held_sets])
    model = Model.fitted([r for r in rows if r["set"] != HELD and r["half"] == "A"])
    for r in rows:
        r["p"] = model.probability(r["features"])
    (out / "features.json").write_text(json.dumps(
        {"model": model.as_json(), "host": host_line(), "date": time.strftime("%Y-%m-%d"),
         "rows": rows}, indent=0))
    measure([TODAY, OPEN, ORACLE, *CANDIDATES], [*main_sets, *held_sets], rows, out)
    return model


def _cells(rows: Sequence[dict[str, Any]], which: str | None, kind: str) -> str:
    ranks = [r["rank"] for r in rows if (which is None or r["half"] == which)
             and r["kind"] == kind]
    return " / ".join(f"{recall(ranks, c):.3f}" for c in (1, 5, 10)) + f" ({len(ranks)})"


def _parts(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The rows the report reads in three parts: half A (fitted on), half B, the held set."""
    return [("half A", [r for r in pooled(rows) if r["half"] == "A"]),
            ("half B", [r for r in pooled(rows) if r["half"] == "B"]),
            (HELD, pooled(rows, False))]


def report(out: Path = OUT) -> None:
    saved = out / "features.json"
    if not saved.exists():
        print(f"no saved ranks under {out}: run `python -m benchmarks.bench_code_gate run`",
              file=sys.stderr)
        raise SystemExit(1)
    data = json.loads(saved.read_text())
    print(f"{data['host']}; {data['date']}; hybrid, k = {K}, reranking and the cache off\n")
    model = data["model"]
    print("Model (standardised features; intercept "
          f"{model['intercept']:+.3f}): " + ", ".join(
              f"{f} {w:+.3f} (mean {m:.3f}, sd {s:.3f})"
              for f, w, m, s in zip(model["features"], model["weights"], model["mean"],
                                    model["sd"])))
    rows = data["rows"]
    for label, chosen in _parts(rows):
        if chosen:
            right = sum(1 for r in chosen if (r["p"] >= 0.5) == (r["kind"] == "code"))
            print(f"classifier accuracy (p >= 0.5), {label}: {right} / {len(chosen)} = "
                  f"{right / len(chosen):.3f}")
    variants = [v for v in (TODAY, OPEN, ORACLE, *CANDIDATES)
                if (out / f"{_slug(v)}.json").exists()]
    ranks = {v: load(v, out) for v in variants}
    a = {v: score(pooled(ranks[v]), "A") for v in variants}
    b = {v: score(pooled(ranks[v]), "B") for v in variants}
    h = {v: held_score(ranks[v]) for v in variants}
    print("\nHits at R@1 + R@5 (change against today); vLLM public R@5 hits code / docs; "
          f"{HELD}: both halves\n")
    print(f"| variant | A code | A docs | A vLLM R@5 | B code | B docs | B vLLM R@5 | {HELD} code "
          f"| {HELD} docs | half A |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for v in variants:
        cells = []
        for s, t in ((a[v], a[TODAY]), (b[v], b[TODAY])):
            cells += [f"{s.code} ({s.code - t.code:+d})", f"{s.docs} ({s.docs - t.docs:+d})",
                      f"{s.vllm_code5} / {s.vllm_docs5}"]
        cells += [f"{h[v].code} ({h[v].code - h[TODAY].code:+d})",
                  f"{h[v].docs} ({h[v].docs - h[TODAY].docs:+d})"]
        mark = ("-" if v == TODAY else "passes"
                if passes(a[v], a[TODAY]) and a[v].code > a[TODAY].code else "fails")
        print(f"| {v} | " + " | ".join(cells) + f" | {mark} |")
    print("\nR@1 / 5 / 10 (questions)\n")
    print(f"| variant | A code | A docs | B code | B docs | {HELD} code | {HELD} docs |")
    print("|---|---|---|---|---|---|---|")
    for v in variants:
        main = pooled(ranks[v])
        held = pooled(ranks[v], False)
        print(f"| {v} | " + " | ".join(
            [_cells(main, w, k) for w in "AB" for k in ("code", "docs")]
            + [_cells(held, None, k) for k in ("code", "docs")]) + " |")
    if all(v in variants for v in (TODAY, *CANDIDATES)):
        chosen_v, ok = choose(a)
        total = b[chosen_v].code + b[chosen_v].docs >= b[TODAY].code + b[TODAY].docs
        held_ok = h[chosen_v].code + h[chosen_v].docs >= h[TODAY].code + h[TODAY].docs
        print(f"\nChosen on half A: {chosen_v} ({'passes' if ok else 'fails'} half A); half B "
              f"code + docs {b[chosen_v].code + b[chosen_v].docs} against today's "
              f"{b[TODAY].code + b[TODAY].docs}; {HELD} {h[chosen_v].code + h[chosen_v].docs} "
              f"against {h[TODAY].code + h[TODAY].docs}. Ships: "
              f"{'yes' if ok and total and held_ok else 'no'}")
        if OPEN in variants:
            print("\nWhere the gate matters (reported only): code questions whose hits rise "
                  "with the gate open, docs questions whose hits fall; p >= the chosen "
                  "threshold; today's gate recomputed from the features\n")
            print("| part | n | today's gate >= 0.5 right | p >= 0.5 right | code helped by "
                  "opening | docs hurt by opening |\n|---|---|---|---|---|---|")
            cut = float(chosen_v.split("=")[1]) if "=" in chosen_v else 0.5
            for label, chosen in _parts(rows):
                if chosen:
                    print(diagnose(chosen, ranks, cut, label))


def hand_set_gate(values: dict[str, float], params: SearchParams = SearchParams()) -> float:
    """Today's gate from the saved features, as sql/search_hybrid.sql computes it (reported
    only: how well the hand-set rule tells the kinds apart)."""
    def ramp(x: float, low: float, high: float) -> float:
        return 1.0 if high <= low else max(0.0, min(1.0, (x - low) / (high - low)))

    near = ramp(values["near"], params.gate_near, params.gate_far)
    if values["no_code"]:
        return 0.0
    if values["no_docs"]:
        return near
    return near * ramp(math.exp(values["log_ratio"]), params.gate_low, params.gate_high)


def diagnose(rows: Sequence[dict[str, Any]], ranks: dict[str, list[dict[str, Any]]],
             threshold: float, label: str) -> str:
    """Which questions the gate matters for (opening it moves their hits), and what the
    classifier and today's rule say on them (reported only; chooses nothing)."""
    def hits(rank: int | None) -> int:
        return int(rank is not None and rank <= 1) + int(rank is not None and rank <= 5)

    def key(r: dict[str, Any]) -> tuple[str, str]:
        return (r["set"], r["id"])

    today = {key(r): r["rank"] for r in ranks[TODAY]}
    opened = {key(r): r["rank"] for r in ranks[OPEN]}
    helped = [r for r in rows if r["kind"] == "code"
              and hits(opened[key(r)]) > hits(today[key(r)])]
    hurt = [r for r in rows if r["kind"] == "docs"
            and hits(opened[key(r)]) < hits(today[key(r)])]

    def mean(values: Sequence[float]) -> str:
        return f"{sum(values) / len(values):.2f}" if values else "-"

    def side(group: Sequence[dict[str, Any]]) -> str:
        return (f"{len(group)}, mean p {mean([r['p'] for r in group])}, p >= {threshold}: "
                f"{sum(1 for r in group if r['p'] >= threshold)}, today's gate mean "
                f"{mean([hand_set_gate(r['features']) for r in group])}")

    right = sum(1 for r in rows if (hand_set_gate(r["features"]) >= 0.5) == (r["kind"] == "code"))
    return (f"| {label} | {len(rows)} | {right / len(rows):.3f} | "
            f"{sum(1 for r in rows if (r['p'] >= 0.5) == (r['kind'] == 'code')) / len(rows):.3f}"
            f" | {side(helped)} | {side(hurt)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["run", "report"])
    parser.add_argument("--sets", nargs="*", default=(),
                        help="vllm, repos, repos2, repos3, repos4, repos5 (default: all built)")
    args = parser.parse_args()
    if args.action == "run":
        only = args.sets
        main_sets = [entry for entry in evaluated_sets(only) if entry[0] != HELD]
        if not main_sets:
            print("no bench index is built (data/bench/*.db): nothing to measure",
                  file=sys.stderr)
            raise SystemExit(1)
        run(main_sets, evaluated_sets([HELD]) if not only or HELD in only else [])
    report()


if __name__ == "__main__":
    main()
