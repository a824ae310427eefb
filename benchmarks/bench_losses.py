"""Where the default answer loses a reader (issue 39): was the reference shown, ranked, or found?

    uv run --frozen python -m benchmarks.bench_losses [--dirs blocks4,blocks5,blocks6,blocks7]

Every saved blind reading of the default (`blocks`) in the given `data/bench/` folders (each a
`bench_blocks answer` run of one held-out set: answers_blocks.json, key.json, verdicts_*.json)
is put in one of three places, by a mechanical check against the question's reference span:

- shown: a block of the answer (its path:start-end) overlaps the reference's lines;
- ranked, not shown: the hybrid search (k 10, as the answer ran) ranks the reference (the
  graders' rule, `common.first_rank`) but no block shows it; split by rank 1, 2-5, 6-10, and by
  whether a block shows another part of the reference's file;
- not found: the reference is not in the top 10.

It then tallies the readers' satisfied yes / partly / no in each place, per kind. It reads
only saved answers and verdicts, and searches each question once on the set's bench index (as
built; nothing rebuilt), so it tells which stage a lost reading is lost in: retrieval (not
found), the choice among the ranked sources (ranked, not shown), or the block itself (shown,
but partly or no). Nothing here is tuned: it is a census.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.bench_blocks import _reference_lines, questions
from benchmarks.common import BENCH_DIR, first_rank, host_line
from ragdb import RagDB
from ragdb.retrieve import Mode

#: The folders read by default: the default answer read blind on repos4 ... repos7, each
#: set's 60 questions written before any ragdb run on it.
DIRS = {"blocks4": "repos4", "blocks5": "repos5", "blocks6": "repos6", "blocks7": "repos7"}
ANSWER = "blocks"
ORDER = ("yes", "partly", "no")


def readings(folder: Path) -> dict[str, list[str]]:
    """Each question's satisfied verdicts on the default answer, over every reader."""
    key = json.loads((folder / "key.json").read_text(encoding="utf-8"))
    out: dict[str, list[str]] = defaultdict(list)
    for path in sorted(folder.glob("verdicts_*.json")):
        for verdict in json.loads(path.read_text(encoding="utf-8")):
            if key.get(verdict["id"], {}).get(verdict["letter"]) == ANSWER:
                out[verdict["id"]].append(verdict["satisfied"])
    return out


def place(rank: int | None, shown: bool, same_file: bool) -> str:
    """Where one answer stands: shown, ranked at some depth and not shown, or not found."""
    if shown:
        return "shown"
    file = ", its file shown" if same_file else ""
    if rank is None:
        return f"not found in the top 10{file}"
    depth = "1" if rank == 1 else "2-5" if rank <= 5 else "6-10"
    return f"ranked {depth}, not shown{file}"


def census(dirs: dict[str, str]) -> list[dict[str, Any]]:
    """One row per reading: the set, kind, the reference's rank, where it stands, the verdict."""
    rows: list[dict[str, Any]] = []
    for name, set_name in dirs.items():
        folder = BENCH_DIR / name
        answers = {a["id"]: a for a in json.loads(
            (folder / f"answers_{ANSWER}.json").read_text(encoding="utf-8"))}
        verdicts = readings(folder)
        rags: dict[Path, RagDB] = {}
        for question, _, db in questions([set_name], ""):
            answer = answers.get(question.question_id)
            if answer is None or question.question_id not in verdicts:
                continue
            rag = rags.setdefault(db, RagDB(db, use_cache=False))
            rank = first_rank(question, rag.search(question.question, 10, Mode.hybrid))
            reference = _reference_lines(question)
            blocks = [(b["file_path"], b["start_line"], b["end_line"])
                      for b in (answer.get("shown") or {}).get("blocks", [])]
            shown = any(path == ref and first <= ref_last and ref_first <= last
                        for path, first, last in blocks for ref, ref_first, ref_last in reference)
            same_file = any(path in {ref for ref, _, _ in reference} for path, _, _ in blocks)
            for satisfied in verdicts[question.question_id]:
                rows.append({"set": set_name, "kind": question.kind, "rank": rank,
                             "place": place(rank, shown, same_file), "satisfied": satisfied})
        for rag in rags.values():
            rag.close()
    return rows


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Readings per kind and place, satisfied yes / partly / no."""
    lines = ["| kind | where the reference is | readings | yes / partly / no |",
             "|---|---|---|---|"]
    for kind in ("code", "docs"):
        counts = Counter((r["place"], r["satisfied"]) for r in rows if r["kind"] == kind)
        places = sorted({p for p, _ in counts}, key=lambda p: (p != "shown", p))
        for where in places:
            cells = [counts[(where, s)] for s in ORDER]
            lines.append(f"| {kind} | {where} | {sum(cells)} | "
                         f"{' / '.join(str(c) for c in cells)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dirs", default=",".join(DIRS),
                        help="folders under data/bench/, each one set's default read blind")
    args = parser.parse_args(argv)
    chosen = {name: DIRS[name] for name in args.dirs.split(",") if name}
    print(host_line())
    print(table(census(chosen)))


if __name__ == "__main__":
    main()
