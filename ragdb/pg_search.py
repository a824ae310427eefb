"""Ranking on PostgreSQL: the parameters sql/postgresql/search_*.sql take, made from the ones
the SQLite files take, so both engines rank the same question the same way.

The SQLite search files get an FTS5 MATCH expression and the query vector as int8 bytes; the
PostgreSQL ones get the same stems as a JSON array (:terms: FTS5's BM25 is computed over the
postings) and the vector as halfvec text. Every other parameter is passed as it is. Which
lexical leg (exact BM25 over the postings, or the pg_textsearch index) and which dense leg
(exact, or HNSW) a database uses is chosen when it is made (`ragdb copy --lexical/--vectors`)
and kept in its settings (PgRanking).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragdb.errors import RagdbError
from ragdb.postings import Postings
from ragdb.vectors import VECTOR_DIM

if TYPE_CHECKING:  # psycopg is the postgres extra: imported where a search needs it
    from ragdb.postgres import PostgresConnection

#: settings keys of a PostgreSQL index (PostgreSQL only: `ragdb copy` back to a rag.db drops
#: them).
LEXICAL = "pg_lexical"  # "postings" (exact BM25, the default) or "pg_textsearch"
VECTORS = "pg_vectors"  # "exact" (the default) or "hnsw"
EF_SEARCH = "pg_hnsw_ef_search"  # the HNSW scan's candidate list, at least the windows asked
PG_SETTINGS = frozenset({LEXICAL, VECTORS, EF_SEARCH})

LEXICAL_LEGS = ("postings", "pg_textsearch")
VECTOR_LEGS = ("exact", "hnsw")
#: hnsw.ef_search when the settings do not say (measured: README, PostgreSQL): pgvector
#: returns at most ef_search rows, so a search always asks for at least its :knn_depth.
DEFAULT_EF_SEARCH = 400


@dataclass(frozen=True)
class PgRanking:
    """Which legs a PostgreSQL index ranks with, as its settings record them."""

    lexical: str = "postings"
    vectors: str = "exact"
    ef_search: int = DEFAULT_EF_SEARCH

    def __post_init__(self) -> None:
        if self.lexical not in LEXICAL_LEGS:
            raise RagdbError(f"the lexical leg must be one of {', '.join(LEXICAL_LEGS)}, "
                             f"got {self.lexical!r}"[:160])
        if self.vectors not in VECTOR_LEGS:
            raise RagdbError(f"the vector leg must be one of {', '.join(VECTOR_LEGS)}, "
                             f"got {self.vectors!r}"[:160])
        if not 1 <= self.ef_search <= 1000:
            raise RagdbError(f"hnsw ef_search must be from 1 to 1000, got {self.ef_search}")

    @classmethod
    def of_settings(cls, settings: Mapping[str, str]) -> PgRanking:
        """The legs an index's settings name (the defaults where they name none)."""
        ef = settings.get(EF_SEARCH, "")
        return cls(settings.get(LEXICAL, "postings"), settings.get(VECTORS, "exact"),
                   int(ef) if ef.isdigit() else DEFAULT_EF_SEARCH)

    def as_settings(self) -> dict[str, str]:
        return {LEXICAL: self.lexical, VECTORS: self.vectors, EF_SEARCH: str(self.ef_search)}

    @property
    def hits_statement(self) -> str:
        """The lexical leg's file: exact BM25 over the postings, or the pg_textsearch index."""
        return "search_textsearch_hits" if self.lexical == "pg_textsearch" else "search_bm25_hits"

    def settings_params(self, knn_depth: int, filtered: bool) -> dict[str, Any]:
        """Parameters of sql/postgresql/search_settings.sql for one search."""
        return {"ef_search": min(1000, max(self.ef_search, knn_depth)),
                "iterative_scan": "relaxed_order" if filtered else "off",
                "bm25_scan": int(self.lexical == "pg_textsearch")}


_STEMMER: Postings | None = None


def query_stems(terms: Sequence[str]) -> list[str]:
    """The stems FTS5 matches for the phrases of `fts_query(terms)`, one per phrase, in order.

    A term is one phrase of the MATCH expression; FTS5's query tokenizer stems it. A term of
    no token (nothing FTS5 would match) is left out. A term of several tokens (which the
    question analysis does not make: it splits on what unicode61 splits on) is a phrase FTS5
    matches only where the tokens are adjacent; postings have no positions, so each of its
    tokens counts as a phrase of its own here.
    """
    global _STEMMER
    if _STEMMER is None:
        _STEMMER = Postings()
    stems: list[str] = []
    for term in terms:
        stems.extend(_STEMMER.tokens(term, query=True))
    return stems


def halfvec_text(vector: bytes) -> str:
    """An int8 query vector (384 bytes, sql/search_dense.sql's :query_vector) as the halfvec
    literal the PostgreSQL files cast (`CAST(:query_vector AS halfvec(384))`)."""
    if len(vector) != VECTOR_DIM:
        raise RagdbError(f"a query vector has {VECTOR_DIM} int8 values, got {len(vector)} bytes")
    values = memoryview(vector).cast("b").tolist()
    return "[" + ",".join(map(str, values)) + "]"


def pg_params(params: Mapping[str, Any], ranking: PgRanking = PgRanking()) -> dict[str, Any]:
    """The parameters of a sql/postgresql search file from those of the SQLite one (as
    Searcher.plan makes them): :terms and :bridge_terms, the informative terms the MATCH
    expressions were made from, become their stems (text[]: the planner counts an array's
    elements), the vector halfvec text."""
    out = {key: value for key, value in params.items() if key not in ("match", "bridge_match")}
    terms = list(params.get("terms") or [])
    out["terms"] = query_stems(terms)
    bridge = params.get("bridge_terms")
    out["bridge_terms"] = query_stems(bridge) if bridge else None
    out["query_text"] = " ".join(terms)
    vector = params.get("query_vector")
    out["query_vector"] = halfvec_text(vector) if isinstance(vector, bytes) else None
    out["ann"] = int(ranking.vectors == "hnsw")
    return out


