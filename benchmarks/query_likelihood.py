"""Query likelihood as an answer-bearing signal (issue 19): does log P(question | passage)
under a local model pick the unit that answers better than the extractive selector does?

For each question the extractive selector's candidate units are scored as `ragdb answer`
scores them (hybrid, k = 10, the default settings); its best `--top` showable units are then
scored by a local GGUF model (benchmarks/llm_score.py, teacher forcing) as the log-probability
of the question after "Passage: <unit>\\nPlease write a question based on this
passage.\\nQuestion:" (the unsupervised passage re-ranking prompt of Sachan et al., 2022).
What counts is the reference answer's content words found in the unit put first (content-word
recall, as bench_extractive counts it), by: the selector (today), query likelihood alone,
reciprocal-rank fusion of the two orders, and the selector's score plus half the query
likelihood scaled to [0, 1] over the candidates; "oracle" is the best of the `--top`. The
reference is used only to measure, never to choose.

    uv run --frozen python -m benchmarks.query_likelihood --set tuning --model smol --top 8
    uv run --frozen python -m benchmarks.query_likelihood --set tuning --model writer --top 4
    uv run --frozen python -m benchmarks.query_likelihood --set sample --model smol --top 8

Sets: "tuning" (bench_writer's 65 tuning questions), "sample" (bench_accept's 250 held-out
questions, repos3 included). Needs the bench indexes (`bench_repos --unseen`, `make bench`)
and the writer extra (`make install-writer`: the gguf reader, and the writer's GGUF for
`--model writer`). Results: data/bench/query_likelihood/<set>-<model>-<top>.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_extractive import content_words
from benchmarks.common import BENCH_DIR, host_line

OUT_DIR = BENCH_DIR / "query_likelihood"
PROMPT = "Passage: {passage}\nPlease write a question based on this passage.\nQuestion:"
PASSAGE_CHARS = 1200  # a unit's shown text, cut here (code units may be longer)


def questions(name: str) -> list[tuple[Any, str, Path]]:
    if name == "tuning":
        from benchmarks.bench_writer import tuning

        return tuning()
    from benchmarks.bench_accept import sample

    return sample(True)


def candidates(name: str, top: int) -> list[dict[str, Any]]:
    """Each question's best `top` showable candidate units as the selector scores them."""
    import ragdb.generate.passage_choice as choice
    from ragdb import RagDB
    from ragdb.retrieve import Mode

    captured: list[tuple[Any, Any]] = []
    scores = choice._scores

    def keep(*args: Any) -> Any:  # the selector's own scores, as it computes them
        got = scores(*args)
        captured.append((args[2], got))
        return got

    choice._scores = keep  # type: ignore[assignment]
    out: list[dict[str, Any]] = []
    rags: dict[Path, RagDB] = {}
    try:
        for question, reference, db in questions(name):
            rag = rags.setdefault(db, RagDB(db, use_cache=False))
            captured.clear()
            rag.answer(question.question, 10, Mode.hybrid, style="extractive")
            if not captured:
                continue
            units, score = captured[-1]
            order = sorted((i for i, c in enumerate(units) if c.showable),
                           key=lambda i: -score[i])[:top]
            want = content_words(reference)
            out.append({"id": question.question_id, "set": question.set_name,
                        "kind": question.kind, "question": question.question,
                        "candidates": [{
                            "score": float(score[i]), "source": units[i].source.number,
                            "code": choice.is_code(units[i].source),
                            "shown": units[i].shown[:PASSAGE_CHARS],
                            "recall": (len(want & content_words(units[i].shown)) / len(want)
                                       if want else 0.0)} for i in order]})
    finally:
        choice._scores = scores  # type: ignore[assignment]
        for rag in rags.values():
            rag.close()
    return out


def likelihoods(items: list[dict[str, Any]], model: str) -> float:
    """Adds `ql` (summed log-probability of the question) to every candidate; seconds per
    candidate."""
    from benchmarks.llm_score import GGUFScorer, model_path

    scorer = GGUFScorer(model_path(model))
    started, count = time.perf_counter(), 0
    for item in items:
        asked = scorer.encode(" " + item["question"], add_special_tokens=False)
        for c in item["candidates"]:
            prompt = scorer.encode(PROMPT.format(passage=c["shown"]))
            c["ql"] = float(scorer.token_logprobs(prompt, asked).sum())
            count += 1
    return (time.perf_counter() - started) / max(count, 1)


def firsts(cands: Sequence[dict[str, Any]]) -> dict[str, int]:
    """The candidate each ordering puts first."""
    selector = np.arange(len(cands))
    likely = np.argsort(np.argsort([-c["ql"] for c in cands]))
    ql = np.array([c["ql"] for c in cands])
    score = np.array([c["score"] for c in cands])
    scaled = (ql - ql.min()) / (ql.max() - ql.min() + 1e-9)
    return {"selector": 0, "query likelihood": int(np.argmax(ql)),
            "RRF of both": int(np.argmax(1 / (5 + selector) + 1 / (5 + likely))),
            "score + 0.5 QL": int(np.argmax(score / score.max() + 0.5 * scaled)),
            "oracle": int(np.argmax([c["recall"] for c in cands]))}


def report(items: list[dict[str, Any]]) -> None:
    rows: dict[str, dict[str, list[float]]] = {}
    for item in items:
        cands = item["candidates"]
        if not cands:
            continue
        for label, i in firsts(cands).items():
            for group in ("all", item["kind"]):
                rows.setdefault(label, {}).setdefault(group, []).append(cands[i]["recall"])
    groups = ["all", "docs", "code"]
    print("| first unit by | " + " | ".join(
        f"{g} ({len(rows['selector'].get(g, []))})" for g in groups) + " |")
    print("|---|" + "---|" * len(groups))
    for label, by_group in rows.items():
        print(f"| {label} | " + " | ".join(
            f"{statistics.mean(by_group[g]):.3f}" if by_group.get(g) else "-"
            for g in groups) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=("tuning", "sample"), default="tuning")
    parser.add_argument("--model", default="smol", help="smol, writer or a GGUF path")
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{args.set}-{Path(args.model).stem}-{args.top}.json"
    items = candidates(args.set, args.top)
    seconds = likelihoods(items, args.model)
    path.write_text(json.dumps({"model": args.model, "seconds_per_candidate": seconds,
                                "items": items}, indent=1))
    print(f"{host_line()}\n{args.set}, {len(items)} questions, top {args.top}, model "
          f"{args.model}: {seconds:.2f} s per candidate; wrote {path}\n")
    report(items)


if __name__ == "__main__":
    main()
