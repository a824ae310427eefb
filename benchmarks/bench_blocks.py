"""Answer variants side by side, for blind readers (issue 39): the passages ragdb chose before
(`extractive`) against whole blocks of the sources (ragdb/generate/blocks.py), on the same
retrieval. The readers chose `blocks`; the passages' selection was then deleted (it last lived
in commit 90ac313), and so were the block variants that lost (rank1, code, two,
blocks-chunkdocs; they last lived in commit 4efa58b). `sections` (a docs block its whole
section, subsections included, where it fits) won against the blocks of the time and became
the default's docs cut (cuts.WHOLE_SECTION_LINES); the cut it replaced last lived in commit
57231af. `halves` (a second block for the clause of a two-part question the first leaves out)
and `leads` (a docs block cut from a longer passage started with what it points back at) won
too and are in the default (blocks.HALVES_SHARE, cuts.with_lead); as variants they last lived
in commit 6fee578. `named` (the definition a question names, ragdb/generate/named.py) won too
and is in the default; as a variant it last lived in commit 371b866. Their saved answers and
verdicts (READINGS) stay what `report` reads, and `answer` now answers with `blocks` (the
default, no model) and `writer` (the offline writer narrating over the default blocks). Three
candidates read blind and lost, so they left: `long` and `rest` (a code block run on to the
deciding branch) and `second` (a second block always); they last lived in commit cdaaf41
(benchmarks/README.md, "Code blocks that run on to the deciding branch", "A second block
always").

`answer` searches each question once (hybrid, k 10) and answers it with each variant asked,
writing into data/bench/blocks/ (or --out):

- `answers_VARIANT.json`: per question {id, set, kind, question, reference_answer, answer (the
  text exactly as the user sees it), cited (n, file_path, start_line, end_line, text of each
  cited source), shown (a blocks answer's blocks with their own path:start-end, and notes),
  seconds (answering, after the search), search_s};
- `blind/ID.json` and `blind/ID.md`: one question, its reference answer, and the variants'
  answers as A, B, C... in an order shuffled per question (random.Random(SEED + id)), with
  their cited sources;
- `key.json`: for each id, which variant each letter is. Readers never see it.

Readers (benchmarks/GRADER_BRIEF.md) write `verdicts_NAME.json`: a list of {"id", "letter",
"exam", "satisfied" (yes/partly/no), "unsupported", "reason"}; `report` maps letters back to
variants through key.json and tallies each variant per set and kind, with sign tests against
`extractive` on the questions both were judged on.

`cover` is a mechanical check of the default blocks, no reader: the
share of answers whose shown lines overlap the reference span, and the share of the
reference's lines shown (per set and kind). Rules are chosen on `--tuning` questions
(common.tuning_questions), never on the sample.

The sample is common.accept_sample(repos3=True, repos4=True): vLLM public docs 51-100 and code at
positions 0 and 2 modulo 5 (data/bench/rag.db, skipped where it is not built), the repos set's
half B, all of repos2, repos3 and repos4 (`python -m benchmarks.bench_repos --unseen` builds their
indexes; a set whose index is not built is left out).

    uv run --frozen python -m benchmarks.bench_blocks answer [--sets repos2,repos3,repos4] \
        [--variants blocks,writer] [--kind code] [--out FOLDER]
    uv run --frozen python -m benchmarks.bench_blocks cover [--tuning]
    uv run --frozen python -m benchmarks.bench_blocks report
    uv run --frozen python -m benchmarks.bench_blocks compare --before A.json --after B.json \
        --out FOLDER [--most N]

`compare` pairs two saved answer files (two versions of the code, each run with `answer`): the
questions whose answer text changed, blind, as `before` and `after`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (BENCH_DIR, BY_NAME, REPOS5, REPOS6, REPOS7, Asked,
                               accept_sample, host_line, tuning_questions)
from ragdb import RagDB
from ragdb.answering import Answer
from ragdb.retrieve import Hit, Mode

OUT = BENCH_DIR / "blocks"
#: The saved blind readings `report --out FOLDER` tallies: the variants on repos2 and repos3
#: (OUT), the default and `two` on repos4, the writer against the default on repos4, and
#: whole sections against the default on repos4's docs questions and on the sample's docs
#: questions whose answer they changed, the answers MkDocs snippets changed (`compare`), and
#: the sample answers `halves` and `leads` changed, and those `named` and its fixes changed
#: (`compare`).
READINGS = (OUT, BENCH_DIR / "blocks4", BENCH_DIR / "blocks4w", BENCH_DIR / "blocks4s",
            BENCH_DIR / "blocks_sdocs", BENCH_DIR / "blocks_snip", BENCH_DIR / "blocks4wq",
            BENCH_DIR / "blocks5", BENCH_DIR / "blocks_cover2", BENCH_DIR / "blocks_leads2",
            BENCH_DIR / "blocks3w",  # repos3: the answers blocks3wq and blocks3w_wordq compare
            BENCH_DIR / "blocks3wq",  # the writer with the order rule against the default, repos3
            BENCH_DIR / "blocks3w_wordq",  # ... and with the word-level check alone
            BENCH_DIR / "blocks5c",  # repos5: the default before and after halves and leads
            BENCH_DIR / "blocks5f",  # repos5: as read (blocks5) and after the callers fix
            BENCH_DIR / "blocks_named",  # sample and repos5: the answers `named` changed
            BENCH_DIR / "blocks_namedf",  # ... and the answers its three fixes changed
            BENCH_DIR / "blocks6",  # repos6: the default, for fresh blind readers
            BENCH_DIR / "blocks7",  # repos7: the default, for fresh blind readers
            BENCH_DIR / "blocks_long",  # sample and repos5: the answers the chosen cut changed
            BENCH_DIR / "blocks_second",  # sample and repos5: the answers `second` changed
            BENCH_DIR / "blocks7w")  # repos7: the writer's written answers, and the default
#: The answer made without a model (RagDB.answer with style "extractive").
BLOCKS = "blocks"
#: The offline writer narrating over the default blocks (`--model writer`), as a variant.
WRITER = "writer"
ALL_VARIANTS = (BLOCKS, WRITER)
SEED = 39


def set_group(question_set: str) -> str:
    """The set a question belongs to in reports: vllm, repos, repos2 ... repos7."""
    if question_set.startswith("vllm"):
        return "vllm"
    for held in BY_NAME.values():
        if question_set in held.names:
            return held.name
    return "repos"


def questions(sets: Sequence[str], kind: str, tuning: bool = False) -> list[Asked]:
    """The sample's questions (or the tuning ones) of `sets` and `kind`; a set whose index is
    not built is left out, said once."""
    chosen = (tuning_questions() if tuning
              else accept_sample(repos3=True, repos4=True, repos5=REPOS5.name in sets,
                                 repos6=REPOS6.name in sets, repos7=REPOS7.name in sets))
    out: list[Asked] = []
    missing: set[Path] = set()
    for asked in chosen:
        question, _, db = asked
        if (sets and set_group(question.set_name) not in sets) or (kind and question.kind != kind):
            continue
        if not db.exists():
            missing.add(db)
            continue
        out.append(asked)
    for db in sorted(missing):
        print(f"skipped: {db} is not built")
    return out


def _cited(answer: Any) -> list[dict[str, Any]]:
    sources = answer.prompt_sources
    return [{"n": n, "file_path": sources[n - 1].file_path,
             "start_line": sources[n - 1].start_line, "end_line": sources[n - 1].end_line,
             "text": sources[n - 1].text}
            for n in answer.cited if 0 < n <= len(sources)]


def answer_all(sets: Sequence[str], variants: Sequence[str], kind: str, k: int,
               out: Path = OUT) -> None:
    """Every question of the sample answered by every variant on one retrieval."""
    records: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    rags: dict[Path, RagDB] = {}
    chosen = questions(sets, kind)
    # The writer narrates over the default blocks (one model load an index).
    model = "writer" if WRITER in variants else None
    for number, (question, reference, db) in enumerate(chosen, 1):
        rag = rags.setdefault(db, RagDB(db, use_cache=False, model=model))
        started = time.perf_counter()
        hits = rag.search(question.question, k, Mode.hybrid)
        search_s = time.perf_counter() - started
        for variant in variants:
            started = time.perf_counter()
            found = answer_with(rag, variant, question.question, hits, k)
            records[variant].append({
                "id": question.question_id, "set": question.set_name, "kind": question.kind,
                "question": question.question, "reference_answer": reference,
                "answer": found.text, "cited": _cited(found), "shown": found.shown,
                "seconds": round(time.perf_counter() - started, 3),
                "search_s": round(search_s, 3), "style": found.style,
                "timings": found.timings})
        print(f"{number:3d}/{len(chosen)} {question.set_name:12s} {question.kind:4s} "
              f"{question.question[:70]}", flush=True)
    for rag in rags.values():
        rag.close()
    out.mkdir(parents=True, exist_ok=True)
    for variant, rows in records.items():
        (out / f"answers_{variant}.json").write_text(json.dumps(rows, indent=1))
    write_blind(records, out)
    print(host_line())
    for variant, rows in records.items():
        if rows:
            print(f"{variant:18s} s per answer (after the search) p50 "
                  f"{statistics.median(r['seconds'] for r in rows):.3f}, max "
                  f"{max(r['seconds'] for r in rows):.3f}")
    print(f"wrote {out}/answers_*.json, {out}/blind/, {out}/key.json")


def answer_with(rag: RagDB, variant: str, question: str, hits: list[Hit], k: int) -> Answer:
    """`variant`'s answer from the hits, as RagDB makes it: the blocks or the writer."""
    return rag.answer_from(question, hits, k=k, mode=Mode.hybrid,
                           style="generate" if variant == WRITER else "extractive")