#: What a search's legs found, kept for the second run of a hybrid search with a bridge leg
#: (Searcher._run): the lexical and dense legs are the same in both runs and are read once.
LegMemo = dict[tuple[Any, ...], tuple[list[int], list[float]]]


def search_rows(conn: PostgresConnection, statement: str, params: Mapping[str, Any],
                ranking: PgRanking = PgRanking(), memo: LegMemo | None = None,
                ) -> list[tuple[Any, ...]]:
    """Run a SQLite search file's PostgreSQL counterpart (Searcher.plan's statement and
    parameters) on a ragdb PostgreSQL database: its settings for this search, each leg's
    file (search_bm25_hits or search_textsearch_hits, search_knn), then
    sql/postgresql/<statement>.sql over the legs' hits, in one snapshot (the caller's, if one
    is open). The rows are sql/search_*.sql's. A leg found in `memo` is not run again; a
    hybrid search's symbol leg (search_symbol_hits, where the question writes names) is one."""
    values = pg_params(params, ranking)
    memo = {} if memo is None else memo
    depth, k = int(values["depth"]), int(values["k"])
    with conn.read_transaction():
        conn.run("search_settings", ranking.settings_params(int(values.get("knn_depth") or 0),
                                                            bool(values.get("filtered"))))
        if ranking.lexical == "pg_textsearch" and statement != "search_dense":
            values["allowed_file_ids"] = _allowed_files(conn, memo, values)
        if statement in ("search_lexical", "search_hybrid"):
            limit = depth if statement == "search_hybrid" else max(k, depth)
            values["hit_ids"], values["hit_scores"] = _leg(
                conn, memo, ranking.hits_statement, values, terms=values["terms"],
                query_text=values["query_text"], hits_limit=limit)
        if statement in ("search_dense", "search_hybrid"):
            values["dense_ids"], values["dense_distances"] = _leg(conn, memo, "search_knn",
                                                                  values)
        values["prior_likes"], values["prior_regex"] = compiled_globs(
            conn, values.get("prior_paths"))
        if statement == "search_hybrid":
            bridge = params.get("bridge_terms")
            values["bridge_ids"], values["bridge_scores"] = _leg(
                conn, memo, ranking.hits_statement, values, terms=values["bridge_terms"],
                query_text=" ".join(bridge), hits_limit=depth) if bridge else ([], [])
            names = values.get("symbol_names")
            values["symbol_ids"], values["symbol_names_held"] = _leg(
                conn, memo, "search_symbol_hits", values, symbol_names=names,
                symbol_max=values.get("symbol_max")) if names else ([], [])
        return list(conn.run(statement, values, prepare=True))  # a generic plan: its file


#: Files run as unnamed statements, never prepared on the server. Measured at 10x
#: (benchmarks/bench_scale.py, README "PostgreSQL"): a prepared search_textsearch_hits
#: returned the same rows as an unprepared one in 7.4 ms against 1.0 (psycopg prepares a
#: statement once it has run five times); the hybrid p50 fell from 29 to 16 ms.
UNPREPARED = frozenset({"search_textsearch_hits"})

#: The parameters each leg's file takes besides its own (the filters, the vector).
_LEG_PARAMS = ("filtered", "paths", "excludes", "langs", "w_path", "w_context", "w_body",
               "query_vector", "ann", "knn_depth", "max_distance")


def compiled_globs(conn: PostgresConnection,
                   patterns: str | None) -> tuple[list[str], str | None]:
    """A JSON array of GLOB patterns (the path priors, matched against whole paths) as
    sql/postgresql/search_glob_compile.sql compiles it (LIKE patterns, a regular expression),
    read once per connection for each set: the priors are the same in every search, and
    compiled as the fusion is planned they cost about 1.9 ms a run at 10x (README,
    PostgreSQL)."""
    if patterns not in conn.compiled_globs:
        row = conn.run("search_glob_compile", {"patterns": patterns, "tails": 0})[0]
        conn.compiled_globs[patterns] = (list(row[0]), row[1])
    return conn.compiled_globs[patterns]


def _allowed_files(conn: PostgresConnection, memo: LegMemo,
                   values: Mapping[str, Any]) -> list[int] | None:
    """The ids of the files the filters allow (the pg_textsearch leg's filter), None where no
    filter applies; read once for both runs of a bridged search."""
    if not values.get("filtered"):
        return None
    filters = ("langs", "paths", "excludes")
    key = ("search_allowed_files", *(repr(values.get(name)) for name in filters))
    if key not in memo:
        memo[key] = (list(conn.run("search_allowed_files", dict(values))[0][0]), [])  # bigint[]
    return memo[key][0]


def _leg(conn: PostgresConnection, memo: LegMemo, name: str, values: Mapping[str, Any],
         **own: Any) -> tuple[list[int], list[float]]:
    """A leg's hits as (chunk ids, scores) from sql/postgresql/<name>.sql, or from `memo`
    where the same file already ran with the same parameters."""
    args = {**values, **own}
    key = (name, *(repr(args.get(p)) for p in _LEG_PARAMS + tuple(sorted(own))))
    if key not in memo:
        rows = conn.run(name, args, prepare=False if name in UNPREPARED else None)
        memo[key] = ([int(row[0]) for row in rows], [float(row[1]) for row in rows])
    return memo[key]
