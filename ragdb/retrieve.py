"""Candidates from rag.db and their fused ranking: BM25 (FTS5), vectors (sqlite-vec), or both."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import apsw

from ragdb.errors import MissingIndexError, RagdbError
from ragdb.resources import sql
from ragdb.tokenize import fts_query

MAX_K = 100


class Mode(str, Enum):
    lexical = "lexical"
    dense = "dense"
    hybrid = "hybrid"


@dataclass(frozen=True)
class SearchParams:
    """Ranking knobs, chosen by measurement on the public sets (see README, Performance)."""

    w_path: float = 2.0
    w_context: float = 1.0
    w_body: float = 1.0


@dataclass(frozen=True, slots=True)
class Hit:
    chunk_id: int
    file_path: str
    first: int
    last: int
    start_line: int
    end_line: int
    kind: str
    score: float
    text: str

    @property
    def preview(self) -> str:
        """First non-blank line, for a one-line listing."""
        for line in self.text.splitlines():
            if line.strip():
                return line.strip()[:100]
        return ""


def check_k(k: object) -> int:
    """k must be a whole number from 1 to MAX_K; anything else is the caller's mistake."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise RagdbError(f"k must be an integer, got {k!r}")
    if not 1 <= k <= MAX_K:
        raise RagdbError(f"k must be between 1 and {MAX_K}, got {k}")
    return k


def index_is_empty(conn: apsw.Connection) -> bool:
    return not conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchall()


def search(
    conn: apsw.Connection,
    question: str,
    k: int,
    mode: Mode | str = Mode.lexical,
    params: SearchParams = SearchParams(),
) -> list[Hit]:
    """The k best chunks for a question; [] when the question has no searchable term."""
    check_k(k)
    mode = Mode(mode)
    if index_is_empty(conn):
        raise MissingIndexError("the index is empty: run `ragdb index` first")
    if mode is not Mode.lexical:
        raise RagdbError(f"--mode {mode.value} is not available yet; use --mode lexical")
    return lexical(conn, question, k, params)


def lexical(conn: apsw.Connection, question: str, k: int, params: SearchParams) -> list[Hit]:
    match = fts_query(question)
    if not match:
        return []
    rows = conn.execute(
        sql("search_lexical"),
        {
            "match": match,
            "k": k,
            "w_path": params.w_path,
            "w_context": params.w_context,
            "w_body": params.w_body,
        },
    )
    return [Hit(*row) for row in rows]
