"""Does the claim check drop the written sentences blind readers found misreading their block?
(issue 39; the rule: ragdb/generate/wording.py).

A `compare` folder of bench_blocks holds, per question, the default answer (the blocks alone)
and the writer's (its kept sentences, then the same blocks), the key of the shuffled letters and
the readers' verdicts. The writer's sentences are the writer's answer less the default's text;
the blocks they cite are the default's, cut at their `[n] `path:start-end`` lines (the text the
check read when the answer was made). Each written answer is checked again, as the writers'
answers are (the order rule on), and tallied by the reader's `unsupported` mark: how many
sentences it drops, and how many answers would give way to the blocks alone (checking's
too_little). The word-level check without the order rule, the table's first row until the rules
it alone needed left the code, is in benchmarks/README.md as measured then.

This reads the readers' verdicts, so a rule chosen with it is chosen on them: it is validated
on answers nobody used to choose (a fresh writer run, read blind).

    uv run --frozen python -m benchmarks.bench_misread [--dir data/bench/blocks4wq] \
        [--stretch N] [--verbose]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import ragdb.generate.wording as wording
from benchmarks.common import BENCH_DIR, host_line
from ragdb.generate.checking import CitedSource, check_answer

DIR = BENCH_DIR / "blocks4wq"


def written_answers(folder: Path) -> list[dict[str, Any]]:
    """Each written answer of `folder`: its question, sentences, blocks and reader's marks."""
    key = json.loads((folder / "key.json").read_text())
    after = {a["id"]: a for a in json.loads((folder / "answers_after.json").read_text())}
    before = {a["id"]: a for a in json.loads((folder / "answers_before.json").read_text())}
    verdicts: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("verdicts_*.json")):
        for verdict in json.loads(path.read_text()):
            if key.get(verdict["id"], {}).get(verdict["letter"]) == "after":
                verdicts[verdict["id"]] = verdict
    out = []
    for qid, answer in after.items():
        alone = before[qid]["answer"]
        if qid not in verdicts or not answer["answer"].endswith(alone):
            continue
        out.append({"id": qid, "question": answer["question"],
                    "written": answer["answer"][:-len(alone)].strip(),
                    "sources": _blocks(alone, answer["shown"]["blocks"]),
                    "unsupported": bool(verdicts[qid].get("unsupported")),
                    "reason": verdicts[qid].get("reason", "")})
    return out


def _blocks(text: str, shown: list[dict[str, Any]]) -> list[CitedSource]:
    """The blocks of a default answer's text, each from its label line to the next one."""
    starts = sorted((text.index(f"[{b['n']}] `{b['file_path']}:{b['start_line']}-"
                                f"{b['end_line']}`"), b) for b in shown)
    out = []
    for i, (start, block) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        piece = text[start:end]
        body = piece.split(":\n", 1)[1] if ":\n" in piece else piece
        out.append(CitedSource(block["n"], block["file_path"], body.rstrip()))
    return out


def tally(answers: list[dict[str, Any]], verbose: bool = False) -> dict[bool, list[int]]:
    """Per reader's mark (unsupported or not): answers, sentences, dropped, given way."""
    rows = {True: [0, 0, 0, 0], False: [0, 0, 0, 0]}
    for item in answers:
        checked = check_answer(item["written"], item["sources"], question=item["question"])
        row = rows[item["unsupported"]]
        row[0] += 1
        row[1] += checked.report.sentences
        row[2] += checked.report.sentences - checked.report.kept
        row[3] += checked.too_little
        if verbose:
            mark = "U" if item["unsupported"] else "."
            fate = "blocks alone" if checked.too_little else "written"
            print(f"{mark} {item['id'][:8]} {checked.report.kept}/{checked.report.sentences} "
                  f"kept, {fate}: {item['written'][:110]!r}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=DIR)
    parser.add_argument("--stretch", type=int, default=None,
                        help=f"wording.STRETCH for this run [{wording.STRETCH}]")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    if not (args.dir / "key.json").exists():
        raise SystemExit(f"{args.dir} holds no key.json: a bench_blocks compare folder is needed")
    if args.stretch is not None:
        wording.STRETCH = args.stretch
    answers = written_answers(args.dir)
    print(f"{args.dir}: {len(answers)} written answers read; {host_line()}; "
          f"STRETCH {wording.STRETCH}")
    print("| check | unsupported: sentences dropped | answers to the blocks alone "
          "| others: sentences dropped | answers to the blocks alone |\n|---|---|---|---|---|")
    rows = tally(answers, args.verbose)
    bad, good = rows[True], rows[False]
    print(f"| in the block's order | {bad[2]} / {bad[1]} | {bad[3]} / {bad[0]} "
          f"| {good[2]} / {good[1]} | {good[3]} / {good[0]} |")


if __name__ == "__main__":
    main()
