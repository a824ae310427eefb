"""Can a model choose the first block? (issue 39; ragdb/generate/choosing.py)

Measured mechanically, no readers: whether the first block shown overlaps the reference span
(as `bench_blocks cover` measures "shown lines overlap the reference"), today's rule
(blocks.first_choice) against the block of the candidate the model chooses.

    uv run --frozen python -m benchmarks.bench_choose collect [--sets vllm,repos,...]
    nice -n 5 uv run --frozen python -m benchmarks.bench_choose run --half A \
        [--wording last] [--order today] [--all]
    uv run --frozen python -m benchmarks.bench_choose report

`collect` searches each question once (hybrid, k 10) and saves, per question, today's choice
and the top N candidates' blocks (each cut as the first slot would cut it) with whether each
overlaps the reference: data/bench/choose/candidates.json (and hits.json, all but the
cards' lines: what `report` reads, tracked). No model.

`run` asks the offline writer (Qwen2.5-Coder-1.5B) to choose on one half
(bench_rerank_quality.half, a hash of the question id: the halves of every issue-40
benchmark), saving choices_WORDING_ORDER_HALF.json. Only the questions where the candidates
differ (some block overlaps the reference and some does not) can change the measure; the
others are not asked unless `--all` (their figure is today's whatever the model says).

`report` prints, per half and kind, first blocks holding the reference: today / the model's,
and the changed choices (better / worse).

The questions: vLLM public (199, data/bench/rag.db), the repos set's half B (its half A
chose the blocks' rules), repos2, repos3, repos4 and repos5, where their indexes are built.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.bench_blocks import _reference_lines
from benchmarks.bench_rerank_quality import half
from benchmarks.common import BENCH_DIR, Question, evaluated_sets, host_line
from ragdb import RagDB
from ragdb.generate.blocks import (MAX_LINES, Block, BlocksAnswerer, _Candidate, first_choice,
                                   question_terms)
from ragdb.generate.choosing import (CARD_CHARS, N_CANDIDATES, ORDER, ORDERS, WORDING,
                                     WORDINGS, ModelChooser)
from ragdb.generate.prompt import prompt_source
from ragdb.retrieve import Mode
from ragdb.source_files import SourceFiles

OUT = BENCH_DIR / "choose"
SETS = ("vllm", "repos", "repos2", "repos3", "repos4", "repos5")
#: Lines of each candidate's block kept in candidates.json: more than any card shows.
KEEP_LINES = 40


def pool(sets: Sequence[str]) -> list[tuple[str, Path, Question]]:
    """(set, index, question) of every set named whose index is built; the repos set's half
    B only."""
    out = []
    for name, db, questions in evaluated_sets(sets):
        for q in questions:
            if name == "repos" and q.half != "B":
                continue
            out.append((name, db, q))
    return out


def block_json(block: Block, hit: bool) -> dict[str, Any]:
    return {"n": block.number, "path": block.path, "start": block.start_line,
            "end": block.end_line, "label": block.label, "language": block.language,
            "code": block.code, "heads": block.heads, "lines": block.lines[:KEEP_LINES],
            "hit": hit}


def as_block(row: dict[str, Any]) -> Block:
    return Block(row["n"], row["path"], row["start"], row["end"], row["lines"],
                 row["language"], row["code"], [tuple(h) for h in row["heads"]], row["label"])


def collect(sets: Sequence[str], k: int, out: Path) -> None:
    """Today's choice and the top N candidates' blocks of every question, with whether each
    overlaps the reference."""
    rows = []
    rags: dict[Path, RagDB] = {}
    started = time.perf_counter()
    for number, (name, db, q) in enumerate(pool(sets), 1):
        rag = rags.setdefault(db, RagDB(db, use_cache=False))
        hits = rag.search(q.question, k, Mode.hybrid)
        files = SourceFiles(rag.conn)
        answerer = BlocksAnswerer(files, files.included)
        candidates = []
        for n, hit in enumerate(hits, 1):
            source = prompt_source(hit)
            located = files(source)
            if not located.stale:
                candidates.append(_Candidate(n, source, located))
        reference = _reference_lines(q)
        row: dict[str, Any] = {"id": q.question_id, "set": name, "kind": q.kind,
                               "half": half(q), "question": q.question, "today": None,
                               "blocks": []}
        if candidates:
            row["today"] = first_choice(q.question, candidates)[0].number
            terms = question_terms(q.question)
            top = candidates[:N_CANDIDATES]
            if all(c.number != row["today"] for c in top):
                top = top[:-1] + [c for c in candidates if c.number == row["today"]]
            for cand in top:
                block = answerer.block(cand, terms, MAX_LINES)
                hit_ = any(p == block.path and ra <= block.end_line and block.start_line <= rb
                           for p, ra, rb in reference)
                row["blocks"].append(block_json(block, hit_))
        rows.append(row)
        if number % 50 == 0:
            print(f"{number} questions, {time.perf_counter() - started:.0f} s", flush=True)
    for rag in rags.values():
        rag.close()
    out.mkdir(parents=True, exist_ok=True)
    (out / "candidates.json").write_text(json.dumps(rows, indent=1))
    (out / "hits.json").write_text(json.dumps(compact(rows), indent=0))
    print(f"wrote {out}/candidates.json, {out}/hits.json: {len(rows)} questions")


def compact(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What `report` reads of candidates.json (tracked; the cards' lines are not): each
    question's set, kind, half, today's choice and each candidate's rank, path, lines, kind
    and whether it overlaps the reference."""
    keep = ("n", "path", "start", "end", "code", "hit")
    return [{**{k: v for k, v in row.items() if k != "blocks"},
             "blocks": [{k: b[k] for k in keep} for b in row["blocks"]]} for row in rows]


