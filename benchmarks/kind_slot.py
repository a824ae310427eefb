"""A slot for the missing kind: would a top k that always holds a doc and a code chunk lift code
questions? Issue 18's thirteenth round (README), a probe over the tuning pool only.

Where the top `slot` results of a hybrid search hold no chunk of one kind (no code, or no docs),
the best chunk of that kind further down (of the top 30) is moved up to rank `slot`; the list is
then cut to 10. "code only" moves code up and never docs. Recall as the graders count it (same
file, IoU > 0.05), per set and kind, against the search as it is.

    uv run --frozen python -m benchmarks.kind_slot
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchmarks.bench_repos import (REPOS2, REPOS_DB, VLLM_DB, Question, first_rank, recall,
                                    repo_questions, vllm_questions)
from benchmarks.common import host_line
from ragdb import RagDB
from ragdb.chunking import PROSE_FILE_KINDS
from ragdb.retrieve import Hit, Mode

DEPTH = 30
K = 10


def _is_doc(hit: Hit) -> bool:
    return hit.language in PROSE_FILE_KINDS


def with_slot(hits: Sequence[Hit], slot: int, kinds: Sequence[bool]) -> list[Hit]:
    """`hits` with the best hit of each kind in `kinds` (True: docs) at rank `slot` at the
    latest, where none of the first `slot` is of that kind; cut to K."""
    out = list(hits)
    for want_doc in kinds:
        if any(_is_doc(h) == want_doc for h in out[:slot]):
            continue
        below = next((i for i in range(slot, len(out)) if _is_doc(out[i]) == want_doc), None)
        if below is not None:
            out.insert(slot - 1, out.pop(below))
    return out[:K]


VARIANTS: list[tuple[str, int, tuple[bool, ...]]] = [
    ("slot 5, both kinds", 5, (True, False)), ("slot 5, code only", 5, (False,)),
    ("slot 4, both kinds", 4, (True, False)), ("slot 3, both kinds", 3, (True, False)),
]


def probe(name: str, db: Path, questions: Sequence[Question]) -> None:
    with RagDB(db, use_cache=False) as rag:
        found = rag.search_many([q.question for q in questions], DEPTH, Mode.hybrid)
    rows = [("as it is", [list(h[:K]) for h in found])]
    rows += [(label, [with_slot(h, slot, kinds) for h in found]) for label, slot, kinds in VARIANTS]
    for label, lists in rows:
        cells = []
        for kind in ("docs", "code"):
            ranks = [first_rank(q, h) for q, h in zip(questions, lists) if q.kind == kind]
            cells.append(" / ".join(f"{recall(ranks, c):.3f}" for c in (1, 5, 10)))
        print(f"| {name} | {label} | {cells[0]} | {cells[1]} |")


def main() -> None:
    print(host_line())
    print("| set | top 10 | docs R@1 / 5 / 10 | code R@1 / 5 / 10 |\n|---|---|---|---|")
    probe("repos half A", REPOS_DB, [q for q in repo_questions() if q.half == "A"])
    probe("repos2", REPOS2.db, repo_questions(REPOS2.folder, REPOS2.names))
    probe("vLLM public", VLLM_DB, vllm_questions())


if __name__ == "__main__":
    main()
