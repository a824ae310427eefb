"""Would pseudo-relevance feedback (RM3-style query expansion) lift plain-words code questions?
Issue 18's weak spot (README, "Ninth round", "Thirteenth round"), a probe over the tuning pool.

The misses left are plain-words code questions: the question's words are not the words of the
code that answers it. The bridge leg (README, "third round") takes identifiers from the best doc
passages of a first run; relevance feedback generalises it: the most informative terms of the
first run's best results, of any kind, are added to the question and searched again. Measured
here without changing ragdb, on the bench indexes as built:

1. today's search (hybrid, default SearchParams), k = 10;
2. the first run's best `n` results (N = 3, "top3", or 5, "top5"; or only its best three code
   chunks among the first 10, "code3") give their terms a relevance-model weight: the sum over
   those chunks of the chunk's share of their fused scores times the term's frequency in the
   chunk over its length, times the term's IDF in the index (log N / df, FTS5's vocabulary of
   stems). Left out: the question's own stems, stopwords, pure numbers, one- and two-letter
   terms, the index's common terms (in over half of the chunks, as Searcher._informative) and
   terms in one chunk only (they can only find the chunk they came from). The best `m` (10,
   20) join the question's informative terms in one FTS5 query, ranked by
   sql/search_lexical.sql with today's column weights and priors, 50 deep. "none m0" is the
   control: the question's own terms alone in that second run, so what a fusion does by itself
   is told apart from what the feedback terms add;
3. the second run joins today's ranking by RRF (c = 10): each chunk scores 1 / (c + its rank
   today) (the k = 10 list first, then a k = 50 run's other chunks, so weight 0 is today's
   search) plus w / (c + its rank in the second run). "all" fuses every chunk of the second
   run (w 0.3, 0.5); "code" only its code chunks, ranked among themselves as the bridge leg
   ranks code (w 0.3, 0.5); "slots" keeps every doc hit of today's top 10 in its place and
   refills the code places with code chunks ranked by today's code order and the second run's
   (w 0.3, 0.5, 1), so docs recall cannot move and only the order within code is measured.

Printed: recall as the graders count it (same file, IoU > 0.05) per set and kind, the repos code
questions per difficulty, the questions that move in or out at rank 1 and the top 5, a verdict
under the ninth round's rule (pooled code, repos half A and repos2, 50 questions: R@1 or R@5 up
by two questions or more and neither down; docs R@5 of half A and of repos2 no lower; vLLM
public docs and code R@5 no lower, docs >= 0.94 and code >= 0.889), and the second run alone
within code (does the expansion find the right code chunk at all). Only the tuning pool is
run: repos half A, repos2, vLLM public; half B and repos3 (the report sets) never.

    uv run --frozen python -m benchmarks.prf_probe
    uv run --frozen python -m benchmarks.prf_probe --diff "top3 m20 code w0.3"  # who moves
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field

from benchmarks.bench_repos import DIFFICULTIES, KINDS, Question, first_rank, recall
from benchmarks.common import host_line
from benchmarks.tune_pool import ReusedVectors, tuning_sets
from ragdb import RagDB
from ragdb.retrieve import Hit, Mode
from ragdb.tokenize import STOPWORDS, analyse_terms, fts_query, query_terms
from ragdb.vectors import DOC_KINDS

K = 10
DEEP = 50  # today's ranking below the first K, and the expanded run's depth
RRF_C = 10.0
#: Feedback: (label, how many chunks, code chunks only), then term counts, fusion and weights.
#: "none": the control, the question's own terms alone in the second run (no feedback), so
#: what a fusion does by itself is told apart from what the expansion terms add.
SOURCES: tuple[tuple[str, int, bool], ...] = (
    ("none", 0, False), ("top3", 3, False), ("top5", 5, False), ("code3", 3, True))
TERMS = (10, 20)
#: How the second run joins today's ranking, and at which weights (module docstring).
FUSIONS: tuple[tuple[str, tuple[float, ...]], ...] = (
    ("all", (0.3, 0.5)), ("code", (0.3, 0.5)), ("slots", (0.3, 0.5, 1.0)))


def _is_code(hit: Hit) -> bool:
    return hit.language not in DOC_KINDS


def _slot(hit: Hit) -> tuple[int, int, frozenset[str]]:
    """One result slot: identical files share it (as the search's own duplicates rule)."""
    return hit.first, hit.last, frozenset((hit.file_path, *hit.duplicates))


@dataclass
class Pool:
    """One tuning set on its rag.db, with today's ranking of each question."""

    name: str
    questions: list[Question]
    searcher: ReusedVectors
    today: list[list[Hit]] = field(default_factory=list)  # the k = 10 list, then to DEEP
    _df: dict[str, int] = field(default_factory=dict)
    _stem: dict[str, str | None] = field(default_factory=dict)
    chunks: int = 0

    def prepare(self) -> None:
        texts = [q.question for q in self.questions]
        first = self.searcher.search_many(texts, K, Mode.hybrid)
        deep = self.searcher.search_many(texts, DEEP, Mode.hybrid)
        for top, more in zip(first, deep):
            seen = {_slot(h) for h in top}
            self.today.append(list(top) + [h for h in more if _slot(h) not in seen])
        rows = self.searcher.conn.execute("SELECT count(*) FROM chunks").fetchall()
        self.chunks = int(str(rows[0][0]))

    def stem(self, term: str) -> str | None:
        """FTS5's one stem of a query term (None: not one token)."""
        if term not in self._stem:
            stems = self.searcher._stems(term)
            self._stem[term] = stems[0] if len(stems) == 1 else None
        return self._stem[term]

    def df(self, stem: str) -> int:
        if stem not in self._df:
            rows = self.searcher.conn.execute(
                "SELECT doc FROM chunks_fts_vocab WHERE term = ?", (stem,)).fetchall()
            self._df[stem] = int(str(rows[0][0])) if rows else 0
        return self._df[stem]

    def expansion(self, question: str, hits: Sequence[Hit], m: int) -> list[str]:
        """The `m` terms of `hits` with the highest relevance-model weight (module docstring),
        each as the surface form the chunks write most often (FTS5 stems it back)."""
        own = {s for t in query_terms(question) if (s := self.stem(t)) is not None}
        total = sum(max(h.score, 0.0) for h in hits) or 1.0
        weight: dict[str, float] = {}
        surface: dict[str, Counter[str]] = {}
        for hit in hits:
            terms = analyse_terms(hit.text)
            if not terms:
                continue
            share = max(hit.score, 0.0) / total / len(terms)
            for term, tf in Counter(terms).items():
                if len(term) < 3 or term.isdigit() or term in STOPWORDS:
                    continue
                stem = self.stem(term)
                if stem is None or stem in own or stem in self.searcher._common:
                    continue
                weight[stem] = weight.get(stem, 0.0) + share * tf
                surface.setdefault(stem, Counter())[term] += tf
        scored = []
        for stem, w in weight.items():
            df = self.df(stem)
            if df >= 2:
                scored.append((w * math.log(self.chunks / df), stem))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [surface[stem].most_common(1)[0][0] for _, stem in scored[:m]]

    def expanded_run(self, question: str, extra: Sequence[str]) -> list[Hit]:
        """The question's informative terms and `extra` as one FTS5 query, ranked by
        sql/search_lexical.sql with today's weights and priors, DEEP deep."""
        planned = self.searcher.plan(question, DEEP, Mode.lexical, None)
        if planned is None:
            return []
        statement, params = planned
        terms = list(dict.fromkeys([*params["terms"], *extra]))
        params = {**params, "match": fts_query(terms), "terms": terms}
        return self.searcher._rows(statement, params)


def fused(today: Sequence[Hit], expanded: Sequence[Hit], w: float, code_only: bool
          ) -> list[Hit]:
    """Today's ranking and the expanded run's by RRF (c = RRF_C, the expanded run at `w`),
    cut to K; `code_only`: only the expanded run's code chunks, ranked among themselves."""
    score: dict[tuple[int, int, frozenset[str]], float] = {}
    hit_of: dict[tuple[int, int, frozenset[str]], Hit] = {}
    order: dict[tuple[int, int, frozenset[str]], int] = {}
    for rank, hit in enumerate(today, 1):
        key = _slot(hit)
        score[key] = 1 / (RRF_C + rank)
        hit_of[key], order[key] = hit, rank
    picked = [h for h in expanded if _is_code(h)] if code_only else list(expanded)
    for rank, hit in enumerate(picked, 1):
        key = _slot(hit)
        score[key] = score.get(key, 0.0) + w / (RRF_C + rank)
        hit_of.setdefault(key, hit)
        order.setdefault(key, len(today) + rank)
    ranked = sorted(score, key=lambda key: (-score[key], order[key]))
    return [hit_of[key] for key in ranked[:K]]


def slotted(today: Sequence[Hit], expanded: Sequence[Hit], w: float) -> list[Hit]:
    """Today's first K with every doc hit kept in its place and the code places refilled, in
    order, by code chunks ranked by RRF of their rank among today's code chunks and (at `w`)
    among the expanded run's: docs recall cannot change, only which code fills code places."""
    score: dict[tuple[int, int, frozenset[str]], float] = {}
    hit_of: dict[tuple[int, int, frozenset[str]], Hit] = {}
    order: dict[tuple[int, int, frozenset[str]], int] = {}
    for rank, hit in enumerate((h for h in today if _is_code(h)), 1):
        key = _slot(hit)
        score[key] = 1 / (RRF_C + rank)
        hit_of[key], order[key] = hit, rank
    for rank, hit in enumerate((h for h in expanded if _is_code(h)), 1):
        key = _slot(hit)
        score[key] = score.get(key, 0.0) + w / (RRF_C + rank)
        hit_of.setdefault(key, hit)
        order.setdefault(key, len(today) + rank)
    code = iter(hit_of[key] for key in sorted(score, key=lambda key: (-score[key], order[key])))
    return [next(code) if _is_code(hit) else hit for hit in today[:K]]


@dataclass
class Variant:
    label: str
    ranks: dict[str, list[int | None]]  # per pool name, in question order


def _cell(ranks: Sequence[int | None]) -> str:
    return "/".join(f"{recall(ranks, c):.3f}" for c in (1, 5, 10))


def _count(ranks: Sequence[int | None], cut: int) -> int:
    return sum(1 for r in ranks if r is not None and r <= cut)


def _select(pools: Sequence[Pool], v: Variant, names: Sequence[str], kind: str,
            difficulty: str = "") -> list[int | None]:
    return [r for p in pools if p.name in names for q, r in zip(p.questions, v.ranks[p.name])
            if q.kind == kind and (not difficulty or q.difficulty == difficulty)]


REPOS_SETS = ("reposA", "repos2")


def verdict(pools: Sequence[Pool], base: Variant, v: Variant) -> str:
    """The ninth round's rule (module docstring), strictly."""
    if v is base:
        return ""
    code_b, code_v = (_select(pools, x, REPOS_SETS, "code") for x in (base, v))
    gain = max(_count(code_v, 1) - _count(code_b, 1), _count(code_v, 5) - _count(code_b, 5))
    loss = _count(code_v, 1) < _count(code_b, 1) or _count(code_v, 5) < _count(code_b, 5)
    docs = all(_count(_select(pools, v, (n,), "docs"), 5)
               >= _count(_select(pools, base, (n,), "docs"), 5) for n in ("reposA", "repos2"))
    vllm = all(_count(_select(pools, v, ("vllm",), k), 5)
               >= _count(_select(pools, base, ("vllm",), k), 5) for k in KINDS)
    floors = (recall(_select(pools, v, ("vllm",), "docs"), 5) >= 0.94
              and recall(_select(pools, v, ("vllm",), "code"), 5) >= 0.889)
    ok = gain >= 2 and not loss and docs and vllm and floors
    why = [w for w, bad in (("code +<2", gain < 2), ("code loss", loss), ("docs R@5", not docs),
                            ("vLLM R@5", not vllm or not floors)) if bad]
    return "passes" if ok else "no: " + ", ".join(why)


def moves(pools: Sequence[Pool], base: Variant, v: Variant, names: Sequence[str], kind: str,
          cut: int) -> str:
    up = down = 0
    for p in pools:
        if p.name not in names:
            continue
        for q, before, after in zip(p.questions, base.ranks[p.name], v.ranks[p.name]):
            if q.kind != kind:
                continue
            was = before is not None and before <= cut
            now = after is not None and after <= cut
            up += now and not was
            down += was and not now
    return f"+{up}/-{down}"


def report(pools: Sequence[Pool], variants: Sequence[Variant]) -> None:
    base = variants[0]
    print("\nhybrid, k = 10; R@1/5/10 (questions in the top 5); tuning pool only\n")
    print("| variant | reposA docs (20) | reposA code (20) | repos2 docs (30) | repos2 code (30) "
          "| vLLM docs (100) | vLLM code (99) | pooled code A+repos2 (50) | verdict |")
    print("|" + "---|" * 10)
    for v in variants:
        cells = []
        for name in ("reposA", "repos2", "vllm"):
            for kind in KINDS:
                ranks = _select(pools, v, (name,), kind)
                cells.append(f"{_cell(ranks)} ({_count(ranks, 5)})")
        pooled = _select(pools, v, REPOS_SETS, "code")
        cells.append(f"{_cell(pooled)} ({_count(pooled, 1)}, {_count(pooled, 5)})")
        print(f"| {v.label} | " + " | ".join(cells) + f" | {verdict(pools, base, v)} |")
    print("\nrepos code (half A + repos2) by difficulty, R@1/5/10; and who moves against "
          "today (+in/-out at rank 1 and in the top 5)\n")
    sizes = [len(_select(pools, base, REPOS_SETS, "code", d)) for d in DIFFICULTIES]
    print("| variant | " + " | ".join(f"{d} ({n})" for d, n in zip(DIFFICULTIES, sizes))
          + " | repos code @1, @5 | repos docs @1, @5 | vLLM code @1, @5 | vLLM docs @1, @5 |")
    print("|" + "---|" * 8)
    for v in variants:
        cells = [_cell(_select(pools, v, REPOS_SETS, "code", d)) for d in DIFFICULTIES]
        for names, kind in ((REPOS_SETS, "code"), (REPOS_SETS, "docs"), (("vllm",), "code"),
                            (("vllm",), "docs")):
            cells.append(", ".join(moves(pools, base, v, names, kind, c) for c in (1, 5)))
        print(f"| {v.label} | " + " | ".join(cells) + " |")


def within_code(pools: Sequence[Pool],
                runs: dict[str, tuple[dict[str, list[list[Hit]]], float]]) -> None:
    """The second run alone, its code chunks only, for the repos code questions: does the
    expansion find the right code chunk at all (R@1/5/10 and anywhere in its DEEP)?"""
    total = sum(len(p.questions) for p in pools)
    print(f"\nsecond run alone, code chunks only (within code), repos code questions "
          f"(half A + repos2), R@1/5/10/{DEEP}; and its time for all {total} questions "
          "(feedback terms and the FTS5 run)\n")
    print("| second run | " + " | ".join(DIFFICULTIES) + " | all code (50) | seconds |")
    print("|" + "---|" * 6)
    for label, (found, took) in runs.items():
        ranks: dict[str, list[int | None]] = {d: [] for d in (*DIFFICULTIES, "")}
        for p in pools:
            if p.name not in REPOS_SETS:
                continue
            for q, hits in zip(p.questions, found[p.name]):
                if q.kind == "code":
                    r = first_rank(q, [h for h in hits if _is_code(h)])
                    ranks[q.difficulty].append(r)
                    ranks[""].append(r)
        cells = [_cell(ranks[d]) + f"/{recall(ranks[d], DEEP):.3f}" for d in (*DIFFICULTIES, "")]
        print(f"| {label} | " + " | ".join(cells) + f" | {took:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--diff", action="append", default=[],
                        help="a variant's label: list each question whose rank moves, with "
                             "its expansion terms (repeatable)")
    args = parser.parse_args()
    started = time.perf_counter()
    print(host_line())
    with ExitStack() as stack:
        pools = [Pool(name, questions, ReusedVectors(
                      stack.enter_context(RagDB(db, use_cache=False)).conn, use_cache=False))
                 for name, questions, db in tuning_sets()]
        for pool in pools:
            pool.prepare()
        variants = [Variant("today (defaults)", {
            p.name: [first_rank(q, h[:K]) for q, h in zip(p.questions, p.today)]
            for p in pools})]
        terms_of: dict[str, dict[tuple[str, str], list[str]]] = {}
        seconds: dict[str, tuple[dict[str, list[list[Hit]]], float]] = {}
        for source, n, code in SOURCES:
            for m in TERMS if n else (0,):
                runs: dict[str, list[list[Hit]]] = {}
                clock = time.perf_counter()
                for p in pools:
                    runs[p.name] = []
                    for q, today in zip(p.questions, p.today):
                        first = [h for h in today[:K] if _is_code(h)] if code else today
                        extra = p.expansion(q.question, first[:n], m) if n else []
                        terms_of.setdefault(f"{source} m{m}", {})[p.name, q.question_id] = extra
                        runs[p.name].append(p.expanded_run(q.question, extra))
                seconds[f"{source} m{m}"] = runs, time.perf_counter() - clock
                for fusion, weights in FUSIONS:
                    for w in weights:
                        ranks = {p.name: [first_rank(q, slotted(t, e, w) if fusion == "slots"
                                                     else fused(t, e, w, fusion == "code"))
                                          for q, t, e in zip(p.questions, p.today,
                                                             runs[p.name])]
                                 for p in pools}
                        variants.append(Variant(f"{source} m{m} {fusion} w{w}", ranks))
        report(pools, variants)
        within_code(pools, seconds)
        for label in args.diff:
            picked = next((v for v in variants if v.label == label), None)
            if picked is None:
                print(f"\nno variant {label!r}")
                continue
            terms = terms_of[label.rsplit(" ", 2)[0]]
            print(f"\n{label}: questions whose rank moves (today -> with it)\n")
            for p in pools:
                for q, before, after in zip(p.questions, variants[0].ranks[p.name],
                                            picked.ranks[p.name]):
                    if before != after:
                        print(f"    {p.name} {q.set_name} {q.kind}/{q.difficulty}: "
                              f"{before or '-'} -> {after or '-'}: {q.question[:90]!r}; "
                              f"terms {' '.join(terms[p.name, q.question_id][:10])}")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