def write_blind(records: dict[str, list[dict[str, Any]]], out: Path) -> None:
    """One file per question with the variants as shuffled letters, and the key apart."""
    folder = out / "blind"
    folder.mkdir(parents=True, exist_ok=True)
    by_id: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for variant, rows in records.items():
        for row in rows:
            by_id[row["id"]][variant] = row
    key: dict[str, dict[str, str]] = {}
    for qid, answers in by_id.items():
        names = sorted(answers)
        random.Random(f"{SEED}-{qid}").shuffle(names)
        letters = {chr(ord("A") + i): name for i, name in enumerate(names)}
        key[qid] = letters
        first = next(iter(answers.values()))
        blind = {"id": qid, "kind": first["kind"], "question": first["question"],
                 "reference_answer": first["reference_answer"],
                 "answers": {letter: {"answer": answers[name]["answer"],
                                      "cited": answers[name]["cited"]}
                             for letter, name in letters.items()}}
        (folder / f"{qid}.json").write_text(json.dumps(blind, indent=1))
        (folder / f"{qid}.md").write_text(blind_markdown(blind))
    (out / "key.json").write_text(json.dumps(key, indent=1))


def compare(before: Path, after: Path, out: Path, most: int = 0) -> list[str]:
    """Two saved answer files (`answers_*.json`, e.g. made by two versions of the code) as
    variants `before` and `after`: the questions whose answer text differs, written to `out`
    as answers_before.json, answers_after.json, blind files and key.json; their ids. `most`
    (0: all): where more changed, the `most` whose sha256(id) sorts first, in the files'
    order (a fixed choice no one makes by reading them)."""
    rows = {name: {r["id"]: r for r in json.loads(path.read_text())}
            for name, path in (("before", before), ("after", after))}
    changed = [qid for qid, row in rows["before"].items()
               if qid in rows["after"] and rows["after"][qid]["answer"] != row["answer"]]
    total = len(changed)
    if most and total > most:
        chosen = set(sorted(changed, key=lambda q: hashlib.sha256(q.encode()).hexdigest())[:most])
        changed = [qid for qid in changed if qid in chosen]
    records = {name: [by_id[qid] for qid in changed] for name, by_id in rows.items()}
    out.mkdir(parents=True, exist_ok=True)
    for name, kept in records.items():
        (out / f"answers_{name}.json").write_text(json.dumps(kept, indent=1))
    write_blind(records, out)
    capped = (f" (the {len(changed)} whose sha256(id) sorts first kept)"
              if len(changed) < total else "")
    print(f"{total} of {len(rows['before'])} answers changed{capped}; wrote {out}/blind/, "
          f"{out}/key.json")
    for qid in changed:
        print(qid)
    return changed


