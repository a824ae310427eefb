"""The writer's drafts on tuning questions, written once, and the claim check measured on them.

Issue 19 asks that a written answer hold no claim its cited source does not make. The check
(ragdb/generate/checking.py) is tuned here, on questions the accept sample never uses
(benchmarks/bench_accept.py): public docs questions 1-50, the public code questions outside the
sample (those whose position is not 0 or 2 modulo 5), and the repos set's half A; every other
one of each, 65 in all (common.tuning_questions). `draft` writes the writer's answers before the
check (data/bench/writer/drafts.json: question, the sources it saw, what it wrote, timings); `check`
re-runs the check on them, as often as the check changes, without the model, and prints each
sentence kept or dropped, next to the tuner's own labels where data/bench/writer/labels.json
has them (sentence text -> "ok" or "bad"; written by whoever tunes the check, never a reader).

    uv run --frozen python -m benchmarks.bench_writer draft      # needs the writer installed
    uv run --frozen python -m benchmarks.bench_writer check [--verbose]
    uv run --frozen python -m benchmarks.bench_writer validate   # on judged_round1.json

Both check as the writers' answers are checked: each sentence also worded as its block words it
(ragdb/generate/wording.py). The word-level check without that order (`--in-block-order` off),
which its figures before issue 39's second repos4 reading measured, left the code: its rules
changed no kept sentence under the order rule (benchmarks/README.md).

How much of the sources the writer is shown was chosen the same way, on the same tuning
questions, with whole checked answers read by strict readers (on the passages ragdb chose
before the blocks, issue 39): `answers` writes them with the writer's context window given as
JSON (`context_tokens`) into data/bench/writer/context/answers_NAME.json; `pair A B TAG` writes, for
the questions whose answers differ, both answers in a shuffled order under ids that do not
say which is which (judge_TAG_*.json, the key kept apart), for readers given
benchmarks/GRADER_BRIEF.md; `tally TAG` counts their verdicts (verdicts_TAG_*.json) per side.

    uv run --frozen python -m benchmarks.bench_writer answers --name wide \
        --context '{"context_tokens": 2048}'
    uv run --frozen python -m benchmarks.bench_writer pair narrow wide w2
    uv run --frozen python -m benchmarks.bench_writer tally w2
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.common import CONTEXT_DIR, WRITER_DIR, answer_record, host_line, tuning_questions
from ragdb import RagDB
from ragdb.generate.checking import CitedSource, check_answer, split_units
from ragdb.generate.cleaning import renumber_citations
from ragdb.generate.styles import CheckedAnswerer
from ragdb.retrieve import Mode

DRAFTS = WRITER_DIR / "drafts.json"
LABELS = WRITER_DIR / "labels.json"
#: The 65 writer answers strict readers judged in the first round (answers_writer.json and
#: verdicts_writer_*.json of data/bench/accept as they were), each with its verdict: the check
#: is validated on them as a mechanism (does it drop what readers flagged, keep what they
#: accepted?), never tuned on them.
JUDGED = WRITER_DIR / "judged_round1.json"


def draft(k: int, limit: int | None, only: str = "") -> None:
    out: list[dict[str, Any]] = []
    rags: dict[Path, RagDB] = {}
    chosen = tuning_questions()[:limit]
    if only:
        chosen = [chosen[int(i)] for i in only.split(",")]
    for question, reference, db in chosen:
        rag = rags.setdefault(db, RagDB(db, model="writer", use_cache=False))
        answerer = rag.answerer("generate")
        assert isinstance(answerer, CheckedAnswerer)
        hits = rag.searcher.search(question.question, k, Mode.hybrid)
        sources = [rag_source for rag_source in _prompt_sources(hits)]
        started = time.perf_counter()
        written = answerer.draft(question.question, sources)
        seconds = time.perf_counter() - started
        if written is None:
            continue
        out.append({
            "id": question.question_id, "set": question.set_name, "kind": question.kind,
            "question": question.question, "reference_answer": reference,
            "written": renumber_citations(written.written.text, written.mapping),
            "given": [{"n": c.number, "file_path": c.file_path, "text": c.text}
                      for c in written.given],
            "shown": [{"n": written.mapping[i], "text": s.text}
                      for i, s in enumerate(written.shown, 1)],
            "seconds": round(seconds, 2),
            "first_token_s": round(written.selected_s + written.written.first_token_s, 2),
            "prompt_tokens": written.written.prompt_tokens,
            "new_tokens": written.written.new_tokens,
        })
        print(f"{len(out):3d} {question.set_name:10s} {seconds:5.1f} s "
              f"{question.question[:50]!r} -> {out[-1]['written'][:80]!r}", flush=True)
    for rag in rags.values():
        rag.close()
    WRITER_DIR.mkdir(parents=True, exist_ok=True)
    DRAFTS.write_text(json.dumps(out, indent=1))
    print(f"{host_line()}\nwrote {DRAFTS}; seconds per draft p50 "
          f"{statistics.median(a['seconds'] for a in out):.2f}, first token p50 "
          f"{statistics.median(a['first_token_s'] for a in out):.2f}")


def _prompt_sources(hits: list[Any]) -> list[Any]:
    from ragdb.generate.prompt import prompt_source

    return [prompt_source(h) for h in hits]


def check(verbose: bool) -> None:
    drafts = json.loads(DRAFTS.read_text())
    labels: dict[str, str] = json.loads(LABELS.read_text()) if LABELS.exists() else {}
    tally = {f"{fate} {label}": 0 for label in ("ok", "bad", "empty")
             for fate in ("kept", "dropped")}
    tally["unlabelled"] = 0
    fallbacks = 0
    for item in drafts:
        given = [CitedSource(g["n"], g["file_path"], g["text"]) for g in item["given"]]
        checked = check_answer(item["written"], given, question=item["question"])
        fallbacks += checked.too_little
        dropped = {d["text"]: d["reason"] for d in checked.report.dropped}
        recited = {r["text"]: r["to"] for r in checked.report.recited}
        if verbose:
            print(f"\n## {item['set']} {item['question']}\n"
                  f"   ref: {item['reference_answer'][:200]}")
        for unit in split_units(item["written"]):
            label = labels.get(unit.text)
            gone = next((r for t, r in dropped.items() if t and t[:40] in unit.text), None)
            moved = next((n for t, n in recited.items() if t and t[:40] in unit.text), None)
            if label is None:
                tally["unlabelled"] += 1
            elif moved is not None and not gone:
                tally["recited"] = tally.get("recited", 0) + 1
            else:
                tally[f"{'dropped' if gone else 'kept'} {label}"] += 1
            if verbose:
                mark = "DROP" if gone else f"re-cited [{moved}]" if moved else "keep"
                print(f"   {mark} [{label or '?'}] {unit.text[:300]!r}"
                      + (f"\n        -- {gone}" if gone else ""))
        if verbose and checked.too_little:
            print("   => falls back to passages")
    print(f"\n{len(drafts)} drafts; fall back to passages: {fallbacks}; sentences: {tally}")


def validate(verbose: bool) -> None:
    """The check on the judged answers' sentences, next to the readers' verdicts."""
    judged = json.loads(JUDGED.read_text())
    rows = {"flagged": [0, 0, 0], "accepted": [0, 0, 0], "other": [0, 0, 0]}
    rescued: list[str] = []
    for item in judged:
        verdict = item["verdict"]
        given = [CitedSource(c["n"], c["file_path"], c["text"]) for c in item["cited_sources"]]
        if item["check"]["fallback"]:
            # Readers judged the passages; the writer's own sentences had been dropped.
            for dropped in item["check"]["dropped"]:
                checked = check_answer(dropped["text"], given, question=item["question"])
                if checked.report.kept:
                    rescued.append(f"{item['question'][:70]!r}\n      kept now: "
                                   f"{checked.text[:200]!r}")
            continue
        group = ("flagged" if verdict.get("unsupported")
                 else "accepted" if verdict["exam"] else "other")
        checked = check_answer(item["answer"], given, question=item["question"])
        rows[group][0] += 1
        rows[group][1] += checked.report.sentences - checked.report.kept
        rows[group][2] += checked.too_little
        if verbose:
            print(f"\n[{group}] {item['question']}\n   reader: {verdict['reason'][:160]}")
            for d in checked.report.dropped:
                print(f"   DROP {d['text'][:160]!r}\n        -- {d['reason']}")
            if checked.report.kept:
                print(f"   KEEP {checked.text[:200]!r}")
    print("\n| judged writer answers (first round) | answers | sentences dropped now "
          "| would fall back to passages |\n|---|---|---|---|")
    for group, (n, dropped, fell) in rows.items():
        print(f"| {group} | {n} | {dropped} | {fell} |")
    print(f"\nwritten sentences the old check dropped (the answer fell back) that the new one "
          f"keeps: {len(rescued)}")
    for line in rescued:
        print("   " + line)


def answers(name: str, context: dict[str, Any], k: int, style: str = "generate") -> None:
    """Whole checked answers on the tuning questions with the writer's context window of
    `context` (`context_tokens`; the default: WRITER_CONTEXT_TOKENS); with style
    "extractive", the blocks alone."""
    import ragdb.generate.generator as generator

    context = dict(context)
    window = int(context.pop("context_tokens", generator.WRITER_CONTEXT_TOKENS))
    if context:
        raise SystemExit(f"unknown --context settings: {', '.join(context)} "
                         "(only context_tokens)")
    generator.WRITER_CONTEXT_TOKENS = window  # read when the writer's Generator is made
    out: list[dict[str, Any]] = []
    rags: dict[Path, RagDB] = {}
    for question, reference, db in tuning_questions():
        model = "writer" if style == "generate" else None
        rag = rags.setdefault(db, RagDB(db, model=model, use_cache=False))
        started = time.perf_counter()
        result = rag.answer(question.question, k, Mode.hybrid, style=style)
        out.append(answer_record(question, reference, result, time.perf_counter() - started))
        print(f"{len(out):3d} {question.set_name:10s} {out[-1]['seconds']:5.1f} s "
              f"{result.style}", flush=True)
    for rag in rags.values():
        rag.close()
    CONTEXT_DIR.mkdir(parents=True, exist_ok=True)
    path = CONTEXT_DIR / f"answers_{name}.json"
    path.write_text(json.dumps({"context": {**context, "context_tokens": window},
                                "answers": out}, indent=1))
    print(f"{host_line()}\nwrote {path}; seconds per answer p50 "
          f"{statistics.median(a['seconds'] for a in out):.2f}, first token p50 "
          f"{statistics.median(a['first_token_s'] or 0 for a in out):.2f}, "
          f"{sum(a['style'] != 'generate' for a in out)} fell back to the blocks alone")


def _context_answers(name: str) -> dict[str, dict[str, Any]]:
    data = json.loads((CONTEXT_DIR / f"answers_{name}.json").read_text())
    return {a["id"]: a for a in data["answers"]}


def pair(first: str, second: str, tag: str, per: int = 20) -> None:
    """Blind inputs for readers: both answers of every question where they differ."""
    import random

    a, b = _context_answers(first), _context_answers(second)
    rng = random.Random(7)
    items: list[dict[str, Any]] = []
    key: dict[str, list[str]] = {}
    for qid in a:
        if qid not in b or a[qid]["answer"] == b[qid]["answer"]:
            continue
        sides = [(first, a[qid]), (second, b[qid])]
        rng.shuffle(sides)
        for side, answer in sides:
            item = f"{qid[:8]}-{rng.randrange(10 ** 6):06d}"
            key[item] = [qid, side]
            items.append({"id": item, **{f: answer[f] for f in (
                "question", "answer", "cited_sources", "reference_answer")}})
    (CONTEXT_DIR / f"key_{tag}.json").write_text(json.dumps(key, indent=1))
    for i in range(0, len(items), per):
        (CONTEXT_DIR / f"judge_{tag}_{i // per}.json").write_text(
            json.dumps(items[i:i + per], indent=1))
    print(f"{len(items) // 2} questions differ; judge_{tag}_0 ... "
          f"{(len(items) - 1) // per} in {CONTEXT_DIR}")


def tally(tag: str) -> None:
    """Each side's verdicts, and on how many questions one side satisfied more."""
    key = json.loads((CONTEXT_DIR / f"key_{tag}.json").read_text())
    verdicts: dict[str, dict[str, Any]] = {}
    for path in CONTEXT_DIR.glob(f"verdicts_{tag}_*.json"):
        verdicts.update({v["id"]: v for v in json.loads(path.read_text())})
    sides: dict[str, dict[str, int]] = {}
    per_question: dict[str, dict[str, int]] = {}
    level = {"no": 0, "partly": 1, "yes": 2}
    for item, (qid, side, *_) in key.items():  # a third field, where present: the set
        if item not in verdicts:
            continue
        v = verdicts[item]
        count = sides.setdefault(side, {"n": 0, "exam": 0, "yes": 0, "partly": 0, "no": 0,
                                        "unsupported": 0})
        count["n"] += 1
        count["exam"] += bool(v["exam"])
        count[v["satisfied"]] += 1
        count["unsupported"] += bool(v["unsupported"])
        per_question.setdefault(qid, {})[side] = level[v["satisfied"]]
    for side, count in sides.items():
        print(f"{side}: {count['n']} answers, exam rule {count['exam']}, satisfied "
              f"{count['yes']} / {count['partly']} / {count['no']}, unsupported "
              f"{count['unsupported']}")
    names = list(sides)
    if len(names) == 2:
        both = [q for q in per_question.values() if len(q) == 2]
        first, second = names
        print(f"satisfied more: {first} {sum(q[first] > q[second] for q in both)}, "
              f"{second} {sum(q[second] > q[first] for q in both)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("draft", "check", "validate", "answers", "pair",
                                           "tally"))
    parser.add_argument("names", nargs="*", help="pair: A B TAG; tally: TAG")
    parser.add_argument("--name", default="wide", help="answers: the file's name")
    parser.add_argument("--context", default="{}", help="answers: the writer's context as "
                        "JSON ({\"context_tokens\": N})")
    parser.add_argument("--style", default="generate", choices=("generate", "extractive"),
                        help="answers: the writer's checked answers, or the blocks alone")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--only", default="", help="comma-separated positions in the tuning "
                        "list (a quick look at a few)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    if args.action == "draft":
        draft(args.k, args.limit, args.only)
    elif args.action == "check":
        check(args.verbose)
    elif args.action == "answers":
        answers(args.name, json.loads(args.context), args.k, args.style)
    elif args.action == "pair":
        if len(args.names) != 3:
            parser.error("pair needs A B TAG")
        pair(*args.names)
    elif args.action == "tally":
        if len(args.names) != 1:
            parser.error("tally needs TAG")
        tally(args.names[0])
    else:
        validate(args.verbose)


if __name__ == "__main__":
    main()
