"""Issue 40, learned fusion: does a small linear scorer over each candidate's features, learned
from question sets, beat the hand-set fused order on sets it did not learn from?

    uv run --frozen python -m benchmarks.bench_learned_fusion collect   # features, once
    uv run --frozen python -m benchmarks.bench_learned_fusion report    # learn, then measure

`collect` runs every question of vLLM public (code and docs), the shared repos set and the
held-out repos2, repos3 and repos4 on its bench rag.db: today's search (hybrid, k = 10, the
fused order with its result-order rules) and sql/search_features.sql over the union of every
leg's candidates (the bridge leg with the terms today's first run gives), each candidate
labelled by the graders' rule (common.first_rank), saved to data/bench/learned/features.json.

`report` learns the weights from scratch, leave one set out: for each of the six sets (vLLM
code, vLLM docs, repos, repos2, repos3, repos4) a listwise softmax over each question's
candidate list, trained on the five others, then measured on the left-out set, the learned
order computed by the SQL itself (:learned 1 with those weights) with and without the
result-order rules after it, against today's order on the same questions. Then the same with
the questions split in two halves by a hash of their id (learned on A, read on B, and back),
and the pooled weights, each feature left out in turn (leave one set out again). Nothing is
chosen per question or per set: one model form, one regularisation, fixed before reading.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (BENCH_DIR, CUTS, HELD_OUT, REPOS_DB, VLLM_DB, Question,
                               first_rank, host_line, recall, repo_questions, vllm_questions)
from ragdb import RagDB
from ragdb.db import read_transaction
from ragdb.resources import sql
from ragdb.result_order import names_code
from ragdb.retrieve import Hit, Mode, Searcher

OUT = BENCH_DIR / "learned" / "features.json"
K = 10
#: The columns of sql/search_features.sql after the hit's own eleven, `fused` and `learned`.
FEATURES = ("lex_rr", "lex_margin_rr", "lex_ratio", "dense_rr", "dense_close", "dense_gap",
            "bridge_rr", "symbol_rr", "code", "code_gate", "absent_rr", "code_plain",
            "prior_path", "other_root", "definition", "log_chars", "symbol_names")
#: The left-out sets: vLLM public split by kind (one rag.db), then each repository set.
FOLDS = ("vllm-code", "vllm-docs", "repos", "repos2", "repos3", "repos4")
#: The learner, fixed before any reading: L2 on standardised weights, full-batch Adam.
L2 = 1e-3
STEPS = 1500
RATE = 0.05


def half(question_id: str) -> str:
    """A or B by a hash of the question's id (as bench_rerank_quality), blind to its ranks."""
    return "AB"[int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % 2]


def fold_of(set_name: str, kind: str) -> str:
    return f"vllm-{kind}" if set_name == "vllm" else set_name


def bench_sets() -> list[tuple[str, Path, list[Question]]]:
    """(name, rag.db, questions) of every set whose bench index is built."""
    found: list[tuple[str, Path, list[Question]]] = []
    if VLLM_DB.exists():
        found.append(("vllm", VLLM_DB, vllm_questions()))
    if REPOS_DB.exists():
        found.append(("repos", REPOS_DB, repo_questions()))
    for held in HELD_OUT:
        if held.db.exists():
            found.append((held.name, held.db, repo_questions(held.folder, held.names)))
    return found


def weight_params(weights: dict[str, float] | None) -> dict[str, Any]:
    """:learned and the :lw_<feature> parameters of sql/search_features.sql."""
    return {"learned": int(weights is not None),
            **{f"lw_{name}": (weights or {}).get(name) for name in FEATURES}}


def feature_rows(searcher: Searcher, question: str, vector: bytes | None, k: int,
                 weights: dict[str, float] | None = None) -> list[tuple[Any, ...]] | None:
    """sql/search_features.sql's rows for one question (its bridge leg as today's first run
    gives it), ordered by `learned` when weights are given, else by `fused`; None when the
    question does not run the hybrid file (no vector, or nothing lexical to search)."""
    planned = searcher.plan(question, k, Mode.hybrid, vector)
    if planned is None or planned[0] != "search_hybrid":
        return None
    params = planned[1]
    terms = searcher.bridge_terms(question, vector)
    if terms:
        params = Searcher.bridged(params, terms)
    params = {**params, "plain": int(not names_code(question)), **weight_params(weights)}
    return [tuple(row) for row in searcher.conn.execute(sql("search_features"), params)]