def decisive(row: dict[str, Any]) -> bool:
    """Whether the choice can change the measure: some candidate's block overlaps the
    reference and some does not."""
    hits = [b["hit"] for b in row["blocks"]]
    return any(hits) and not all(hits)


def run(which: str, wording: str, order: str, everyone: bool, out: Path) -> None:
    """The writer's choice on one half's questions (the decisive ones unless `everyone`)."""
    from ragdb.generate.generator import Generator
    from ragdb.generate.models import resolve_model
    from ragdb.resources import models_dir

    rows = [r for r in json.loads((out / "candidates.json").read_text())
            if r["half"] == which and (everyone or decisive(r))]
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"{len(rows)} questions of half {which}; {uptime}", flush=True)
    started = time.perf_counter()
    generator = Generator(resolve_model("writer", models_dir(), warn=print), time_limit_s=None)
    load_s = time.perf_counter() - started
    print(f"model load {load_s:.1f} s", flush=True)
    chooser = ModelChooser(generator.complete, wording=wording, order=order)
    choices = []
    for number, row in enumerate(rows, 1):
        blocks = [as_block(b) for b in row["blocks"]]
        choice = chooser.choose(row["question"], blocks, row["today"])
        tokens = generator.count_tokens(generator.render(
            chooser.messages(row["question"], blocks, row["today"])))
        choices.append({"id": row["id"], **choice.as_json(), "prompt_tokens": tokens})
        print(f"{number:3d}/{len(rows)} {row['set']:7s} {row['kind']:4s} today {row['today']} "
              f"model {choice.rank} {choice.seconds:.1f} s {tokens} tokens "
              f"{choice.why}", flush=True)
    uptime_after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    path = out / f"choices_{wording}_{order}_{which}{'_all' if everyone else ''}.json"
    path.write_text(json.dumps({"half": which, "wording": wording, "order": order,
                                "chars": CARD_CHARS, "n": N_CANDIDATES,
                                "load_s": round(load_s, 2), "uptime_before": uptime,
                                "uptime_after": uptime_after, "host": host_line(),
                                "choices": choices}, indent=1))
    seconds = [c["seconds"] for c in choices]
    if seconds:
        print(f"s per choice p50 {statistics.median(seconds):.2f}, max {max(seconds):.2f}")
    print(f"wrote {path}")


def report(out: Path) -> None:
    """Per saved run, half and kind: first blocks holding the reference, today / model."""
    rows = {r["id"]: r for r in json.loads((out / "hits.json").read_text())}
    for path in sorted(out.glob("choices_*.json")):
        saved = json.loads(path.read_text())
        chosen = {c["id"]: c for c in saved["choices"]}
        which = saved["half"]
        tally: dict[str, list[int]] = defaultdict(lambda: [0] * 7)
        for row in rows.values():
            if row["half"] != which:
                continue
            hit = {b["n"]: b["hit"] for b in row["blocks"]}
            today = hit.get(row["today"], False)
            c = chosen.get(row["id"])
            model = hit.get(c["chosen"], False) if c else today
            for kind in (row["kind"], "all"):
                t = tally[kind]
                t[0] += 1
                t[1] += today
                t[2] += model
                if c is not None:
                    t[3] += c["chosen"] != c["today"]
                    t[4] += model > today
                    t[5] += model < today
                    t[6] += not c["by_model"]
        seconds = [c["seconds"] for c in saved["choices"] if c["seconds"]]
        tokens = [c["prompt_tokens"] for c in saved["choices"]]
        print(f"\n{path.name}: half {which}, wording {saved['wording']}, order "
              f"{saved['order']}; {len(saved['choices'])} asked; load {saved['load_s']} s; "
              f"s per choice p50 {statistics.median(seconds) if seconds else 0:.2f}, max "
              f"{max(seconds, default=0):.2f}; prompt tokens p50 "
              f"{statistics.median(tokens) if tokens else 0:.0f}, max {max(tokens, default=0)}"
              f"\n{saved['uptime_before']} / {saved['uptime_after']}")
        print("| kind | n | first block holds the reference: today | model-chosen | changed "
              "choices | better | worse | fell back |\n|---|---|---|---|---|---|---|---|")
        for kind in ("code", "docs", "all"):
            n, before, m, ch, better, worse, fell = tally[kind]
            if n:
                print(f"| {kind} | {n} | {before} ({before / n:.0%}) | {m} ({m / n:.0%}) | {ch} | "
                      f"{better} | {worse} | {fell} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("collect", "run", "report"))
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--half", choices=("A", "B"), default="A")
    parser.add_argument("--wording", choices=WORDINGS, default=WORDING)
    parser.add_argument("--order", choices=ORDERS, default=ORDER)
    parser.add_argument("--all", action="store_true",
                        help="run: every question of the half, not only the decisive ones")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.action == "collect":
        collect([s for s in args.sets.split(",") if s], args.k, args.out)
    elif args.action == "run":
        run(args.half, args.wording, args.order, args.all, args.out)
    else:
        report(args.out)


if __name__ == "__main__":
    main()
