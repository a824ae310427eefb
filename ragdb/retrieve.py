"""Candidates from rag.db and their fused ranking: BM25 (FTS5), vectors (sqlite-vec), or both."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import apsw

from ragdb.errors import MissingIndexError, RagdbError
from ragdb.resources import sql
from ragdb import store
from ragdb.tokenize import fts_query, query_terms

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


# Must match the tokenize= option of chunks_fts in migrations/001_core.sql.
FTS_TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])


class Searcher:
    """Search over one open rag.db, keeping what queries can share between them.

    It holds SQLite's own FTS5 tokenizer (to stem query terms exactly as the index did) and
    the index's common terms, reloaded only when the index generation changes.
    """

    def __init__(self, conn: apsw.Connection, params: SearchParams = SearchParams()) -> None:
        self.conn = conn
        self.params = params
        self._stem = conn.fts5_tokenizer(*FTS_TOKENIZER)
        self._generation = -1
        self._common: frozenset[str] = frozenset()

    def _refresh(self) -> None:
        current = store.generation(self.conn)
        if current != self._generation:
            rows = self.conn.execute(sql("common_terms")).fetchall()
            self._common = frozenset(row[0] for row in rows)
            self._generation = current

    def informative_terms(self, question: str) -> list[str]:
        """Query terms minus those in over half the chunks: same ranking, far fewer rows scored."""
        self._refresh()
        kept = []
        for term in query_terms(question):
            stems = self._stem(term.encode(), apsw.FTS5_TOKENIZE_QUERY, None,
                               include_offsets=False, include_colocated=False)
            if not stems or any(stem not in self._common for stem in stems):
                kept.append(term)
        return kept

    def search(self, question: str, k: int, mode: Mode | str = Mode.lexical) -> list[Hit]:
        """The k best chunks for a question; [] when the question has no searchable term."""
        check_k(k)
        mode = Mode(mode)
        if index_is_empty(self.conn):
            raise MissingIndexError("the index is empty: run `ragdb index` first")
        if mode is not Mode.lexical:
            raise RagdbError(f"--mode {mode.value} is not available yet; use --mode lexical")
        return self.lexical(question, k)

    def lexical(self, question: str, k: int) -> list[Hit]:
        match = fts_query(self.informative_terms(question))
        if not match:
            return []
        rows = self.conn.execute(
            sql("search_lexical"),
            {
                "match": match,
                "k": k,
                "w_path": self.params.w_path,
                "w_context": self.params.w_context,
                "w_body": self.params.w_body,
            },
        )
        return [Hit(*row) for row in rows]