def query_vectors(searcher: Searcher, questions: Sequence[str]) -> dict[str, bytes]:
    """The questions' query vectors, as a hybrid search embeds them."""
    with read_transaction(searcher.conn):
        searcher._refresh()
        return searcher._query_vectors(questions, Mode.hybrid)


def collect() -> None:
    """Today's rank and every candidate's features and label, for every question."""
    records: list[dict[str, Any]] = []
    started = time.perf_counter()
    for name, db, questions in bench_sets():
        with RagDB(db, use_cache=False, rerank=False) as rag:
            searcher = Searcher(rag.conn, use_cache=False)
            texts = [q.question for q in questions]
            today = searcher.search_many(texts, K, Mode.hybrid)
            vectors = query_vectors(searcher, texts)
            with read_transaction(rag.conn):
                for q, hits in zip(questions, today):
                    rows = feature_rows(searcher, q.question, vectors.get(q.question), 1000)
                    records.append({
                        "set": name, "kind": q.kind, "id": q.question_id, "half": half(
                            q.question_id), "today": first_rank(q, hits),
                        "rows": None if rows is None else [
                            [row[0], first_rank(q, [Hit.of_row(row[:11])]) == 1,
                             row[11], *row[13:]] for row in rows]})
        print(f"collect: {name}: {len(questions)} questions "
              f"({time.perf_counter() - started:.0f} s so far)", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"host": host_line(), "date": time.strftime("%Y-%m-%d"),
                               "features": FEATURES, "records": records}))
    print(f"collect: saved {OUT}")


# -- the learner -------------------------------------------------------------------------------

def learn(records: Sequence[dict[str, Any]], features: Sequence[str] = FEATURES
          ) -> dict[str, float]:
    """Weights of a listwise softmax over each question's candidates (the loss: minus the log
    of the probability given to its relevant ones), on standardised features with L2, in the
    features' own units (a constant per question does not change its order, so no bias)."""
    columns = [FEATURES.index(name) for name in features]
    lists = [r for r in records if r["rows"] and any(row[1] for row in r["rows"])]
    x = np.array([[row[3 + c] for c in columns] for r in lists for row in r["rows"]], float)
    y = np.array([bool(row[1]) for r in lists for row in r["rows"]])
    sizes = [len(r["rows"]) for r in lists]
    starts = np.cumsum([0] + sizes[:-1])
    group = np.repeat(np.arange(len(lists)), sizes)
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    z = (x - mean) / std
    w = np.zeros(z.shape[1])
    m, v = np.zeros_like(w), np.zeros_like(w)
    for step in range(1, STEPS + 1):
        s = z @ w
        s = s - np.maximum.reduceat(s, starts)[group]
        e = np.exp(s)
        p = e / np.add.reduceat(e, starts)[group]
        pr = np.where(y, p, 0.0)
        q = pr / np.add.reduceat(pr, starts)[group]
        grad = z.T @ (p - q) / len(lists) + 2 * L2 * w
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad ** 2
        w -= RATE * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    return {name: float(wi / si) for name, wi, si in zip(features, w, std)}


def offline_rank(record: dict[str, Any], weights: dict[str, float] | None) -> int | None:
    """The first relevant candidate's rank by the weights over the saved features (no
    result-order rules), or by `fused`; None beyond K."""
    rows = record["rows"]
    if weights is None:
        scores = [row[2] for row in rows]
    else:
        scores = [sum(weights.get(n, 0.0) * row[3 + i] for i, n in enumerate(FEATURES))
                  for row in rows]
    order = sorted(range(len(rows)), key=lambda i: -scores[i])  # stable: ties keep SQL order
    for rank, i in enumerate(order[:K], 1):
        if rows[i][1]:
            return rank
    return None