def blind_markdown(blind: dict[str, Any]) -> str:
    """A blind file as a reader reads it: the question, the reference, each answer as shown
    and the sources it cites."""
    parts = [f"# {blind['id']} ({blind['kind']})", f"**Question:** {blind['question']}",
             f"**Reference answer:** {blind['reference_answer']}"]
    for letter, shown in blind["answers"].items():
        parts.append(f"## Answer {letter}\n\n{shown['answer']}")
        for source in shown["cited"]:
            fence = "~~~~" if "```" in source["text"] else "```"
            parts.append(f"Cited [{source['n']}] `{source['file_path']}:{source['start_line']}-"
                         f"{source['end_line']}`:\n\n{fence}\n{source['text'].strip()}\n{fence}")
    return "\n\n".join(parts) + "\n"


def _reference_lines(question: Any) -> list[tuple[str, int, int]]:
    """The reference spans as (path, first line, last line), read from the files."""
    out = []
    for path, first, last in question.sources:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError:
            continue
        out.append((path, text.count("\n", 0, first) + 1,
                    text.count("\n", 0, max(first, last - 1)) + 1))
    return out


def _shown_lines(found: Any) -> list[tuple[str, int, int]]:
    if found.shown:
        return [(b["file_path"], b["start_line"], b["end_line"]) for b in found.shown["blocks"]]
    return [(c["file_path"], c["start_line"], c["end_line"]) for c in _cited(found)]


