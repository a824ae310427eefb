"""Answers for a strict reader: a fixed sample, each style, and the reader's verdicts tallied.

Issue 19 measures answers by whether a strict reader accepts them, not by token overlap alone.
`sample` answers a fixed sample of questions held out from every choice of the answer
settings, in each style, and saves, per answer, what the reader needs: the question, the
answer, the text of every source it cites and the reference answer
(`data/bench/accept/answers_<style>.json`). A reader (never the one who tuned the selector)
writes `verdicts_<style>*.json` beside them: a list of {"id", "exam" (true when at least two of
addresses the question / relevant codebase facts / coherent hold), "satisfied" (yes, partly,
no), "unsupported" (true when a claim is not in the cited source), "reason"}. `report` tallies
them per style and set; a later file (in the order of its number) holds the verdicts on answers
that changed after the earlier ones were read, and its verdict stands for them.

The sample: public docs questions 51-100 (the extractive settings were chosen on 1-50); the public
code questions 1, 3, 6, 8, 11, ... (every fifth from the first and from the third); the repos set's
half B (benchmarks/bench_repos.py): 50 + 40 + 40 (common.accept_sample). The first rounds read 25 +
20 + 20 of them (docs every other one, code every fifth, repos every other one: `first_round`); the
other 65 were added unread, so that what was built after reading the first rounds' verdicts is also
reported on questions nobody has looked at. Since then the rejected answers of all 130 have been
read for patterns (issue 19's sixth round), so none of the 130 is unread any more: the 60 questions
of benchmarks/repos2 (three codebases nobody tuned on, written from their sources alone) were added
to the sample after that round, as its fresh part (`repos2`). Needs data/bench/rag.db (`make
bench`), data/bench/repos.db and data/bench/repos2.db (`make bench-repos`, with `--unseen`).
`sample --repos3` also answers the 60 questions of benchmarks/repos3 (set `repos3`, on
data/bench/repos3.db, built by `bench_repos --unseen`), after the 190 above, which stay the same
questions in the same order; `report` tallies `repos3` apart and leaves it out of "the 130".

    uv run --frozen python -m benchmarks.bench_accept sample --style extractive
    uv run --frozen python -m benchmarks.bench_accept sample --style writer
    uv run --frozen python -m benchmarks.bench_accept sample --style extractive --repos3
    uv run --frozen python -m benchmarks.bench_accept sample --repos3 --name NAME
        # (writer/context/answers_held_NAME.json; the sample's own file is left as it is)
    uv run --frozen python -m benchmarks.bench_accept sample --style writer --repos3 \
        --only ID,ID   # those answers again, in the sample's own file
    uv run --frozen python -m benchmarks.bench_accept report

The saved answers_extractive.json and its verdicts are the passages ragdb chose from the sources
before issue 39 (the fragment selection, last in commit 90ac313); `--style extractive`
answers with whole blocks now (generate/blocks.py), so a new sample of it is best written with
`--name` and judged blind against the old one (benchmarks/bench_blocks.py did so).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.common import (ACCEPT_DIR, CONTEXT_DIR, REPOS2, REPOS3, accept_sample,
                               answer_record, host_line, repo_questions, vllm_questions)
from ragdb import RagDB
from ragdb.retrieve import Mode

#: style name -> (--style, --model) as `ragdb answer` takes them
STYLES = {"extractive": ("extractive", None), "writer": ("generate", "writer")}


def first_round() -> set[str]:
    """The ids the first rounds of readers saw (their verdicts guided later work)."""
    public = vllm_questions()
    docs = [q for q in public if q.kind == "docs"][50:100:2]
    code = [q for q in public if q.kind == "code"][::5]
    repos = [q for q in repo_questions() if q.half == "B"][::2]
    return {q.question_id for q in docs + code + repos}


def answer_sample(style: str, k: int, repos3: bool = False, name: str = "",
                  only: frozenset[str] = frozenset()) -> Path:
    """The sample answered; with `name`, written beside bench_writer's tuning runs as
    answers_held_<name>.json (for `bench_writer pair`), the sample's own file left as it is.
    With `only` (question ids), those questions alone are answered again and replace theirs in
    the sample's own file (the writer's answers where the passages it is shown changed: 250 of
    them take most of an hour on 2 cores); the replaced answers go to
    answers_<style>_replaced.json, for a blind pairing."""
    answer_style, model = STYLES[style]
    if only and name:
        raise SystemExit("--only answers into the sample's own file: no --name")
    out: list[dict[str, Any]] = []
    rags: dict[Path, RagDB] = {}
    for question, reference, db in accept_sample(repos3):
        if only and question.question_id not in only:
            continue
        rag = rags.setdefault(db, RagDB(db, model=model, use_cache=False))
        started = time.perf_counter()
        result = rag.answer(question.question, k, Mode.hybrid, style=answer_style)
        out.append(answer_record(question, reference, result,
                                 time.perf_counter() - started))
        print(f"{len(out):3d} {question.set_name:12s} {out[-1]['seconds']:5.1f} s  "
              f"{question.question[:60]}", flush=True)
    for rag in rags.values():
        rag.close()
    if name:
        CONTEXT_DIR.mkdir(parents=True, exist_ok=True)
        path = CONTEXT_DIR / f"answers_held_{name}.json"
        path.write_text(json.dumps({"context": {}, "answers": out}, indent=1))
    elif only:
        path = ACCEPT_DIR / f"answers_{style}.json"
        saved = json.loads(path.read_text())
        fresh = {a["id"]: a for a in out}
        (ACCEPT_DIR / f"answers_{style}_replaced.json").write_text(
            json.dumps([a for a in saved if a["id"] in fresh], indent=1))
        path.write_text(json.dumps([fresh.get(a["id"], a) for a in saved], indent=1))
    else:
        ACCEPT_DIR.mkdir(parents=True, exist_ok=True)
        path = ACCEPT_DIR / f"answers_{style}.json"
        path.write_text(json.dumps(out, indent=1))
    print(f"{host_line()}\nwrote {path}; seconds per answer p50 "
          f"{statistics.median(a['seconds'] for a in out):.2f}, max "
          f"{max(a['seconds'] for a in out):.2f}")
    return path


#: The held-out sets the sample can hold, reported apart from the 130: set name -> packages.
FRESH = {REPOS2.name: REPOS2.names, REPOS3.name: REPOS3.names}


def _group(answer: dict[str, Any]) -> str:
    if answer["set"].startswith("vllm"):
        return str(answer["set"])
    return next((name for name, packages in FRESH.items() if answer["set"] in packages), "repos")


def _round(path: Path) -> tuple[int, str]:
    """verdicts_<style>_<N>.json in the order of N (10 after 9), which is the order they were
    read in: a later round's verdict stands for the answers it read again."""
    number = re.search(r"_(\d+)\.json$", path.name)
    return (int(number.group(1)) if number else 0, path.name)


