"""Candidates from rag.db and their fused ranking: BM25 (FTS5), vectors (sqlite-vec), or both."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import TYPE_CHECKING, Any

import apsw

from ragdb.db import (
    Connection,
    Setting,
    generation,
    get_setting,
    read_transaction,
    search_legs,
    search_rows,
    vectors_version,
    write_if_free,
)
from ragdb.embedder import Embedder, load_embedder
from ragdb.errors import MissingIndexError, RagdbError
from ragdb.input_rules import check_k, check_text
from ragdb.resources import code_fingerprint, sql
from ragdb.result_order import callee_first, question_identifiers
from ragdb.run_lock import index_running
if TYPE_CHECKING:  # the models are imported where they are made: a search needs none
    from ragdb.schemas import MinimalSource, StudentSearchResults, UnansweredQuestion
from ragdb.tokenize import (
    STOPWORDS, analyse_terms, fts_query, named_identifiers, query_terms, written_names,
)
from ragdb.vectors import DOC_KINDS, has_vectors, to_int8, vector_kinds

#: The bridge leg reads the doc passages among the first this many results of a first run.
BRIDGE_FROM = 10


class Mode(str, Enum):
    lexical = "lexical"
    dense = "dense"
    hybrid = "hybrid"


#: Paths (lower-cased, GLOB) that answer few questions about how the code behaves: tests,
#: examples and release histories (SearchParams.prior). Measured: README, Performance.
_PRIOR_BELOW = (
    "*/tests/*", "*/test/*", "*/__tests__/*", "*/test_*.py", "*_test.py", "*_test.go",
    "*.test.*", "*.spec.*", "*/conftest.py", "*/examples/*", "*/example/*",
    "*/changelog*", "*/changes.*", "*/changes", "*/history.*", "*/news.*", "*/news",
)
#: The path prior's GLOBs (SearchParams.prior_paths): each "*/x" also as "x", at the top of a
#: path. A project indexed as README says (`ragdb index .`) stores its top-level tests as
#: "tests/test_app.py" and its changelog as "CHANGELOG.md", which "*/tests/*" and
#: "*/changelog*" never matched: the prior measured on the benchmark indexes (every stored path
#: there starts with "data/", so none of their 7,294 files is matched anew) now holds there.
PRIOR_PATHS = _PRIOR_BELOW + tuple(glob[2:] for glob in _PRIOR_BELOW if glob.startswith("*/"))


@dataclass(frozen=True)
class SearchParams:
    """Ranking knobs, chosen by measurement on the public sets (see README, Performance)."""

    w_path: float = 2.0  # BM25 column weights
    w_context: float = 1.0
    w_body: float = 1.0
    depth: int = 50  # candidates per leg before fusion
    # RRF constant and leg weights: c=10 keeps the top ranks of each leg decisive, and the
    # dense leg at 0.4 weight lets it reorder and rescue docs without outvoting BM25 on
    # identifiers (measured: README, Performance).
    rrf_c: float = 10.0
    w_lex: float = 1.0
    w_dense: float = 0.4
    # The lexical margin (hybrid): ranks hide how far the first BM25 hit leads the second, so
    # its lexical term is multiplied by its BM25 over the second hit's, capped at margin_cap
    # (1: off; sql/search_hybrid.sql). Measured: README, "Any codebase".
    margin_cap: float = 2.0
    windows_per_chunk: int = 4  # nearest windows fetched per dense candidate wanted
    # Cosine distance beyond which a window is not a match: nonsense queries measured 0.63+,
    # the best window of every public docs question 0.44 or less.
    max_distance: float = 0.6
    # A leg with no vectors for a kind cannot outvote the other leg on it: a chunk of a kind
    # the index does not embed (code, by default) gets w_absent on its lexical rank in place of
    # the dense term it cannot have, times the code gate (0 to 1; sql/search_hybrid.sql): the
    # product of the nearest window's distance going from gate_near to gate_far and of the best
    # code chunk's BM25 over the best doc chunk's going from gate_low to gate_high.
    w_absent: float = 0.8
    gate_near: float = 0.25
    gate_far: float = 0.45
    gate_low: float = 0.8
    gate_high: float = 1.2
    # The code gate forced to this value (0 to 1) for every question in place of the rule
    # above; None: the rule. For benchmarks that bound what a better gate could do
    # (benchmarks/bench_code_gate.py: 1 for code questions, 0 for docs ones).
    gate_override: float | None = None
    # Implementation first: chunks of files whose lower-cased path GLOBs one of prior_paths
    # have their score multiplied by `prior`. Tests, examples and changelogs repeat the code's
    # identifiers everywhere yet rarely answer how it behaves.
    prior_paths: tuple[str, ...] = PRIOR_PATHS
    prior: float = 0.3
    # Several repositories in one index: when a question names a project (a root's folder
    # name, or a first-level folder of a root that holds only folders), chunks outside the
    # named projects have their score multiplied by this.
    root_prior: float = 0.5
    # Plain words to code through the docs (the bridge leg, sql/search_hybrid.sql): the
    # identifiers named by the best `bridge_docs` doc passages among a first run's ten results
    # (at most `bridge_terms` of them, in order) query the code chunks again, each code chunk
    # adding w_bridge / (c + its rank there); w_bridge 0: off. Measured: README, "Any codebase".
    w_bridge: float = 0.2
    bridge_docs: int = 3
    bridge_terms: int = 64
    # Callee first (hybrid): when a code result calls an identifier the question writes and a
    # later code result defines it, the definition moves to just above the caller; nothing
    # else moves (callee_first). Measured: README, "Any codebase".
    callee_first: bool = True
    # The symbol leg (hybrid; sql/search_hybrid.sql): the chunks that define a name the
    # question writes (tokenize.written_names, looked up in the `symbols` table) are
    # candidates of their own, each adding w_symbol / (c + its rank there); a name defined more
    # than symbol_max times in the index points at no one definition and is left out.
    # w_symbol 0: off. Measured: benchmarks/README.md, "Symbols in retrieval (issue 41)".
    w_symbol: float = 0.25
    symbol_max: int = 5

    def as_sql(self) -> dict[str, float | int | str | None]:
        return {
            "w_path": self.w_path, "w_context": self.w_context, "w_body": self.w_body,
            "depth": self.depth, "c": float(self.rrf_c), "w_lex": float(self.w_lex),
            "w_dense": float(self.w_dense), "knn_depth": self.depth * self.windows_per_chunk,
            "max_distance": float(self.max_distance), "w_absent": float(self.w_absent),
            "gate_near": float(self.gate_near), "gate_far": float(self.gate_far),
            "gate_low": float(self.gate_low), "gate_high": float(self.gate_high),
            "gate_override": (None if self.gate_override is None
                              else float(self.gate_override)),
            "prior_paths": (json.dumps(list(self.prior_paths))
                            if self.prior_paths and self.prior != 1.0 else None),
            "prior": float(self.prior), "root_prior": float(self.root_prior),
            "w_bridge": float(self.w_bridge), "margin_cap": float(self.margin_cap),
            "w_symbol": float(self.w_symbol), "symbol_max": self.symbol_max,
            # Set per index and per question by Searcher._run: off when run as is.
            "dense_kinds": None, "named_roots": None, "bridge_match": None, "bridge_terms": None,
            "symbol_names": None,
        }


@dataclass(frozen=True)
class Filters:
    """Which files a search may return: path GLOBs and languages (files.kind), each OR-ed
    within its sort and AND-ed together, minus files matching an exclude GLOB; empty means
    everything. Applied inside the SQL."""

    paths: tuple[str, ...] = ()
    langs: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()

    @classmethod
    def of(cls, paths: Sequence[str] | str | None = None,
           langs: Sequence[str] | str | None = None,
           excludes: Sequence[str] | str | None = None) -> "Filters":
        """Filters from user input: one string or a list of them; blanks are dropped."""
        def clean(values: Sequence[str] | str | None, lower: bool) -> tuple[str, ...]:
            if values is None:
                return ()
            if isinstance(values, str):
                values = [values]
            out = []
            for value in values:
                if not isinstance(value, str):
                    raise RagdbError(f"a filter must be text, got {value!r}"[:120])
                value = check_text(value.strip(), "a filter")
                if len(value) > 1000:
                    raise RagdbError("a filter is over 1,000 characters")
                if value:
                    out.append(value.lower() if lower else value)
            return tuple(sorted(set(out)))
        return cls(clean(paths, False), clean(langs, True), clean(excludes, False))

    @property
    def active(self) -> bool:
        return bool(self.paths or self.langs or self.excludes)

    def as_sql(self) -> dict[str, Any]:
        paths, excludes = _folder_globs(self.paths), _folder_globs(self.excludes)
        return {
            "filtered": int(self.active),
            "paths": json.dumps(paths) if paths else None,
            "langs": json.dumps(list(self.langs)) if self.langs else None,
            "excludes": json.dumps(excludes) if excludes else None,
        }


def _folder_globs(globs: Sequence[str]) -> list[str]:
    """The GLOBs a path filter is matched with: a folder named as `index --exclude` names one
    (`docs/`), or a plain name without wildcards (`docs`, `./src`), also holds the files under
    it; `--path docs/` found nothing, silently. A glob with `[` also matches its brackets
    literally (`[` as `[[]`): Next.js, SvelteKit and Nuxt name files `[id].tsx` and folders
    `[slug]/`, which `--path 'pages/posts/[id].tsx'` read as a character class and missed."""
    out: list[str] = []
    for glob in globs:
        while glob.startswith("./"):
            glob = glob[2:]
        if glob.endswith("/"):
            glob = glob.rstrip("/") + "/*"
        elif glob and not any(c in glob for c in "*?["):
            out.append(glob + "/*")
        if glob and glob != "/*":
            out.append(glob)
            if "[" in glob:
                out.append(glob.replace("[", "[[]"))
                if not any(c in glob.replace("[", "").replace("]", "") for c in "*?"):
                    out.append(glob.replace("[", "[[]") + "/*")  # `app/[slug]`: a folder
    return sorted(set(out))


NO_FILTERS = Filters()


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
    language: str = ""  # the file's language (files.kind)
    #: Other files with the same bytes (sha256): they share this hit's result slot.
    duplicates: tuple[str, ...] = ()

    @classmethod
    def of_row(cls, row: Sequence[Any]) -> "Hit":
        """A hit from a row of sql/search_*.sql or sql/cache_hits.sql."""
        cid, path, first, last, start, end, kind, score, text, language, duplicates = row
        return cls(cid, path, first, last, start, end, kind, score, text, language,
                   tuple(json.loads(duplicates)) if duplicates else ())

    @property
    def source(self) -> MinimalSource:
        """The hit as the assignment's file format names a source."""
        from ragdb.schemas import MinimalSource

        return MinimalSource(file_path=self.file_path, first_character_index=self.first,
                             last_character_index=self.last)

    @property
    def preview(self) -> str:
        """First non-blank line, for a one-line listing."""
        for line in self.text.splitlines():
            if line.strip():
                return line.strip()[:100]
        return ""


