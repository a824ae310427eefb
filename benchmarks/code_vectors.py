"""Would vectors of code chunks lift code questions? Issue 18's tenth round (README).

For each repository set (the bench indexes as `bench_repos --unseen` built them) every code
chunk is embedded once (cached under data/bench/code_vectors/) as its signatures and doc
comments ("sig", vectors.code_summary) or its code ("full", vectors.embedding_text), by the
default embedder or a model folder (`--model`, e.g. the nomic-embed folder of
benchmarks/build_nomic.py, with its query and document prefixes). Each question then gets:

* **dense only**: the code chunks ranked by cosine alone (what the vectors find);
* **fused**: today's hybrid ranking (k = 50, every rule on) with each code chunk adding
  `w / (c + its rank among the code chunks by cosine)`, times a gate when asked: `--gated`
  uses today's code gate (sql/search_hybrid.sql), `--sim-gate LO:HI` a ramp on the best code
  chunk's cosine minus the nearest doc window's (1 - its distance);
* **code places only** (`--slots`): every doc hit of today's top 10 kept in its place and the
  code places refilled, code ranked among itself by today's order and the cosine (RRF).

This is a measurement of the signal, in Python over the SQL's results, not a ranking rule:
the order of today's results is kept where the added terms tie. Recall as the graders count
it (same file, IoU > 0.05), per set, difficulty and half.

    uv run --frozen python -m benchmarks.code_vectors --style sig --tokens 128 --docs-too
    uv run --frozen python -m benchmarks.code_vectors --model data/models/nomic-build/\
nomic-embed-text-v1.5-ov --style full --tokens 256 --docs-too
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_repos import (REPOS2, REPOS3, REPOS_DB, Question, cell, first_rank,
                                    repo_questions)
from benchmarks.common import BENCH_DIR, host_line
from ragdb import RagDB
from ragdb.embedder import Embedder, load_embedder
from ragdb.resources import sql
from ragdb.retrieve import Hit, Mode, Searcher, SearchParams
from ragdb.vectors import code_summary, embedding_text

CACHE = BENCH_DIR / "code_vectors"
SETS = {"repos": REPOS_DB, "repos2": REPOS2.db, "repos3": REPOS3.db}
CODE_ROWS = ("SELECT c.id, f.path, f.kind, c.context, c.text, c.first_char, c.last_char "
             "FROM chunks AS c JOIN files AS f ON f.id = c.file_id "
             "WHERE f.kind NOT IN ('markdown', 'rst', 'text') ORDER BY c.id")
Row = tuple[int, str, str, str, str, int, int]


def questions(name: str) -> list[Question]:
    if name == "repos":
        return repo_questions()
    held = REPOS2 if name == "repos2" else REPOS3
    return repo_questions(held.folder, held.names)


def code_vectors(rag: RagDB, name: str, embedder: Embedder, model: str, style: str,
                 tokens: int) -> tuple[list[Row], np.ndarray]:
    """Every code chunk of the index and its unit vector, embedded once per settings."""
    rows: list[Row] = [tuple(r) for r in rag.conn.execute(CODE_ROWS)]  # type: ignore[misc]
    ids = np.array([r[0] for r in rows])
    path = CACHE / f"{name}-{Path(model).name or 'default'}-{style}-{tokens}.npz"
    if path.exists():
        cached = np.load(path)
        if len(cached["ids"]) == len(ids) and (cached["ids"] == ids).all():
            return rows, cached["vecs"]
    if style == "sig":
        texts = [code_summary(p, context, text) for _, p, _, context, text, _, _ in rows]
    else:
        texts = [embedding_text(p, "python" if kind == "python" else "function", context, text)
                 for _, p, kind, context, text, _, _ in rows]
    started = time.perf_counter()
    vecs = embedder.embed(texts, max_length=tokens, batch_size=16)
    print(f"{name}: {len(texts)} code chunks embedded in {time.perf_counter() - started:.0f} s",
          file=sys.stderr, flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, ids=ids, vecs=vecs)
    return rows, vecs


def gates(rag: RagDB, searcher: Searcher, texts: Sequence[str]
          ) -> list[tuple[float, float | None]]:
    """Per question: today's code gate and the nearest doc window's distance, from the CTEs of
    sql/search_hybrid.sql as they are (the statement cut before its fusion)."""
    text = str(sql("search_hybrid"))
    statement = (text[: text.index(",\njoined AS (")]
                 + "\nSELECT code, (SELECT min(distance) FROM dense) FROM gate")
    names = set(re.findall(r":(\w+)", statement))
    vectors = searcher._query_vectors(list(texts), Mode.hybrid)
    out: list[tuple[float, float | None]] = []
    for question in texts:
        planned = searcher.plan(question, 50, Mode.hybrid, vectors.get(question))
        if planned is None or planned[0] != "search_hybrid":
            out.append((1.0, None))
            continue
        params = {k: planned[1].get(k) for k in names}
        row = list(rag.conn.execute(statement, params))
        gate = float(row[0][0]) if row and row[0][0] is not None else 0.0
        out.append((gate, row[0][1] if row else None))
    return out


def fused(hits: Sequence[Hit], code_rank: dict[int, int], weight: float, c: float,
          gate: float, hit_of: Callable[[int], Hit]) -> list[Hit]:
    """Today's top 10 with the code term added; today's order kept where scores tie (its
    Python-side re-orderings leave scores out of order, so each is floored by the one above)."""
    score: dict[int, float] = {}
    floor = float("inf")
    for hit in hits:
        floor = min(floor, hit.score)
        score[hit.chunk_id] = floor
    position = {hit.chunk_id: i for i, hit in enumerate(hits)}
    for chunk_id, rank in code_rank.items():
        score[chunk_id] = score.get(chunk_id, 0.0) + gate * weight / (c + rank)
    top = sorted(score, key=lambda cid: (-score[cid], position.get(cid, 99)))[:10]
    by_id = {hit.chunk_id: hit for hit in hits}
    return [by_id.get(cid) or hit_of(cid) for cid in top]


def slotted(hits: Sequence[Hit], code_rank: dict[int, int], weight: float, c: float,
            is_code: Callable[[int], bool], hit_of: Callable[[int], Hit]) -> list[Hit]:
    """Today's top 10 with every doc hit where it is and the code places refilled: code chunks
    ranked among themselves by `1 / (c + today's rank among the code hits) + weight / (c + rank
    by cosine)`. Docs recall is today's by construction; only which code fills the code places
    changes."""
    top = list(hits[:10])
    today = [h.chunk_id for h in hits if is_code(h.chunk_id)]
    score: dict[int, float] = {}
    for rank, chunk_id in enumerate(today, 1):
        score[chunk_id] = 1.0 / (c + rank)
    for chunk_id, rank in code_rank.items():
        score[chunk_id] = score.get(chunk_id, 0.0) + weight / (c + rank)
    place = {cid: n for n, cid in enumerate(today)}
    fill = iter(sorted(score, key=lambda cid: (-score[cid], place.get(cid, 99))))
    by_id = {hit.chunk_id: hit for hit in hits}
    out = []
    for hit in top:
        if is_code(hit.chunk_id):
            chunk_id = next(fill)
            hit = by_id.get(chunk_id) or hit_of(chunk_id)
        out.append(hit)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="", help="a model folder (default: the default)")
    parser.add_argument("--style", default="sig", choices=("sig", "full"))
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--sets", default="repos,repos2,repos3")
    parser.add_argument("--w", default="0,0.4,0.6,1.0", help="weights of the code term")
    parser.add_argument("--c", type=float, default=10.0)
    parser.add_argument("--docs-too", action="store_true", help="also the docs questions")
    parser.add_argument("--gated", action="store_true", help="the code term times a gate")
    parser.add_argument("--sim-gate", default="", help="LO:HI: gate on code minus doc cosine")
    parser.add_argument("--slots", action="store_true", help="keep every doc hit in its place "
                        "and re-rank only the code places (RRF of today's code order and cosine)")
    args = parser.parse_args()
    embedder = load_embedder(args.model or None)
    weights = [float(w) for w in args.w.split(",")]
    names = args.sets.split(",")
    kinds = ("code", "docs") if args.docs_too else ("code",)
    results: list[tuple[str, Question, int | None, list[int | None]]] = []
    for name in names:
        with RagDB(SETS[name], use_cache=False) as rag:
            rows, vecs = code_vectors(rag, name, embedder, args.model, args.style, args.tokens)
            by_id = {r[0]: r for r in rows}
            asked = [q for q in questions(name) if q.kind in kinds]
            searcher = Searcher(rag.conn, SearchParams(), use_cache=False)
            found = searcher.search_many([q.question for q in asked], 50, Mode.hybrid)
            gated = gates(rag, searcher, [q.question for q in asked])
            query_vecs = embedder.embed_queries([q.question for q in asked])

            def hit_of(chunk_id: int) -> Hit:
                _, path, kind, _, text, first, last = by_id[chunk_id]
                return Hit(chunk_id, path, first, last, 0, 0, kind, 0.0, text)

            for q, hits, (gate, near), vector in zip(asked, found, gated, query_vecs):
                sims = vecs @ vector
                order = np.argsort(-sims)[:50]
                code_rank = {int(rows[i][0]): r for r, i in enumerate(order, 1)}
                if args.sim_gate:
                    low, high = (float(x) for x in args.sim_gate.split(":"))
                    diff = float(sims.max()) - (1.0 - near if near is not None else 0.0)
                    gate = 1.0 if high <= low else min(1.0, max(0.0, (diff - low) / (high - low)))
                elif not args.gated:
                    gate = 1.0
                dense = first_rank(q, [hit_of(int(rows[i][0])) for i in order[:10]])
                if args.slots:
                    ranks = [first_rank(q, slotted(hits, code_rank, w, args.c,
                                                   lambda cid: cid in by_id, hit_of))
                             for w in weights]
                else:
                    ranks = [first_rank(q, fused(hits, code_rank, w, args.c, gate, hit_of))
                             for w in weights]
                results.append((name, q, dense, ranks))
    print(host_line())
    print(f"model {args.model or 'default'}, {args.style}, {args.tokens} tokens, c {args.c}, "
          f"gate {'sim ' + args.sim_gate if args.sim_gate else 'today' if args.gated else 'none'}"
          f"{', code places only' if args.slots else ''}")
    groups: list[tuple[str, Callable[[str, Question], bool]]] = [("all", lambda s, q: True)]
    groups += [(n, lambda s, q, n=n: s == n) for n in names]  # type: ignore[misc]
    groups += [(d, lambda s, q, d=d: q.difficulty == d)  # type: ignore[misc]
               for d in ("identifier", "paraphrase", "conceptual")]
    groups += [(f"half {h}", lambda s, q, h=h: q.half == h) for h in "AB"]  # type: ignore[misc]
    for kind in kinds:
        print(f"\n{kind}\n\n| group | n | dense only | "
              + " | ".join(f"w = {w}" for w in weights) + " |")
        print("|---|---|---|" + "---|" * len(weights))
        for label, keep in groups:
            picked = [r for r in results if r[1].kind == kind and keep(r[0], r[1])]
            if picked:
                cells: list[Any] = [cell([r[2] for r in picked])]
                cells += [cell([r[3][i] for r in picked]) for i in range(len(weights))]
                print(f"| {label} | {len(picked)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