def cells(ranks: Sequence[int | None]) -> str:
    return "/".join(f"{recall(ranks, cut):.3f}" for cut in CUTS)


class Online:
    """The learned order as the SQL computes it, the result-order rules after it or not, on the
    bench indexes (one open connection and the questions' vectors per set)."""

    def __init__(self) -> None:
        self.sets = {name: (db, questions) for name, db, questions in bench_sets()}
        self._open: dict[str, tuple[RagDB, Searcher, dict[str, bytes]]] = {}

    def _searcher(self, name: str) -> tuple[Searcher, dict[str, bytes]]:
        if name not in self._open:
            db, questions = self.sets[name]
            rag = RagDB(db, use_cache=False, rerank=False)
            searcher = Searcher(rag.conn, use_cache=False)
            vectors = query_vectors(searcher, [q.question for q in questions])
            self._open[name] = (rag, searcher, vectors)
        _, searcher, vectors = self._open[name]
        return searcher, vectors

    def ranks(self, name: str, ids: set[str], weights: dict[str, float], rules: bool,
              today: dict[str, int | None]) -> dict[str, int | None]:
        """Question id -> the first relevant rank of the learned top K; a question the hybrid
        file does not run keeps today's rank."""
        searcher, vectors = self._searcher(name)
        out: dict[str, int | None] = {}
        with read_transaction(searcher.conn):
            for q in self.sets[name][1]:
                if q.question_id not in ids:
                    continue
                rows = feature_rows(searcher, q.question, vectors.get(q.question), K, weights)
                if rows is None:
                    out[q.question_id] = today[q.question_id]
                    continue
                hits = [Hit.of_row(row[:11]) for row in rows]
                if rules:
                    hits = searcher._by_definitions(q.question, hits)
                out[q.question_id] = first_rank(q, hits)
        return out

    def close(self) -> None:
        for rag, _, _ in self._open.values():
            rag.close()


def report() -> None:
    data = json.loads(OUT.read_text())
    records: list[dict[str, Any]] = data["records"]
    assert tuple(data["features"]) == FEATURES, "features.json is stale: run `collect` again"
    print(f"{host_line()}\nfeatures collected {data['date']} on {data['host']}; "
          f"{len(records)} questions; learner: listwise softmax, L2 {L2}, {STEPS} Adam steps\n")
    for r in records:
        r["fold"] = fold_of(r["set"], r["kind"])
    today = {r["id"]: r["today"] for r in records}
    online = Online()
    try:
        loso(records, today, online)
        halves(records, today, online)
        ablation(records, today, online)
    finally:
        online.close()


def loso(records: list[dict[str, Any]], today: dict[str, int | None], online: Online) -> None:
    """Leave one set out: learned on five sets, read on the sixth, code and docs apart."""
    print("leave one set out: R@1/5/10, today's order | learned (SQL) | learned + "
          "result-order rules | learned, saved features, no rules\n")
    print("| left out | kind | n | today | learned | learned + rules | offline |\n"
          "|---|---|---|---|---|---|---|")
    pooled: dict[str, dict[str, list[int | None]]] = defaultdict(lambda: defaultdict(list))
    for fold in FOLDS:
        test = [r for r in records if r["fold"] == fold]
        if not test:
            continue
        weights = learn([r for r in records if r["fold"] != fold])
        name = test[0]["set"]
        ids = {r["id"] for r in test}
        learned = online.ranks(name, ids, weights, False, today)
        ruled = online.ranks(name, ids, weights, True, today)
        for kind in ("code", "docs"):
            picked = [r for r in test if r["kind"] == kind]
            if not picked:
                continue
            cols = {"today": [today[r["id"]] for r in picked],
                    "learned": [learned[r["id"]] for r in picked],
                    "rules": [ruled[r["id"]] for r in picked],
                    "offline": [offline_rank(r, weights) if r["rows"] else today[r["id"]]
                                for r in picked]}
            group = "unseen" if fold in ("repos2", "repos3", "repos4") else "seen"
            for key, ranks in cols.items():
                pooled[f"all {kind}"][key] += ranks
                pooled[f"{group} {kind}"][key] += ranks
            print(f"| {fold} | {kind} | {len(picked)} | " + " | ".join(
                cells(v) for v in cols.values()) + " |", flush=True)
    for label, cols in sorted(pooled.items()):
        print(f"| pooled {label} | | {len(cols['today'])} | " + " | ".join(
            cells(v) for v in cols.values()) + " |")
    print("\nweights learned on all six sets (features' own units):")
    print(json.dumps({k: round(v, 4) for k, v in learn(records).items()}))


