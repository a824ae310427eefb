"""FTS5's own tokens as rows, for engines without FTS5 (PostgreSQL's exact BM25).

The analysed texts (the path, context and body columns written to chunks_fts) go through the
very tokenizer chunks_fts declares, SQLite's `porter unicode61 remove_diacritics 2`, taken from
an in-memory apsw connection: the same stems, so the same BM25, as rag.db.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import cast

import apsw

FTS_TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])

Posting = tuple[str, int, int, int, int]  # term, chunk_id, tf_path, tf_context, tf_body


class Postings:
    """Term frequencies per column of analysed chunk texts, as FTS5 would count them."""

    def __init__(self) -> None:
        self._conn = apsw.Connection(":memory:")
        self._tokenize = self._conn.fts5_tokenizer(*FTS_TOKENIZER)

    def tokens(self, text: str, query: bool = False) -> list[str]:
        """Stems of `text`; `query` tokenizes as FTS5 does a MATCH term."""
        if not text:
            return []
        reason = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
        # Without offsets or colocated tokens apsw yields the tokens alone (str).
        return list(cast(Iterable[str], self._tokenize(
            text.encode("utf-8"), reason, None, include_offsets=False, include_colocated=False)))

    def of_chunk(self, chunk_id: int, path: str, context: str, body: str
                 ) -> tuple[list[Posting], int]:
        """The postings of one chunk and its FTS5 row length (tokens in all three columns)."""
        columns = [Counter(self.tokens(text)) for text in (path, context, body)]
        terms = set().union(*columns)
        rows = [(term, chunk_id, columns[0][term], columns[1][term], columns[2][term])
                for term in sorted(terms)]
        return rows, sum(sum(c.values()) for c in columns)

    def of_chunks(self, chunks: Iterable[tuple[int, str, str, str]]
                  ) -> tuple[list[Posting], list[tuple[int, int]]]:
        """Postings of many chunks (chunk_id, path, context, body) and (chunk_id, length)."""
        rows: list[Posting] = []
        lengths: list[tuple[int, int]] = []
        for chunk_id, path, context, body in chunks:
            chunk_rows, length = self.of_chunk(chunk_id, path, context, body)
            rows.extend(chunk_rows)
            lengths.append((chunk_id, length))
        return rows, lengths