def cover(sets: Sequence[str], kind: str, k: int, tuning: bool) -> None:
    """Per set and kind: the share of the default's answers whose shown lines overlap the
    reference span, the share of the reference's lines shown (mean: a passage cut before the
    part that answers overlaps, but shows little of it), and the lines shown (median)."""
    rows: dict[tuple[str, str], list[tuple[bool, float, int]]] = defaultdict(list)
    rags: dict[Path, RagDB] = {}
    for question, _, db in questions(sets, kind, tuning):
        rag = rags.setdefault(db, RagDB(db, use_cache=False))
        hits = rag.search(question.question, k, Mode.hybrid)
        reference = _reference_lines(question)
        found = answer_with(rag, BLOCKS, question.question, hits, k)
        shown = _shown_lines(found)
        hit = any(p == rp and a <= rb and ra <= b
                  for p, a, b in shown for rp, ra, rb in reference)
        wanted = {(p, n) for p, a, b in reference for n in range(a, b + 1)}
        seen = {(p, n) for p, a, b in shown for n in range(a, b + 1)}
        share = len(wanted & seen) / len(wanted) if wanted else 0.0
        lines = sum(b - a + 1 for _, a, b in shown)
        for group in (set_group(question.set_name), "all"):
            rows[(group, question.kind)].append((hit, share, lines))
    for rag in rags.values():
        rag.close()
    print("| set | kind | n | shown lines overlap the reference | reference lines shown | "
          "lines shown p50 |\n|---|---|---|---|---|---|")
    for (group, kind_), values in sorted(rows.items()):
        n = len(values)
        print(f"| {group} | {kind_} | {n} | {sum(h for h, _, _ in values) / n:.0%} | "
              f"{sum(s for _, s, _ in values) / n:.0%} | "
              f"{statistics.median(x for _, _, x in values):.0f} |")


