"""Would the prose inside code (comments, docstrings) as a field of its own lift plain-words
code questions? Issue 18's thirteenth round (README), a probe of the signal, not a rule.

Plain-words code questions share words with what a comment says more than with the code's
identifiers, and in the body column those words are diluted by the code around them (BM25
normalises by the whole chunk's length). Over the tuning pool's code questions (repos half A,
repos2; the report sets are never run), every code chunk of the bench index is put in an
in-memory FTS5 table with two columns, its comments (`//`, `/* */`, `#`, docstrings, found by
a pattern) and its body, analysed as ragdb indexes text (tokenize.analyse), and ranked among
code chunks only by BM25 over: the body alone, the comments alone, both columns, and the body's
ranking fused with the comments' (RRF, c = 10, weights 0.3 / 0.5 / 1). Recall as the graders
count it (same file, IoU > 0.05).

    uv run --frozen python -m benchmarks.code_comments
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from benchmarks.bench_repos import (IOU_THRESHOLD, REPOS2, REPOS_DB, Question, iou,
                                    repo_questions)
from benchmarks.common import host_line
from ragdb.schemas import MinimalSource
from ragdb.tokenize import analyse, fts_query, query_terms

COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/|(?<![\w\"'])#(?![!\[{])[^\n]*|\"\"\"[\s\S]*?\"\"\"|"
                     r"'''[\s\S]*?'''", re.S)
PROSE_KINDS = {"markdown", "rst", "text", "asciidoc", "org", "rdoc"}
DEPTH = 100
RRF_C = 10


def _code_table(db: Path) -> tuple[sqlite3.Connection, dict[int, MinimalSource]]:
    source = sqlite3.connect(db)
    rows = source.execute("SELECT c.id, f.path, c.first_char, c.last_char, c.text, f.kind "
                          "FROM chunks AS c JOIN files AS f ON f.id = c.file_id").fetchall()
    source.close()
    table = sqlite3.connect(":memory:")
    table.execute("CREATE VIRTUAL TABLE t USING fts5(comments, body, "
                  "tokenize = 'porter unicode61 remove_diacritics 2')")
    where: dict[int, MinimalSource] = {}
    for chunk_id, path, first, last, text, kind in rows:
        if kind in PROSE_KINDS:
            continue
        comments = " ".join(m.group() for m in COMMENT.finditer(text))
        table.execute("INSERT INTO t(rowid, comments, body) VALUES (?, ?, ?)",
                      (chunk_id, analyse(comments), analyse(text)))
        where[chunk_id] = MinimalSource(file_path=path, first_character_index=first,
                                        last_character_index=last)
    return table, where


def _ranked(table: sqlite3.Connection, match: str, weights: str) -> list[int]:
    try:
        return [r for (r,) in table.execute(
            f"SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t, {weights}) LIMIT {DEPTH}",
            (match,))]
    except sqlite3.OperationalError:  # a question with no term left
        return []


def _rank(ids: Sequence[int], question: Question, where: dict[int, MinimalSource]
          ) -> int | None:
    refs = [MinimalSource(file_path=p, first_character_index=a, last_character_index=b)
            for p, a, b in question.sources]
    for rank, chunk_id in enumerate(ids, 1):
        if any(iou(ref, where[chunk_id]) > IOU_THRESHOLD for ref in refs):
            return rank
    return None


def probe(name: str, db: Path, questions: Sequence[Question]) -> None:
    table, where = _code_table(db)
    ranks: dict[str, list[int | None]] = {}
    for question in questions:
        match = fts_query(query_terms(question.question))
        body = _ranked(table, match, "0.0, 1.0")
        comments = _ranked(table, f"comments : ({match})", "1.0, 0.0")
        ranks.setdefault("body", []).append(_rank(body, question, where))
        ranks.setdefault("comments", []).append(_rank(comments, question, where))
        ranks.setdefault("both columns", []).append(
            _rank(_ranked(table, match, "1.0, 1.0"), question, where))
        for w in (0.3, 0.5, 1.0):
            score: dict[int, float] = {}
            for rank, chunk_id in enumerate(body, 1):
                score[chunk_id] = score.get(chunk_id, 0.0) + 1 / (RRF_C + rank)
            for rank, chunk_id in enumerate(comments, 1):
                score[chunk_id] = score.get(chunk_id, 0.0) + w / (RRF_C + rank)
            fused = sorted(score, key=lambda c: -score[c])
            ranks.setdefault(f"body + comments RRF {w}", []).append(_rank(fused, question, where))
    for label, found in ranks.items():
        cells = " / ".join(f"{sum(1 for r in found if r is not None and r <= c) / len(found):.3f}"
                           for c in (1, 5, 10))
        print(f"| {name} ({len(found)}) | {label} | {cells} |")


def main() -> None:
    print(host_line())
    print("| set | ranking among code chunks | R@1 / 5 / 10 |\n|---|---|---|")
    half_a = [q for q in repo_questions() if q.half == "A" and q.kind == "code"]
    probe("repos half A code", REPOS_DB, half_a)
    repos2 = [q for q in repo_questions(REPOS2.folder, REPOS2.names) if q.kind == "code"]
    probe("repos2 code", REPOS2.db, repos2)


if __name__ == "__main__":
    main()