def halves(records: list[dict[str, Any]], today: dict[str, int | None], online: Online
           ) -> None:
    """Learned on half A of every set, read on half B; then the other way round."""
    print("\nhalves by a hash of the question id: R@1/5/10, today | learned + rules\n")
    print("| learned on | read on | kind | n | today | learned + rules |\n"
          "|---|---|---|---|---|---|")
    for train, test in (("A", "B"), ("B", "A")):
        weights = learn([r for r in records if r["half"] == train])
        ranks: dict[str, int | None] = {}
        for name in online.sets:
            ids = {r["id"] for r in records if r["set"] == name and r["half"] == test}
            ranks.update(online.ranks(name, ids, weights, True, today))
        for kind in ("code", "docs"):
            picked = [r for r in records if r["half"] == test and r["kind"] == kind]
            print(f"| {train} | {test} | {kind} | {len(picked)} | "
                  f"{cells([today[r['id']] for r in picked])} | "
                  f"{cells([ranks[r['id']] for r in picked])} |", flush=True)


def ablation(records: list[dict[str, Any]], today: dict[str, int | None], online: Online
             ) -> None:
    """Each feature left out of the learner in turn (leave one set out, the rules after it),
    pooled over the six folds: a hand-set knob whose feature the learner does not need."""
    drops: dict[str, tuple[str, ...]] = {
        "all features": (),
        "no margin (lex_margin_rr)": ("lex_margin_rr",),
        "no code gate (code_gate, absent_rr)": ("code_gate", "absent_rr"),
        "no path prior (prior_path)": ("prior_path",),
        "no repository prior (other_root)": ("other_root",),
        "no bridge leg (bridge_rr)": ("bridge_rr",),
        "no symbol leg (symbol_rr, symbol_names)": ("symbol_rr", "symbol_names"),
        "ranks only (no raw scores, kinds, lengths)": (
            "lex_ratio", "dense_close", "dense_gap", "definition", "log_chars", "code_plain"),
    }
    print("\neach feature left out (leave one set out, result-order rules after): pooled "
          "R@1/5/10\n")
    print("| learner | unseen code | unseen docs | all code | all docs |\n|---|---|---|---|---|")
    base = {kind: [today[r["id"]] for r in records if r["kind"] == kind]
            for kind in ("code", "docs")}
    unseen = [r for r in records if r["fold"] in ("repos2", "repos3", "repos4")]
    print(f"| today | {cells([today[r['id']] for r in unseen if r['kind'] == 'code'])} | "
          f"{cells([today[r['id']] for r in unseen if r['kind'] == 'docs'])} | "
          f"{cells(base['code'])} | {cells(base['docs'])} |")
    for label, dropped in drops.items():
        kept = tuple(f for f in FEATURES if f not in dropped)
        ranks: dict[str, int | None] = {}
        for fold in FOLDS:
            test = [r for r in records if r["fold"] == fold]
            if not test:
                continue
            weights = learn([r for r in records if r["fold"] != fold], kept)
            ranks.update(online.ranks(test[0]["set"], {r["id"] for r in test}, weights, True,
                                      today))
        row = [cells([ranks[r["id"]] for r in group if r["kind"] == kind])
               for group in (unseen, records) for kind in ("code", "docs")]
        print(f"| {label} | " + " | ".join(row) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["collect", "report"])
    args = parser.parse_args()
    if args.action == "collect":
        collect()
    else:
        report()


if __name__ == "__main__":
    main()