def source_json(rank: int, hit: Hit, url: str | None = None) -> dict[str, Any]:
    """A hit as the HTTP API, the MCP server and `ragdb search --json` show it."""
    return {
        "rank": rank,
        "chunk_id": hit.chunk_id,
        "file_path": hit.file_path,
        "first_character_index": hit.first,
        "last_character_index": hit.last,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "kind": hit.kind,
        "language": hit.language,
        "score": hit.score,
        "preview": hit.preview,
        "url": url,
        "duplicates": list(hit.duplicates),
    }


def search_results(
    questions: Sequence[UnansweredQuestion], found: Sequence[list[Hit]], k: int
) -> StudentSearchResults:
    """A dataset's questions and their hits in the assignment's results format."""
    from ragdb.schemas import MinimalSearchResults, StudentSearchResults

    return StudentSearchResults(k=k, search_results=[
        MinimalSearchResults(
            question_id=question.question_id, question=question.question,
            question_str=question.question, retrieved_sources=[hit.source for hit in hits],
        )
        for question, hits in zip(questions, found)
    ])


def index_is_empty(conn: Connection) -> bool:
    return not conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchall()


# Must match the tokenize= option of chunks_fts in migrations/001_core.sql.
FTS_TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])


class Searcher:
    """Search over one open rag.db, keeping what queries can share between them.

    It holds SQLite's own FTS5 tokenizer (to stem query terms exactly as the index did), the
    index's common terms (reloaded when the index generation changes) and, loaded on first
    need only, the embedder: a fully cached run never loads a model.

    A search reads one committed state (one read transaction): the settings, the vectors and
    the rows it ranks are those of the same commit, and queries are embedded by the model that
    made the vectors of that commit (reloaded when an embedder switch has committed).
    """

    def __init__(
        self,
        conn: Connection,
        params: SearchParams = SearchParams(),
        *,
        use_cache: bool = True,
    ) -> None:
        self.conn = conn
        self.params = params
        self.use_cache = use_cache and not conn.readonly("main")
        self._stem = conn.fts5_tokenizer(*FTS_TOKENIZER)
        self._generation = -1
        self._common: frozenset[str] = frozenset()
        self._has_vectors = False
        self._state = (-1, -1)  # (generation, vectors version) _has_vectors was read at
        self._vectors_version = 0
        self._made_by: str | None = None  # identity of the model that made the vectors
        self._projects: list[tuple[str, str]] = []  # (folder name, stored path prefix)
        self._dense_kinds: str | None = None  # JSON: the file kinds the index embeds
        self._code_vectors = False
        self._embedder: Embedder | None = None
        self._loaded_for: str | None = None  # _made_by when the embedder was loaded
        self._mismatch = False  # the loaded embedder is not the one that made the vectors
        self._legs: Any = None  # PostgreSQL: the legs its settings name (db.search_legs)
        #: The reranking stage (ragdb.rerank.Reranking), set by RagDB; None: the fused order.
        self.rerank: Any = None

    # -- state shared by queries -------------------------------------------------------------

    def _refresh(self) -> None:
        """What this search depends on besides its arguments, as of its snapshot: vectors are
        committed batch by batch within one generation, and an embedder switch commits the
        new model's identity and name together, before its first vector."""
        current = generation(self.conn)
        version = vectors_version(self.conn)
        if current != self._generation:
            rows = self.conn.execute(sql("common_terms")).fetchall()
            self._common = frozenset(str(row[0]) for row in rows)
            self._projects = [(str(name).lower(), str(path))
                              for name, path in self.conn.execute(sql("search_projects"))]
            self._legs = search_legs(self.conn)
            self._generation = current
        if (current, version) != self._state:
            self._has_vectors = has_vectors(self.conn)
            kinds = vector_kinds(self.conn) if self._has_vectors else None
            self._dense_kinds = json.dumps(sorted(kinds)) if kinds is not None else None
            self._code_vectors = self._has_vectors and (kinds is None or bool(kinds - DOC_KINDS))
            self._state = (current, version)
        self._vectors_version = version
        self._made_by = get_setting(self.conn, Setting.EMBEDDER)
        if self._embedder is not None and self._made_by != self._loaded_for:
            self._embedder = None  # another model made the vectors now: embed queries with it

    @property
    def code_has_vectors(self) -> bool:
        """Whether the index embeds code chunks (a policy with code kinds), as of now."""
        self._refresh()
        return self._code_vectors

    @property
    def loaded_embedder(self) -> str | None:
        """The identity of the query embedder if it is loaded (a cached search loads none)."""
        return self._embedder.identity if self._embedder is not None else None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            name = get_setting(self.conn, Setting.EMBEDDER_NAME)
            self._loaded_for = get_setting(self.conn, Setting.EMBEDDER)
            self._embedder = load_embedder(name)
        return self._embedder

    def informative_terms(self, question: str) -> list[str]:
        """Query terms minus those in over half the chunks: same ranking, far fewer rows scored;
        all of them when every one is common (nothing to search for would answer nothing).

        Uses the common terms as of the last _refresh() (search_many does one per call).
        A question made only of stopwords ("What is ANY?", `any`) searches with them: it
        found nothing at all, though `ANY` is a name the code defines.
        """
        terms = query_terms(question) or [
            term for term in dict.fromkeys(analyse_terms(question))
            if len(term) > 1 or term.isdigit()]
        return self._informative(terms) or terms

    def _informative(self, terms: Sequence[str]) -> list[str]:
        """Terms with a stem outside the index's common terms (see informative_terms)."""
        kept = []
        for term in terms:
            stems = self._stems(term)
            if not stems or any(stem not in self._common for stem in stems):
                kept.append(term)
        return kept

    def _stems(self, term: str) -> list[str]:
        """FTS5's tokens of one query term (what it matches in the index)."""
        return list(self._stem(term.encode(), apsw.FTS5_TOKENIZE_QUERY, None,
                               include_offsets=False, include_colocated=False))

    # -- the search itself -------------------------------------------------------------------

    def search(self, question: str, k: int, mode: Mode | str = Mode.hybrid,
               filters: Filters = NO_FILTERS, *, remember: bool = True) -> list[Hit]:
        """The k best chunks for a question; [] when the question has nothing to search."""
        return self.search_many([question], k, mode, filters, remember=remember)[0]

    def search_many(
        self, questions: Sequence[str], k: int, mode: Mode | str = Mode.hybrid,
        filters: Filters = NO_FILTERS, *, remember: bool = True,
    ) -> list[list[Hit]]:
        """Several questions at once: the uncached ones are embedded in one batch.
        `remember` False reads the cache but writes nothing to it: answering leaves rag.db
        as it was (issue 39)."""
        check_k(k)
        mode = Mode(mode)
        results: list[list[Hit] | None] = []
        keys: list[str] = []
        self._mismatch = False
        with read_transaction(self.conn):  # one committed state for the whole search
            if index_is_empty(self.conn):
                if index_running(self.conn):  # its first run: "run `ragdb index`" misleads
                    raise MissingIndexError(
                        "the index is empty: its first index run is in progress; search "
                        "again when it has committed its files")
                roots = [str(row[0]) for row in self.conn.execute(sql("index_roots_known"))]
                if roots:  # "run `ragdb index`" misleads a user who just did
                    shown = ", ".join(roots[:5]) + (" ..." if len(roots) > 5 else "")
                    raise MissingIndexError(
                        f"the index is empty: its roots ({shown}) hold no file it indexes; "
                        "`ragdb index --verbose` names what it skips, --no-ignore and "
                        "--hidden walk what the ignore rules and hidden folders leave out")
                raise MissingIndexError("the index is empty: run `ragdb index` first")
            self._refresh()
            if mode is Mode.dense and not self._has_vectors:
                if self._made_by:  # an index run with vectors began: they are still to come
                    raise RagdbError(
                        "this index has no vectors yet for --mode dense: `ragdb index` "
                        "computes them; use --mode lexical meanwhile")
                raise RagdbError(
                    "this index has no vectors for --mode dense: run `ragdb index` without "
                    "--no-vectors to add them, or use --mode lexical"
                )
            for question in questions:
                key = self._cache_key(question, k, mode, filters)
                keys.append(key)
                results.append(self._cached(key) if self.use_cache else None)
            # A question without a single word (punctuation, blanks) has nothing to search for.
            todo = [i for i, hits in enumerate(results)
                    if hits is None and analyse_terms(questions[i])]
            vectors = self._query_vectors([questions[i] for i in todo], mode)
            kept: set[int] = set()  # left in fused order by the reranker: never cached
            for i in todo:
                if self.rerank is None:
                    results[i] = self._run(questions[i], k, mode, vectors.get(questions[i]),
                                           filters)
                    continue
                fused = self._run(questions[i], max(k, self.rerank.params.depth), mode,
                                  vectors.get(questions[i]), filters)
                results[i], used = self.rerank.reorder(self.conn, questions[i], fused, k)
                if not used:
                    kept.add(i)
        if self.use_cache and remember and not self._mismatch:  # after the snapshot ended
            for i in todo:
                if i not in kept:
                    self._remember(keys[i], results[i] or [])
        return [hits or [] for hits in results]

    def _query_vectors(self, questions: Sequence[str], mode: Mode) -> dict[str, bytes]:
        if mode is Mode.lexical or not self._has_vectors or not questions:
            return {}
        embedder = self.embedder
        if self._made_by and embedder.identity != self._made_by:
            # The name recorded loads another model than the one that made the vectors (a
            # local folder changed since): its queries would match nothing. No dense leg.
            self._mismatch = True
            if mode is Mode.dense:
                raise RagdbError(
                    f"the vectors in rag.db were made by {self._made_by}, but its embedder "
                    f"now loads as {embedder.identity}: run `ragdb index` to re-embed, or use "
                    "--mode lexical")
            return {}
        unique = list(dict.fromkeys(questions))
        vectors = to_int8(embedder.embed_queries(unique))
        return {q: v.tobytes() for q, v in zip(unique, vectors)}

    def _run(self, question: str, k: int, mode: Mode, vector: bytes | None,
             filters: Filters = NO_FILTERS) -> list[Hit]:
        planned = self.plan(question, k, mode, vector, filters)
        if planned is None:
            return []
        statement, params = planned
        if statement != "search_hybrid":
            return self._rows(statement, params)
        if self.params.w_bridge <= 0 or self._dense_kinds is None:
            return self._by_definitions(question, self._rows(statement, params))
        legs: dict[Any, Any] = {}  # both runs' lexical and dense legs are the same
        first = self._rows(statement, {**params, "k": max(k, BRIDGE_FROM)}, legs)
        terms = self._bridge_terms(question, first[:BRIDGE_FROM])
        if not terms:
            return self._by_definitions(question, first[:k])
        return self._by_definitions(question,
                                    self._rows(statement, self.bridged(params, terms), legs))

    def _by_definitions(self, question: str, hits: list[Hit]) -> list[Hit]:
        """Hybrid results re-ordered by the rule that reads definition names
        (ragdb.result_order): callee first, for a question that writes an identifier."""
        named = self.params.callee_first and bool(question_identifiers(question))
        if len(hits) < 2 or not named:
            return hits
        ids = json.dumps([hit.chunk_id for hit in hits])
        contexts = {int(row[0]): str(row[1] or "")
                    for row in self.conn.execute(sql("chunk_contexts"), {"ids": ids})}

        def code(hit: Hit) -> bool:
            return hit.language not in DOC_KINDS

        return callee_first(question, hits, contexts, code)

    def plan(self, question: str, k: int, mode: Mode, vector: bytes | None,
             filters: Filters = NO_FILTERS) -> tuple[str, dict[str, Any]] | None:
        """Which search file answers a question and with what parameters (for either engine:
        :match is the FTS5 expression rag.db's files take, :terms the informative terms it was
        made from, which the PostgreSQL files take as stems in its place, ragdb.pg_search);
        None when there is nothing to search. As of the last _refresh(). A hybrid search with
        bridge terms runs its file a second time (_run, `bridged`)."""
        terms = self.informative_terms(question) if mode is not Mode.dense else []
        match = fts_query(terms)
        params: dict[str, Any] = {**self.params.as_sql(),
                                  **filters.as_sql(), "k": k, "match": match, "terms": terms,
                                  "query_vector": vector, "dense_kinds": self._dense_kinds,
                                  "named_roots": self._named_roots(question)}
        if vector is None:  # lexical, or hybrid on an index without vectors
            return ("search_lexical", params) if match else None
        if mode is Mode.dense or not match:
            params["knn_depth"] = max(k, self.params.depth) * self.params.windows_per_chunk
            return "search_dense", params
        names = written_names(question) if self.params.w_symbol > 0 else []
        params["symbol_names"] = json.dumps(names) if names else None
        return "search_hybrid", params

    def bridge_terms(self, question: str, vector: bytes | None,
                     filters: Filters = NO_FILTERS) -> list[str]:
        """The identifiers a hybrid search of `question` sends to the bridge leg (its second
        run, _run); empty when it runs once. As of the last _refresh(): for benchmarks and
        tests that count the searches that run twice."""
        if self.params.w_bridge <= 0 or self._dense_kinds is None:
            return []
        planned = self.plan(question, BRIDGE_FROM, Mode.hybrid, vector, filters)
        if planned is None or planned[0] != "search_hybrid":
            return []
        return self._bridge_terms(question, self._rows(*planned))

    @staticmethod
    def bridged(params: dict[str, Any], terms: Sequence[str]) -> dict[str, Any]:
        """A hybrid search's parameters with its bridge leg on: :bridge_match, the FTS5
        expression of the bridge terms, and :bridge_terms, the terms themselves (stems on
        PostgreSQL, as :terms)."""
        return {**params, "bridge_match": fts_query(list(terms)), "bridge_terms": list(terms)}

    def _bridge_terms(self, question: str, hits: Sequence[Hit]) -> list[str]:
        """The identifiers the best doc passages among `hits` name (the kinds the index
        embeds), less the question's own terms and stopwords: the bridge leg's query."""
        kinds = set(json.loads(self._dense_kinds or "[]"))
        docs = [hit for hit in hits if hit.language in kinds][: self.params.bridge_docs]
        own = set(query_terms(question))
        named = (term for hit in docs for term in named_identifiers(hit.text))
        terms = [term for term in dict.fromkeys(named) if term not in own and term not in STOPWORDS]
        return self._informative(terms)[: self.params.bridge_terms]

    def _named_roots(self, question: str) -> str | None:
        """The projects (see SearchParams.root_prior) the question names, as JSON; None if none
        or if the prior is off."""
        if self.params.root_prior == 1.0 or not self._projects:
            return None
        text = question.lower()
        named = sorted(path for name, path in self._projects
                       if name and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text))
        return json.dumps(named) if named else None

    def _rows(self, statement: str, params: dict[str, Any],
              legs: dict[Any, Any] | None = None) -> list[Hit]:
        """A search file's hits: rag.db's sql/<statement>.sql, or on PostgreSQL its twin with
        the parameters ragdb.pg_search makes from the same ones."""
        rows = search_rows(self.conn, statement, params, self._legs, legs)
        return [Hit.of_row(row) for row in rows]

    # -- the query cache ---------------------------------------------------------------------

    def _cache_key(self, question: str, k: int, mode: Mode,
                   filters: Filters = NO_FILTERS) -> str:
        """Everything a search's result depends on besides the index generation (the cache
        row's own column): the question exactly as asked (identifier splitting is
        case-sensitive and the query vector sees every character), k, mode, filters, every
        ranking parameter, ragdb's own code (resources.code_fingerprint: an upgrade that
        ranks differently never reads an older version's entries), for the dense leg which
        model made the vectors and which commit of them this is (an index run commits them
        batch by batch), and when reranking, the reranker (its weights' fingerprint) and its
        parameters."""
        key: list[Any] = [question, k, mode.value, asdict(self.params),
                          [list(filters.paths), list(filters.langs), list(filters.excludes)],
                          code_fingerprint()]
        if mode is not Mode.lexical:
            key += [self._made_by, self._vectors_version, self._has_vectors]
        if self.rerank is not None:  # the reranker's identity (ragdb.rerank.Reranking.key)
            key.append(self.rerank.key)
        blob = json.dumps(key, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _cached(self, key: str) -> list[Hit] | None:
        rows = self.conn.execute(
            sql("cache_get"), {"key": key, "generation": self._generation}
        ).fetchall()
        if not rows:
            return None
        return [Hit.of_row(row)
                for row in self.conn.execute(sql("cache_hits"), {"hits": rows[0][0]})]

    def _remember(self, key: str, hits: list[Hit]) -> None:
        payload = json.dumps([[h.chunk_id, h.score] for h in hits])
        # Never wait on a writer just to cache; a read-only index or a full disk: searches go
        # on answering, uncached.
        self.use_cache = write_if_free(self.conn, sql("cache_put"), {
            "key": key, "generation": self._generation, "hits": payload,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        })


def source_span(conn: Connection, path: str, first: int, last: int) -> Hit | None:
    """The text and lines of a span of an indexed file, rebuilt from its chunks.

    None when the file is no longer in the index (or the span lies outside it). Characters
    between chunks are whitespace the chunker left out; a newline stands in for each.
    """
    rows = conn.execute(sql("source_chunks"), {"path": path, "first": first, "last": last})
    pieces: list[str] = []
    position = first
    chunk_id = start_line = end_line = 0
    kind = ""
    for cid, c_first, c_last, c_line, c_kind, text in rows:
        if not pieces:
            chunk_id, kind = int(cid), str(c_kind)
            start_line = int(c_line) + str(text)[: max(0, first - int(c_first))].count("\n")
        begin = max(position, int(c_first))
        if begin > position:
            pieces.append("\n" * (begin - position))
        end = min(last, int(c_last))
        if end > begin:
            pieces.append(str(text)[begin - int(c_first):end - int(c_first)])
            position = end
        end_line = int(c_line) + str(text)[: max(0, position - 1 - int(c_first))].count("\n")
    if not pieces:
        return None
    span = "".join(pieces)
    return Hit(chunk_id, path, first, position, start_line, end_line, kind, 0.0, span)