def report(folder: Path = ACCEPT_DIR) -> None:
    """The readers' verdicts on the saved sample, tallied per style and set: what `report`
    reads is answers_<style>.json and every verdicts_<style>*.json of `folder`."""
    print("| style | set | n judged | exam rule | satisfied yes / partly / no "
          "| unsupported claim | s / answer p50 |\n|---|---|---|---|---|---|---|")
    for style in STYLES:
        path = folder / f"answers_{style}.json"
        if not path.exists():
            continue
        answers = {a["id"]: a for a in json.loads(path.read_text())}
        verdicts: dict[str, dict[str, Any]] = {}
        for part in sorted(folder.glob(f"verdicts_{style}*.json"), key=_round):
            verdicts.update({v["id"]: v for v in json.loads(part.read_text())})
        groups: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
        seen = first_round()
        for qid, verdict in verdicts.items():
            if qid in answers:
                group = _group(answers[qid])
                groups[group].append((answers[qid], verdict))
                groups["all"].append((answers[qid], verdict))
                if group not in FRESH:
                    groups["the 130"].append((answers[qid], verdict))
                    groups["first round" if qid in seen else "later 65"].append(
                        (answers[qid], verdict))
        for name in ("vllm-docs", "vllm-code", "repos", "first round", "later 65", "the 130",
                     "repos2", "repos3", "all"):
            rows = groups.get(name, [])
            if not rows:
                continue
            n = len(rows)
            exam = sum(bool(v["exam"]) for _, v in rows)
            sat = {s: sum(v["satisfied"] == s for _, v in rows) for s in ("yes", "partly", "no")}
            unsupported = sum(bool(v.get("unsupported")) for _, v in rows)
            seconds = statistics.median(a["seconds"] for a, _ in rows)
            print(f"| {style} | {name} | {n} | {exam / n:.0%} | {sat['yes']} / {sat['partly']} "
                  f"/ {sat['no']} ({sat['yes'] / n:.0%} yes) | {unsupported} | {seconds:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("sample", "report"))
    parser.add_argument("--style", choices=tuple(STYLES), default="extractive")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repos3", action="store_true",
                        help="sample: also the 60 questions of benchmarks/repos3 (set repos3)")
    parser.add_argument("--name", default="", help="sample: write writer/context/"
                        "answers_held_NAME.json instead of the sample's own file")
    parser.add_argument("--only", default="", help="sample: comma-separated question ids "
                        "answered again in the sample's own file, the others kept")
    args = parser.parse_args()
    if args.action == "sample":
        answer_sample(args.style, args.k, args.repos3, args.name,
                      frozenset(filter(None, args.only.split(","))))
    else:
        report()


if __name__ == "__main__":
    main()