def sign_test(better: int, worse: int) -> float:
    """Two-sided exact sign test p-value (ties left out)."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(0, min(better, worse) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


RANK = {"yes": 2, "partly": 1, "no": 0}


def report(out: Path = OUT) -> None:
    """The readers' verdicts mapped back to variants, tallied per set and kind over every
    reading (one verdicts file a reader; a question two readers read counts twice); each
    variant against `before` where the key has one (a rule read on the answers it changed),
    else against `extractive`, paired within a reader (blank where no reading pairs)."""
    key = json.loads((out / "key.json").read_text())
    sets = {r["id"]: (set_group(r["set"]), r["kind"])
            for path in out.glob("answers_*.json") for r in json.loads(path.read_text())}
    base_variant = ("before" if any("before" in k.values() for k in key.values())
                    else "extractive")
    groups: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(list))
    for path in sorted(out.glob("verdicts_*.json")):
        for v in json.loads(path.read_text()):
            variant = key[v["id"]][v["letter"]]
            group, kind = sets.get(v["id"], ("?", "?"))
            for g in ((group, kind), ("all", kind), ("all", "all")):
                groups[g][variant].append({**v, "reading": (path.stem, v["id"])})
    print("| set | kind | variant | n | exam rule | satisfied y / p / n | unsupported | "
          f"better / worse than {base_variant} (sign test p) |\n"
          "|---|---|---|---|---|---|---|---|")
    for (group, kind), by_variant in sorted(groups.items()):
        base = {v["reading"]: RANK[v["satisfied"]] for v in by_variant.get(base_variant, [])}
        for variant, rows in sorted(by_variant.items()):
            n = len(rows)
            sat = [sum(r["satisfied"] == s for r in rows) for s in ("yes", "partly", "no")]
            paired = [(RANK[r["satisfied"]], base[r["reading"]]) for r in rows
                      if r["reading"] in base]
            better = sum(a > b for a, b in paired)
            worse = sum(a < b for a, b in paired)
            # Nothing to pair (no reading of the base, as for repos6's default alone): no
            # comparison, not a 0 / 0 that reads as one.
            versus = ("" if variant == base_variant or not paired
                      else f"{better} / {worse} (p = {sign_test(better, worse):.3f})")
            print(f"| {group} | {kind} | {variant} | {n} | "
                  f"{sum(bool(r['exam']) for r in rows) / n:.0%} | {sat[0]} / {sat[1]} / "
                  f"{sat[2]} | {sum(bool(r.get('unsupported')) for r in rows)} | {versus} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("answer", "cover", "report", "compare"))
    parser.add_argument("--sets", default="", help="comma-separated: vllm, repos, repos2, "
                        "repos3, repos4, repos5, repos6, repos7 [default: all whose index is "
                        "built, repos5, repos6 and repos7 only when named]")
    parser.add_argument("--variants", default=BLOCKS,
                        help=f"comma-separated, of {', '.join(ALL_VARIANTS)}")
    parser.add_argument("--kind", default="", choices=("", "docs", "code"))
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--tuning", action="store_true",
                        help="cover: on the tuning questions, not the sample")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--before", type=Path, help="compare: the saved answers before")
    parser.add_argument("--after", type=Path, help="compare: the saved answers after")
    parser.add_argument("--most", type=int, default=0,
                        help="compare: at most this many changed answers, by sha256 of the "
                        "id [default: all]")
    args = parser.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in ALL_VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant {unknown[0]!r} (known: {', '.join(ALL_VARIANTS)})")
    if args.action == "answer":
        answer_all(sets, variants, args.kind, args.k, args.out)
    elif args.action == "compare":
        if args.before is None or args.after is None:
            raise SystemExit("compare needs --before and --after (two answers_*.json files)")
        compare(args.before, args.after, args.out, max(0, args.most))
    elif args.action == "cover":
        cover(sets, args.kind, args.k, args.tuning)
    else:
        report(args.out)


if __name__ == "__main__":
    main()
