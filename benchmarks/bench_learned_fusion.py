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
result-order rule (callee first) after it, against today's order and
the hand-set fused order without it. Then the same with the questions split in two
halves by a hash of their id (learned on A, read on B, and back); each feature group left out
in turn (leave one set out over the saved features); `--select` also chooses a variant
(feature set and L2) inside each training fold, by leave one set out among the five training
sets, and reads it on the sixth. Nothing is chosen per question or per set; the primary
learner (all features, L2 1e-3) was fixed before any reading.

    uv run --frozen python -m benchmarks.bench_learned_fusion report --select
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.common import (BENCH_DIR, CUTS, evaluated_sets, first_rank, host_line,
                               recall)
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
            "prior_path", "other_root", "definition", "log_chars", "symbol_names", "code_near",
            "code_lead")
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
    for name, db, questions in evaluated_sets():
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

def _arrays(record: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """A question's candidates as (features, relevant), made once per record."""
    if "_x" not in record:
        rows = record["rows"] or []
        record["_x"] = np.array([row[3:] for row in rows], float).reshape(len(rows), -1)
        record["_y"] = np.array([bool(row[1]) for row in rows], bool)
    return record["_x"], record["_y"]


def learn(records: Sequence[dict[str, Any]], features: Sequence[str] = FEATURES,
          l2: float = L2) -> dict[str, float]:
    """Weights of a listwise softmax over each question's candidates (the loss: minus the log
    of the probability given to its relevant ones), on standardised features with L2, in the
    features' own units (a constant per question does not change its order, so no bias).
    Full-batch Adam, stopped early once the gradient is flat."""
    columns = [FEATURES.index(name) for name in features]
    lists = [r for r in records if r["rows"] and any(row[1] for row in r["rows"])]
    x = np.concatenate([_arrays(r)[0][:, columns] for r in lists])
    y = np.concatenate([_arrays(r)[1] for r in lists])
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
        grad = z.T @ (p - q) / len(lists) + 2 * l2 * w
        if np.abs(grad).max() < 1e-5:
            break
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad ** 2
        w -= RATE * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    return {name: float(wi / si) for name, wi, si in zip(features, w, std)}


def offline_rank(record: dict[str, Any], weights: dict[str, float] | None) -> int | None:
    """The first relevant candidate's rank by the weights over the saved features (what the
    SQL orders by, without the result-order rules), or by the hand-set `fused`; None past K."""
    x, y = _arrays(record)
    if weights is None:
        scores = np.array([row[2] for row in record["rows"]], float)
    else:
        scores = x @ np.array([weights.get(name, 0.0) for name in FEATURES])
    order = np.argsort(-scores, kind="stable")[:K]  # ties keep the SQL's order
    hits = np.flatnonzero(y[order])
    return int(hits[0]) + 1 if len(hits) else None


def cells(ranks: Sequence[int | None]) -> str:
    return "/".join(f"{recall(ranks, cut):.3f}" for cut in CUTS)


Ranks = dict[str, "int | None"]
UNSEEN = ("repos2", "repos3", "repos4")


class Online:
    """The learned order as the SQL computes it, with the result-order rules after it and
    without, on the bench indexes (one connection and the questions' vectors per set)."""

    def __init__(self) -> None:
        self.sets = {name: (db, questions) for name, db, questions in evaluated_sets()}
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

    def ranks(self, name: str, ids: set[str], weights: dict[str, float], today: Ranks
              ) -> tuple[Ranks, Ranks]:
        """Question id -> the first relevant rank in the learned top K, without the rules and
        with them; a question the hybrid file does not run keeps today's rank."""
        searcher, vectors = self._searcher(name)
        plain: Ranks = {}
        ruled: Ranks = {}
        with read_transaction(searcher.conn):
            for q in self.sets[name][1]:
                if q.question_id not in ids:
                    continue
                rows = feature_rows(searcher, q.question, vectors.get(q.question), K, weights)
                if rows is None:
                    plain[q.question_id] = ruled[q.question_id] = today[q.question_id]
                    continue
                hits = [Hit.of_row(row[:11]) for row in rows]
                plain[q.question_id] = first_rank(q, hits)
                ruled[q.question_id] = first_rank(q, searcher._by_definitions(q.question, hits))
        return plain, ruled

    def close(self) -> None:
        for rag, _, _ in self._open.values():
            rag.close()


def groups(records: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each left-out set by kind, then pooled: unseen (repos2-4), seen (vLLM, repos), all."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for fold in FOLDS:
        for kind in ("code", "docs"):
            picked = [r for r in records if r["fold"] == fold and r["kind"] == kind]
            if picked:
                out[f"{fold} {kind}"] = picked
    for kind in ("code", "docs"):
        out[f"pooled unseen {kind}"] = [r for r in records if r["kind"] == kind
                                        and r["fold"] in UNSEEN]
        out[f"pooled seen {kind}"] = [r for r in records if r["kind"] == kind
                                      and r["fold"] not in UNSEEN]
        out[f"pooled all {kind}"] = [r for r in records if r["kind"] == kind]
    return out


def table(records: Sequence[dict[str, Any]], columns: dict[str, Ranks]) -> None:
    """R@1/5/10 of each column on each group of `records`."""
    print("| set | n | " + " | ".join(columns) + " |\n|---|---|" + "---|" * len(columns))
    for label, picked in groups(records).items():
        print(f"| {label} | {len(picked)} | " + " | ".join(
            cells([ranks[r["id"]] for r in picked]) for ranks in columns.values()) + " |")


def report(select: bool) -> None:
    data = json.loads(OUT.read_text())
    records: list[dict[str, Any]] = data["records"]
    assert tuple(data["features"]) == FEATURES, "features.json is stale: run `collect` again"
    print(f"{host_line()}\nfeatures collected {data['date']} on {data['host']}; "
          f"{len(records)} questions; learner: listwise softmax, L2 {L2}, at most {STEPS} "
          "Adam steps\n")
    for r in records:
        r["fold"] = fold_of(r["set"], r["kind"])
    today: Ranks = {r["id"]: r["today"] for r in records}
    hand: Ranks = {r["id"]: offline_rank(r, None) if r["rows"] else r["today"]
                   for r in records}
    online = Online()
    try:
        loso(records, today, hand, online)
        halves(records, today, hand, online)
    finally:
        online.close()
    ablation(records, today, hand)
    if select:
        nested(records, today, hand)
    print("\nweights learned on all six sets (features' own units):")
    print(json.dumps({k: round(v, 4) for k, v in learn(records).items()}))


def loso(records: list[dict[str, Any]], today: Ranks, hand: Ranks, online: Online) -> None:
    """Leave one set out: learned on five sets, read on the sixth, code and docs apart."""
    print("leave one set out (learned on the five other sets; the learned order computed by "
          "sql/search_features.sql): R@1/5/10\n")
    plain: Ranks = {}
    ruled: Ranks = {}
    for fold in FOLDS:
        test = [r for r in records if r["fold"] == fold]
        if test:
            weights = learn([r for r in records if r["fold"] != fold])
            got = online.ranks(test[0]["set"], {r["id"] for r in test}, weights, today)
            plain.update(got[0])
            ruled.update(got[1])
    table(records, {"today (hand-set + rules)": today, "hand-set, no rules": hand,
                    "learned": plain, "learned + rules": ruled})


def halves(records: list[dict[str, Any]], today: Ranks, hand: Ranks, online: Online) -> None:
    """Learned on half A of every set, read on half B; then the other way round."""
    print("\nhalves by a hash of the question id (learned on one, read on the other): "
          "R@1/5/10\n")
    print("| read on | kind | n | today | hand-set, no rules | learned | learned + rules |\n"
          "|---|---|---|---|---|---|---|")
    for train, test in (("A", "B"), ("B", "A")):
        weights = learn([r for r in records if r["half"] == train])
        plain: Ranks = {}
        ruled: Ranks = {}
        for name in online.sets:
            ids = {r["id"] for r in records if r["set"] == name and r["half"] == test}
            got = online.ranks(name, ids, weights, today)
            plain.update(got[0])
            ruled.update(got[1])
        for kind in ("code", "docs"):
            picked = [r for r in records if r["half"] == test and r["kind"] == kind]
            print(f"| {test} | {kind} | {len(picked)} | " + " | ".join(
                cells([ranks[r["id"]] for r in picked]) for ranks in (today, hand, plain, ruled))
                  + " |", flush=True)


#: Feature groups left out in turn (ablation) and the learner variants `--select` chooses
#: among: the hand-set knobs each feature stands for.
DROPS: dict[str, tuple[str, ...]] = {
    "all features": (),
    "no margin (lex_margin_rr; margin_cap)": ("lex_margin_rr",),
    "no hand-set gate (code_gate, absent_rr; w_absent, gate_*)": ("code_gate", "absent_rr"),
    "no gate at all (also code_near, code_lead)": (
        "code_gate", "absent_rr", "code_near", "code_lead"),
    "no path prior (prior_path; prior)": ("prior_path",),
    "no repository prior (other_root; root_prior)": ("other_root",),
    "no bridge leg (bridge_rr; w_bridge)": ("bridge_rr",),
    "no symbol leg (symbol_rr, symbol_names; w_symbol)": ("symbol_rr", "symbol_names"),
    "no raw scores (lex_ratio, dense_close, dense_gap)": (
        "lex_ratio", "dense_close", "dense_gap"),
    "no chunk shape (definition, log_chars)": ("definition", "log_chars"),
}


def loso_offline(records: Sequence[dict[str, Any]], features: Sequence[str], l2: float = L2,
                 folds: Sequence[str] = FOLDS) -> Ranks:
    """Leave one set out over the saved features (no result-order rules): id -> rank."""
    out: Ranks = {}
    for fold in folds:
        train = [r for r in records if r["fold"] != fold and r["fold"] in folds]
        weights = learn(train, features, l2)
        out.update({r["id"]: offline_rank(r, weights) if r["rows"] else r["today"]
                    for r in records if r["fold"] == fold})
    return out


def ablation(records: list[dict[str, Any]], today: Ranks, hand: Ranks) -> None:
    """Each feature group left out of the learner in turn (leave one set out, no rules)."""
    print("\neach feature group left out (leave one set out, saved features, no result-order "
          "rules): pooled R@1/5/10\n")
    print("| learner | unseen code | unseen docs | all code | all docs |\n|---|---|---|---|---|")
    unseen = [r for r in records if r["fold"] in UNSEEN]

    def line(label: str, ranks: Ranks) -> None:
        print(f"| {label} | " + " | ".join(
            cells([ranks[r["id"]] for r in group if r["kind"] == kind])
            for group in (unseen, records) for kind in ("code", "docs")) + " |", flush=True)

    line("today (hand-set + rules)", today)
    line("hand-set, no rules", hand)
    for label, dropped in DROPS.items():
        line(label, loso_offline(records, [f for f in FEATURES if f not in dropped]))


#: The variants `--select` chooses among inside each training fold: feature sets x L2.
VARIANTS = [(label, l2)
            for label in ("all features",
                          "no hand-set gate (code_gate, absent_rr; w_absent, gate_*)",
                          "no raw scores (lex_ratio, dense_close, dense_gap)")
            for l2 in (1e-3, 1e-1)]


def selection_score(records: Sequence[dict[str, Any]], ranks: Ranks) -> float:
    """What --select maximises: R@1 + R@5 of code plus R@1 + R@5 of docs, on those records."""
    total = 0.0
    for kind in ("code", "docs"):
        picked = [ranks[r["id"]] for r in records if r["kind"] == kind]
        total += recall(picked, 1) + recall(picked, 5) if picked else 0.0
    return total


def nested(records: list[dict[str, Any]], today: Ranks, hand: Ranks) -> None:
    """The learner variant chosen inside each training fold (leave one set out among the five
    training sets, by _score), then trained on the five and read on the sixth."""
    print("\nthe variant chosen within the training sets (nested leave one set out, no rules):"
          "\n")
    chosen: Ranks = {}
    for fold in FOLDS:
        inner = [f for f in FOLDS if f != fold]
        train = [r for r in records if r["fold"] in inner]
        best = max(VARIANTS, key=lambda v: selection_score(train, loso_offline(
            train, [f for f in FEATURES if f not in DROPS[v[0]]], v[1], inner)))
        print(f"left out {fold}: chose {best[0]}, L2 {best[1]}", flush=True)
        weights = learn(train, [f for f in FEATURES if f not in DROPS[best[0]]], best[1])
        chosen.update({r["id"]: offline_rank(r, weights) if r["rows"] else r["today"]
                       for r in records if r["fold"] == fold})
    print()
    table(records, {"today": today, "hand-set, no rules": hand, "learned, chosen": chosen})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["collect", "report"])
    parser.add_argument("--select", action="store_true",
                        help="report: also choose the learner variant inside each training "
                             "fold (nested; several minutes)")
    args = parser.parse_args()
    if args.action == "collect":
        collect()
    else:
        report(args.select)


if __name__ == "__main__":
    main()
