"""The library's front door: one `RagDB` per rag.db, with everything ragdb does to it.

The CLI, the Datasette plugin, the benchmarks and the MCP server call these methods and do
nothing else with the lower layers: they parse, call one method, and present the result.

    from ragdb import RagDB
    rag = RagDB("data/processed/rag.db")
    rag.index(["data/raw"])
    for hit in rag.search("How do I load a LoRA adapter?", k=5):
        print(hit.file_path, hit.first, hit.last)
    print(rag.answer("How do I load a LoRA adapter?").text)
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragdb.answering import Answer, answer_dataset
from ragdb.db import (
    Connection,
    Location,
    Setting,
    bump_generation,
    checkpoint,
    connect,
    data_version,
    get_setting,
    location,
    read_transaction,
    scalar,
    search_legs,
    set_search_legs,
    shown,
    write_transaction,
)
from ragdb.db import generation as index_generation
from ragdb.embedder import Embedder
from ragdb.errors import ForeignDatabaseError, MissingIndexError, RagdbError
from ragdb.evaluate import MAX_K as DATASET_MAX_K
from ragdb.generate import named
from ragdb.generate.blocks import BlocksAnswerer
from ragdb.generate.answer_model import AnswerModel
from ragdb.generate.generator import NO_SOURCES_ASKED_MESSAGE, NO_SOURCES_MESSAGE, Generator
from ragdb.generate.models import ResolvedModel
from ragdb.generate.prompt import PromptSource, prompt_source
from ragdb.generate.remote import RemoteGenerator
from ragdb.generate.styles import CheckedAnswerer, Style, extractive_wanted
from ragdb.indexing import (
    MAX_CHUNK_SIZE, IndexStats, check_chunk_size, check_working_folder, update_index,
)
from ragdb.input_rules import (
    MAX_K, check_dataset_questions, check_k, check_path, check_question, one_line,
)
from ragdb.rerank import RerankParams, Reranking, reranking_spec
from ragdb.resources import sql
from ragdb.retrieve import (
    NO_FILTERS,
    Filters,
    Hit,
    Mode,
    Searcher,
    SearchParams,
    index_is_empty,
    search_results,
    source_span,
)
from ragdb.run_lock import index_lock, index_running
from ragdb.source_files import SourceFiles
from ragdb.tokenize import nothing_to_search

if TYPE_CHECKING:  # annotations only: a no-op index run never loads pydantic
    from ragdb.navigate import Listing
    from ragdb.schemas import (
        MinimalSource,
        RagDataset,
        StudentSearchResults,
        StudentSearchResultsAndAnswer,
    )
from ragdb.vectors import VectorStats, dense_coverage, has_vectors, vector_count
from ragdb.walking import (
    DEFAULT_EXCLUDE,
    DEFAULT_INCLUDE,
    WalkOptions,
    check_absolute_globs,
    check_roots,
    distinct_roots,
    stored_glob,
    stored_path,
    stored_under,
)

__all__ = ["RagDB", "IndexResult", "Root", "Filters"]


#: The answer model where no --model is given: any --model value (`NAME@URL` included).
MODEL_ENV = "RAGDB_MODEL"


def _warn_stderr(message: str) -> None:
    print(f"ragdb: warning: {message}", file=sys.stderr, flush=True)


@dataclass
class IndexResult:
    """What an index run did: rows (always) and vectors (unless --no-vectors)."""

    stats: IndexStats
    vectors: VectorStats | None
    generation: int
    roots: list[str]


@dataclass
class Root:
    """A folder (or file) indexed into rag.db, with its rows counted by SQL."""

    path: str
    added_at: str
    last_indexed_at: str
    files: int
    chunks: int
    options: dict[str, Any]  # the walk options of its last run: include, ignore, hidden


class RagDB:
    """One rag.db: index it, search it, answer from it. (Or a PostgreSQL database: `path` a
    postgresql:// URL; everything below works the same on it, see ragdb/postgres.py.)

    The connection, the Searcher (with its embedder) and the answer model are opened on first
    need and kept: a cached search never loads a model, a search never loads the answer model.
    One instance is meant for one thread at a time (the server keeps one per worker thread).
    """

    def __init__(
        self,
        path: Location | None = None,
        *,
        model: str | None = None,
        warn: Callable[[str], None] = _warn_stderr,
        use_cache: bool = True,
        rerank: bool | None = None,
        reranker: str | None = None,
        rerank_params: RerankParams = RerankParams(),
    ) -> None:
        """`rerank` and `reranker`: the reranking stage (ragdb.rerank.reranking_spec): None
        and None follow RAGDB_RERANKER, else the default (off); `rerank_params`: its depth
        and how its order meets the fused one."""
        #: A rag.db Path, or a postgresql:// URL (text).
        self.path: Location = location(path)
        self.use_cache = use_cache
        #: --model, else $RAGDB_MODEL (how `ragdb serve` and `ragdb mcp` are told too).
        self.model_spec = model if model is not None else (os.environ.get(MODEL_ENV) or None)
        self.warn = warn
        self._conn: Connection | None = None
        self._searcher: Searcher | None = None
        self._model = AnswerModel(self.model_spec)
        self._coverage: tuple[tuple[int, int], float | None] | None = None
        #: The reranker searches use (a folder or hub name), None: the fused order.
        self.reranker_spec = reranking_spec(rerank, reranker)
        self.rerank_params = rerank_params
        self._reranking: Reranking | None = None
        #: What reranking did in the last search (Reranking.info); None when off.
        self.last_rerank: dict[str, Any] | None = None

    # -- the connection --------------------------------------------------------------------

    @property
    def shown(self) -> str:
        """The database as messages name it (a URL without its password)."""
        return shown(self.path)

    def exists(self) -> bool:
        """Whether there may be an index to read: the file exists (a server is asked when
        connected to)."""
        return not isinstance(self.path, Path) or self.path.exists()

    @property
    def conn(self) -> Connection:
        """The open rag.db; a missing or foreign database is a one-line RagdbError."""
        if self._conn is None:
            self._conn = connect(self.path)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._searcher = None

    def __enter__(self) -> "RagDB":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- indexing --------------------------------------------------------------------------

    def index(
        self,
        roots: Sequence[Path | str] = (),
        *,
        max_chunk_size: int | None = None,
        include: Sequence[str] = DEFAULT_INCLUDE,
        exclude: Sequence[str] = DEFAULT_EXCLUDE,
        ignore: bool = True,
        hidden: bool = False,
        vectors: bool = True,
        embedder_name: str | None = None,
        embedder: Embedder | None = None,
        into_existing: bool = False,
        progress: Callable[[int], None] | None = None,
        on_files: Callable[[int], None] | None = None,
        on_embedded: Callable[[int, int], None] | None = None,
        follow_symlinks: bool = False,
        wait: bool = False,
        on_wait: Callable[[], None] | None = None,
        recorded: bool = False,
    ) -> IndexResult:
        """Bring rag.db in step with the files under `roots` (creating it if needed).

        Every file the walk reaches is indexed in its language, any other UTF-8 text as
        text (walking.WalkOptions); `include` globs add files the default rule leaves out
        (lockfiles, generated, minified, credentials), `exclude` globs take files out (an
        `include` wins);
        `ignore` honours .gitignore files, .git/info/exclude and their negations; `hidden`
        walks into folders whose name starts with a dot. No roots: every root recorded in
        rag.db, each walked with the options of its own last run (`include`, `exclude`,
        `ignore` and `hidden` are then not used), for re-indexing every repository.
        `max_chunk_size` None: the size rag.db was built with (a different one rebuilds every
        root), else the maximum. A root given twice in two spellings (`a`, `$PWD/a`) is
        indexed once.

        One run at a time per rag.db, whatever the door: while another runs, this one is
        refused with IndexRunningError ("another index run is in progress"), or with `wait`
        waits for it to end (`on_wait` is told once). `recorded`: the roots and options are
        the recorded ones (an absolute glob outside them is then not refused: the folder moved).
        """
        if max_chunk_size is not None:
            check_chunk_size(max_chunk_size)
        if not roots:
            return self._reindex_recorded(
                max_chunk_size=max_chunk_size, vectors=vectors, embedder_name=embedder_name,
                embedder=embedder, progress=progress, on_files=on_files,
                on_embedded=on_embedded, wait=wait, on_wait=on_wait)
        paths = distinct_roots([Path(check_path(r)) for r in roots])
        options = WalkOptions(include=tuple(include), exclude=tuple(exclude), ignore=ignore,
                              hidden=hidden, follow_symlinks=follow_symlinks)
        check_roots(paths)  # fail on a bad root before creating rag.db
        if not recorded:
            check_absolute_globs(paths, options)
        if self._conn is None:
            self._conn = connect(self.path, create=True, into_existing=into_existing)
        if max_chunk_size is None:
            max_chunk_size = self.stored_max_chunk_size()
        stats, vstats = update_index(
            self._conn, paths, max_chunk_size=max_chunk_size, options=options, vectors=vectors,
            embedder_name=embedder_name, embedder=embedder, progress=progress,
            on_files=on_files, on_embedded=on_embedded, wait=wait, on_wait=on_wait,
        )
        if stats.files_indexed or stats.files_removed or stats.full_rebuild:
            checkpoint(self._conn)  # old rows' page images leave rag.db-wal
        return IndexResult(stats, vstats, index_generation(self._conn), [str(p) for p in paths])

    def _reindex_recorded(self, **kwargs: Any) -> IndexResult:
        """One run per set of walk options among the recorded roots (usually just one)."""
        recorded = self._recorded_roots()
        if not recorded:
            raise RagdbError("nothing to index: give a folder, e.g. `ragdb index data/raw`")
        check_working_folder(self.conn, [Path(root.path) for root in recorded])
        for root in recorded:
            if not Path(root.path).exists():
                raise RagdbError(
                    f"the recorded root {root.path} is gone (no such file or directory): "
                    f"`ragdb roots --remove {shlex.quote(root.path)}` forgets it and its rows")
        groups: dict[WalkOptions, list[str]] = {}
        for root in recorded:
            groups.setdefault(WalkOptions.from_json(json.dumps(root.options)), []).append(root.path)
        result: IndexResult | None = None
        for options, paths in groups.items():
            done = self.index(paths, include=options.include, exclude=options.exclude,
                              ignore=options.ignore, hidden=options.hidden,
                              follow_symlinks=options.follow_symlinks, recorded=True,
                              **kwargs)
            if result is not None:
                done.stats = _add_stats(result.stats, done.stats)
                done.roots = result.roots + done.roots
            result = done
        assert result is not None
        return result

    def _recorded_roots(self) -> list[Root]:
        """The recorded roots; none where there is no index yet (a blank PostgreSQL database
        included; another application's is still refused)."""
        if isinstance(self.path, Path):
            return self.roots() if self.path.exists() else []
        try:
            return self.roots()
        except ForeignDatabaseError:
            raise
        except MissingIndexError:
            return []

    def root_paths(self) -> list[Path]:
        """The recorded roots' paths, a light read (`ragdb index --watch` looks for roots
        another run added every ROOTS_CHECK_MS)."""
        return [Path(str(path)) for path, _walk, _last
                in self.conn.execute(sql("index_roots_known")).fetchall()]

    def roots(self) -> list[Root]:
        """The indexed roots, with their files and chunks counted from the rows."""
        return [Root(str(p), str(a), str(t), int(f), int(c), json.loads(str(o) or "{}"))
                for p, a, t, o, f, c in self.conn.execute(sql("roots_list"))]

    def remove_root(self, root: Path | str) -> int:
        """Delete a root's files, chunks and vectors, and the root, in one transaction.

        `root` is a path as given to `index` (relative to the current folder, or absolute).
        Files another recorded root also holds stay. Returns the number of files removed.
        Refused while an index run is in progress (it would write vectors of removed chunks).
        """
        root = check_path(root)
        conn = self.conn
        known = {r.path for r in self.roots()}
        path = str(root) if str(root) in known else stored_path(Path(root))
        if path not in known:
            shown = ", ".join(sorted(known)) or "none"
            raise RagdbError(f"{root} is not an indexed root (roots: {shown})")
        with index_lock(conn), write_transaction(conn):
            removed = int(scalar(conn, sql("roots_remove"), {"path": path}) or 0)
            if removed and isinstance(self.path, Path):
                # Its files' terms leave the full-text index (an --include may have let a
                # .env in): FTS5 keeps a deleted row's terms in its segments until a merge.
                conn.execute(sql("index_fts_optimize"))
            bump_generation(conn)
        if removed:
            checkpoint(conn)
        return removed

    def legs(self) -> Any:
        """PostgreSQL: the legs the index ranks with (ragdb.pg_search.PgRanking); None for
        rag.db, which ranks one way."""
        return search_legs(self.conn)

    def set_legs(self, lexical: str | None = None, vectors: str | None = None,
                 ef_search: int | None = None) -> Any:
        """PostgreSQL: rank with these legs from now on (None keeps a leg as it is): exact BM25
        over the postings or pg_textsearch's index, exact vectors or HNSW. The indexes are
        built or dropped and the choice recorded in one transaction, under the index lock (an
        index run in progress refuses it); searches see the new legs at their next snapshot,
        and cached results of the old ones are dropped. Returns the legs now in force."""
        from ragdb.pg_search import PgRanking

        conn = self.conn
        current = search_legs(conn)
        if current is None:
            set_search_legs(conn, None)  # rag.db: refused in one line
        legs = PgRanking(lexical or current.lexical, vectors or current.vectors,
                         current.ef_search if ef_search is None else ef_search)
        with index_lock(conn), write_transaction(conn):
            set_search_legs(conn, legs)
            bump_generation(conn)
        return legs

    @property
    def generation(self) -> int:
        """The index generation: changes whenever an index run changed something."""
        return index_generation(self.conn)

    def last_roots(self) -> list[str]:
        """The roots of the last index run, as `ragdb index` was given them."""
        value = scalar(self.conn, sql("index_last_roots"))
        roots = json.loads(str(value)) if value else []
        return [str(r) for r in roots]

    def stored_max_chunk_size(self) -> int:
        """The chunk size rag.db was built with (the maximum for a new index): runs that are
        not given one keep it."""
        stored = get_setting(self.conn, Setting.MAX_CHUNK_SIZE)
        return int(stored) if stored else MAX_CHUNK_SIZE

    # -- searching -------------------------------------------------------------------------

    @property
    def searcher(self) -> Searcher:
        if self._searcher is None:
            self._searcher = Searcher(self.conn, use_cache=self.use_cache)
            self._searcher.rerank = self.reranking
        return self._searcher

    @property
    def reranking(self) -> Reranking | None:
        """The reranking stage (made, not loaded: its model compiles on first use)."""
        if self._reranking is None and self.reranker_spec is not None:
            self._reranking = Reranking(self.reranker_spec, self.rerank_params)
        return self._reranking

    def block_scorer(self) -> Callable[[str, Sequence[str]], list[float]] | None:
        """The reranker's scorer for the answer stage, to choose between candidate blocks
        (higher: more relevant; NaN where the model gave none); None when reranking is off."""
        stage = self.reranking
        return stage.score if stage is not None else None

    def _search_with_rerank(self, run: Callable[[], Any]) -> Any:
        """A search through the reranking stage, if on: its reranker resolved (fetched once,
        fingerprinted) before the index is read, its time and notes kept in last_rerank, and
        each search it left in fused order said once (RagDB.warn)."""
        stage = self.reranking
        if stage is None:
            self.last_rerank = None
            return run()
        stage.reset()
        stage.key  # a bad folder or an unreachable hub: one line, before any work
        found = run()
        self.last_rerank = stage.info()
        for note in stage.notes:
            self.warn(note)
        return found

    @property
    def embedder(self) -> Embedder:
        """The query embedder (the model that made this index's vectors), loaded once."""
        return self.searcher.embedder

    def search(self, question: str, k: int = 5, mode: Mode | str = Mode.hybrid,
               filters: Filters = NO_FILTERS, *, remember: bool = True) -> list[Hit]:
        """The k best chunks for a question, among the files the filters allow; `remember`
        False (a search for an answer) reads the query cache without writing it."""
        check_k(k)
        mode = _mode(mode)
        check_question(question)
        filters = self._checked_filters(filters)
        found: list[Hit] = self._search_with_rerank(
            lambda: self.searcher.search(question, k, mode, filters, remember=remember))
        return found

    def search_many(self, questions: Sequence[str], k: int,
                    mode: Mode | str = Mode.hybrid,
                    filters: Filters = NO_FILTERS) -> list[list[Hit]]:
        """Several questions at once: the uncached ones are embedded in one batch. A blank
        question gets no hits; one that breaks the question rule refuses them all."""
        check_k(k)
        mode = _mode(mode)
        for number, question in enumerate(questions, 1):
            check_question(question, what=f"question {number}", empty_ok=True)
        filters = self._checked_filters(filters)
        found: list[list[Hit]] = self._search_with_rerank(
            lambda: self.searcher.search_many(questions, k, mode, filters))
        return found

    def _checked_filters(self, filters: Filters) -> Filters:
        """Filters as every door hands them to the search: languages checked, and absolute
        path and exclude globs (`/home/me/proj/src/*.py`, how a coding agent names files over
        MCP) as the index stores paths (`src/*.py`), as outline reads a file's path."""
        self._check_langs(filters)
        if not any(g.startswith("/") for g in filters.paths + filters.excludes):
            return filters
        top = get_setting(self.conn, Setting.BASE_DIR) or ""
        return Filters.of([stored_glob(g, top) for g in filters.paths], list(filters.langs),
                          [stored_glob(g, top) for g in filters.excludes])

    def why_nothing_found(self, question: str, filters: Filters = NO_FILTERS) -> str | None:
        """Why a search found nothing, where the question or its filters tell, in one clause
        every door shows beside its empty result ("no sources found: ..."): words of one
        letter only (tokenize.nothing_to_search), a path filter that names no indexed file.
        None where the words were searched and matched nothing."""
        why = nothing_to_search(question)
        if why:
            return why
        unmatched = self.unmatched_paths(filters)
        if not unmatched:
            return None
        return (", ".join(f"path {one_line(glob)!r}" for glob in unmatched)
                + (" matches" if len(unmatched) == 1 else " match") + " no indexed file")

    def unmatched_paths(self, filters: Filters) -> list[str]:
        """The --path globs that match no indexed file (a typo, a folder never indexed), as
        given: said beside "no sources found", which read as if those files held nothing about
        the question (`--path nope/`). Asked only once a search found nothing; a glob outside
        the project stays a filter that matches nothing, on every door."""
        top = get_setting(self.conn, Setting.BASE_DIR) or ""
        unmatched = []
        for given in filters.paths:
            glob = stored_glob(given, top) if given.startswith("/") else given
            found = list(self.conn.execute(sql("files_path_matched"),
                                           {"paths": Filters.of([glob]).as_sql()["paths"]}))
            if not found or not found[0][0]:
                unmatched.append(given)
        return unmatched

    def _check_langs(self, filters: Filters) -> None:
        """A language filter the index holds no file of (a typo, `pyhton`) is refused in one
        line naming the ones it holds, rather than answered with "no sources found"."""
        if not filters.langs:
            return
        held = [str(row[0]) for row in self.conn.execute(sql("files_languages"))]
        unknown = [lang for lang in filters.langs if lang not in held]
        if unknown:
            named = ("language " if len(unknown) == 1 else "languages ") + ", ".join(
                repr(lang) for lang in unknown)
            raise RagdbError(f"{named} not in this index; its languages: "
                             f"{', '.join(held) or 'none (no files)'}"[:1000])

    def search_dataset(self, dataset: RagDataset, k: int = 10,
                       mode: Mode | str = Mode.hybrid,
                       filters: Filters = NO_FILTERS) -> StudentSearchResults:
        """Every question of a dataset, in the assignment's results format."""
        check_k(k, high=DATASET_MAX_K)
        questions = dataset.rag_questions
        found = self.search_many(check_dataset_questions(questions), k, mode, filters)
        return search_results(questions, found, k)

    def index_running(self) -> bool:
        """Whether an index run (any process, any door) is working on this rag.db now."""
        return index_running(self._conn if self._conn is not None and not isinstance(
            self.path, Path) else self.path)

    def mode_warning(self, mode: Mode | str) -> str | None:
        """What a search in this mode cannot find here, in one line; None when nothing is
        missing. Dense search on an index whose code has no vectors (the default policy
        embeds docs only) returns docs alone."""
        if _mode(mode) is not Mode.dense or not has_vectors(self.conn):
            return None
        if self.searcher.code_has_vectors:
            return None
        return ("code has no vectors in this index (only docs are embedded): --mode dense "
                "searches the docs alone; use hybrid or lexical to find code")

    def dense_coverage(self) -> float | None:
        """How complete the dense leg is (1.0 once every wanted chunk has its vector; less
        while an index run is still embedding, or after one was stopped, 0.0 when it was
        stopped before its first batch); None for an index built without vectors."""
        # Recomputed only when another connection committed (PRAGMA data_version) or this one
        # ran an index (generation): counting the vectors on every search cost ~4 ms.
        key = (data_version(self.conn), index_generation(self.conn))
        if self._coverage is None or self._coverage[0] != key:
            covered: float | None = None
            if has_vectors(self.conn):
                covered = round(dense_coverage(self.conn), 4)
            elif get_setting(self.conn, Setting.EMBEDDER) is not None:
                # An index run with vectors recorded its embedder, then stopped before its
                # first batch: the dense leg is empty, not absent (hybrid is BM25 alone).
                share = dense_coverage(self.conn)
                covered = round(share, 4) if share < 1 else None
            self._coverage = (key, covered)
        return self._coverage[1]

    def source_text(self, source: MinimalSource) -> PromptSource | None:
        """A stored source's text as the prompt shows it; None when its file left the index."""
        hit = source_span(self.conn, source.file_path, source.first_character_index,
                          source.last_character_index)
        return prompt_source(hit) if hit is not None else None

    # -- answering -------------------------------------------------------------------------

    def resolved_model(self) -> ResolvedModel:
        """Where the answer model is (found once; a hub probe at most, no load). Its warnings
        are held back until the model is really used: an extractive answer needs none."""
        return self._model.resolved()

    def generator(self) -> Generator | RemoteGenerator:
        """The answer model, resolved and loaded on first use and kept (an endpoint's: nothing
        to load, its requests are made per answer)."""
        return self._model.generator(self.warn)

    def answerer(self, style: Style | str = Style.auto, filters: Filters = NO_FILTERS
                 ) -> Generator | CheckedAnswerer | BlocksAnswerer:
        """Who answers: whole blocks of the sources when asked, or when the model that would
        answer is the small offline one (`auto`); otherwise the model, writing a few sentences
        over those blocks, checked, the offline SmolLM2 too: a sentence that fails the check is
        never shown (issue 37: SmolLM2 wrote "According to [1], [2] and [3],,,,"). Either way
        the blocks add the definition the question names (generate/named.py) from a file the
        search's `filters` allow."""
        files = SourceFiles(self.conn)  # each file read once by it
        blocks = BlocksAnswerer(files, files.included, partial(
            named.with_named,
            find=named.Lookup(self.conn, SearchParams().symbol_max, filters)))
        if extractive_wanted(Style(style), self.resolved_model):
            return blocks
        return CheckedAnswerer(self.generator(), blocks)

    @property
    def loaded_model(self) -> str | None:
        """The answer model in memory, if any (an extractive answer loads none)."""
        loaded = self._model.loaded
        return loaded.model if loaded is not None else None

    def answer(self, question: str, k: int = 10, mode: Mode | str = Mode.hybrid,
               on_token: Callable[[str], None] | None = None,
               filters: Filters = NO_FILTERS,
               style: Style | str = Style.auto) -> Answer:
        """Retrieve k sources and answer from them, citing them as [n]; k = 0 retrieves none."""
        check_k(k, low=0)
        mode = _mode(mode)
        if not check_question(question, empty_ok=True).strip():
            raise RagdbError("the question is empty: nothing to answer")
        self.conn  # a missing or foreign database is refused even when k = 0 retrieves nothing
        if k:
            filters = self._checked_filters(filters)
        started = time.perf_counter()
        if k:
            found = self._uses_answer(question, k, mode, filters, started)
            if found is not None:
                return found
        self.last_rerank = None
        hits = self._search_with_rerank(  # answering writes nothing into rag.db
            lambda: self.searcher.search(question, k, mode, filters, remember=False)
        ) if k else []
        search_ms = (time.perf_counter() - started) * 1000
        found = self.answer_from(question, hits, k=k, mode=Mode(mode), search_ms=search_ms,
                                 on_token=on_token, style=style, filters=filters)
        if not k and found.text == NO_SOURCES_MESSAGE:  # not "the index has nothing"
            found.text = NO_SOURCES_ASKED_MESSAGE
        if self.last_rerank is not None:
            found.timings.update(self.last_rerank)
        return found

    def _uses_answer(self, question: str, k: int, mode: Mode, filters: Filters,
                     started: float) -> Answer | None:
        """"Who calls X?", "where is X used?" (navigate.asks_for_uses) where X has a
        definition in the index: answered from the references, `path:line` a place with its
        enclosing definition, no search and no model; None for any other question."""
        from ragdb import navigate

        with read_transaction(self.conn):
            found = navigate.uses_answer(self.conn, question, filters)
        if found is None:
            return None
        text, listing = found
        timings = {"search_ms": round((time.perf_counter() - started) * 1000, 2)}
        return Answer(question, k, mode, [], text, timings=timings, style="references",
                      style_tried="references", shown=listing.to_json())

    def answer_from(self, question: str, hits: list[Hit], *, k: int, mode: Mode,
                    search_ms: float = 0.0,
                    on_token: Callable[[str], None] | None = None,
                    style: Style | str = Style.auto, filters: Filters = NO_FILTERS) -> Answer:
        """Answer from hits already retrieved (the server searches on its own thread) under
        the search's `filters` (the definition the question names is added only from a file
        they allow)."""
        timings: dict[str, Any] = {"search_ms": round(search_ms, 2)}
        if not hits:
            return Answer(question, k, mode, [], NO_SOURCES_MESSAGE, timings=timings)
        had_model = self._model.loaded is not None
        answerer = self.answerer(style, self._checked_filters(filters) if filters.active
                                 else filters)
        result = answerer.answer(question, [prompt_source(h) for h in hits], on_token=on_token)
        tried = Style.generate if isinstance(answerer, CheckedAnswerer) else Style.extractive
        made, why = tried, None
        if result.check is not None and result.check.get("fallback"):
            made = Style.extractive  # too little of the written answer passed the check
            why = result.check.get("fallback_reason") or "too little passed the check"
        loaded = self._model.loaded
        if loaded is not None:  # what loading the model cost this answer
            timings["load_s"] = 0.0 if had_model else round(loaded.load_s, 3)
        timings.update({
            "first_token_s": round(result.first_token_s, 3),
            "total_s": round(result.total_s, 3),
            "prompt_tokens": result.prompt_tokens,
            "new_tokens": result.new_tokens,
            "stopped_at_time_limit": result.stopped_at_time_limit,
        })
        return Answer(question, k, mode, hits, result.text, list(result.cited), result.model,
                      list(result.sources), timings, style=made.value, check=result.check,
                      style_tried=tried.value, fallback_reason=why, shown=result.shown)

    def answer_dataset(
        self,
        results: StudentSearchResults,
        out_path: Path,
        *,
        progress: Callable[[int, int], None] | None = None,
        style: Style | str = Style.auto,
    ) -> StudentSearchResultsAndAnswer:
        """Answer every question of a search-dataset output; a rerun resumes."""
        return answer_dataset(results, self.source_text, lambda: self.answerer(style),
                              out_path, progress=progress, warn=self.warn)

    # -- definitions and references (ragdb/navigate.py) --------------------------------------

    def definition(self, name: str, **options: Any) -> "Listing":
        """Where a name is defined (`LLM`, `LLM.generate`, `clap::Command`): a
        navigate.Listing of places, a page at a time. Options of every symbol read: filters
        (Filters: --path, --lang, --exclude), kinds, limit, offset."""
        return self._navigate("definitions", name, **options)

    def references(self, name: str, **options: Any) -> "Listing":
        """The uses of a name's definitions (resolved through imports and re-exports), then
        the uses of the name on objects of unknown type (unresolved)."""
        return self._navigate("references", name, **options)

    def callers(self, name: str, **options: Any) -> "Listing":
        """The definitions that call a name's definitions."""
        return self._navigate("callers", name, **options)

    def callees(self, name: str, **options: Any) -> "Listing":
        """What a name's definitions call, at the callees' definitions."""
        return self._navigate("callees", name, **options)

    def outline(self, path: str, **options: Any) -> "Listing":
        """A file's definitions in reading order (or every file's under a folder)."""
        return self._navigate("outline", self._as_stored(path), **options)

    def _as_stored(self, path: str) -> str:
        """A path as the shell spells it (absolute, or relative to the current folder: `ragdb
        outline "$PWD/src/app.py"`, `../src`) as the index stores it, where it names a file
        or folder on disk under the folder the index was built from; else as given (a stored
        path, or its tail)."""
        if not isinstance(path, str) or not isinstance(self.path, Path) or not path.strip():
            return path
        top = get_setting(self.conn, Setting.BASE_DIR)
        if not top or not os.path.exists(path.strip()):
            return path
        stored = stored_under(path.strip(), top)
        return path if stored is None or stored == os.curdir else stored

    def repo_map(self, tokens: int = 1024, filters: Filters = NO_FILTERS) -> Any:
        """The most referenced definitions with their signatures within `tokens` (PageRank
        over the reference graph): (text, entries)."""
        from ragdb.repo_map import repo_map

        filters = self._checked_filters(filters)
        with read_transaction(self.conn):
            return repo_map(self.conn, tokens, filters)

    def _navigate(self, what: str, name: str, *, filters: Filters = NO_FILTERS,
                  kinds: Sequence[str] | str | None = None, limit: object = None,
                  offset: object = 0) -> "Listing":
        from ragdb import navigate
        from ragdb.symbols import REF_KINDS

        known = REF_KINDS if what == "references" else navigate.KINDS
        default = navigate.MAX_LIMIT if what == "outline" else navigate.DEFAULT_LIMIT
        page = navigate.check_page(default if limit is None else limit, offset)
        checked = navigate.check_kinds(kinds, known)
        filters = self._checked_filters(filters)
        with read_transaction(self.conn):
            listing: navigate.Listing = getattr(navigate, what)(
                self.conn, name, filters, checked, *page)
        return listing

    # -- status ----------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """Counts and settings of the index, for people and for the HTTP API."""
        conn = self.conn
        return {
            "db_path": self.shown,
            "generation": index_generation(conn),
            "has_chunks": not index_is_empty(conn),
            "files": int(scalar(conn, "SELECT count(*) FROM files") or 0),
            "languages": {str(lang): int(n) for lang, n in conn.execute(
                "SELECT kind, count(*) FROM files GROUP BY kind ORDER BY count(*) DESC, kind")},
            "roots": [r.path for r in self.roots()],
            "chunks": int(scalar(conn, "SELECT count(*) FROM chunks") or 0),
            "vectors": vector_count(conn) if has_vectors(conn) else 0,
            "dense_coverage": self.dense_coverage(),
            "index_running": self.index_running(),
            "embedder": get_setting(conn, Setting.EMBEDDER_NAME),
            "reranker": self.reranker_spec,
            "max_k": MAX_K,
        }


def _add_stats(a: IndexStats, b: IndexStats) -> IndexStats:
    """Two runs' counts as one (chunks_total and full_rebuild: the later run's)."""
    skipped = dict(a.skipped)
    for why, n in b.skipped.items():
        skipped[why] = skipped.get(why, 0) + n
    languages = dict(a.languages)
    for lang, n in b.languages.items():
        languages[lang] = languages.get(lang, 0) + n
    return IndexStats(
        files_seen=a.files_seen + b.files_seen, files_indexed=a.files_indexed + b.files_indexed,
        files_unchanged=a.files_unchanged + b.files_unchanged,
        files_removed=a.files_removed + b.files_removed,
        chunks_written=a.chunks_written + b.chunks_written, chunks_total=b.chunks_total,
        seconds=a.seconds + b.seconds, full_rebuild=a.full_rebuild or b.full_rebuild,
        skipped=skipped, skipped_paths=a.skipped_paths + b.skipped_paths,
        skipped_before=a.skipped_before + b.skipped_before,
        parse_fallbacks=a.parse_fallbacks + b.parse_fallbacks,
        symbols_refreshed=a.symbols_refreshed + b.symbols_refreshed,
        fallback_paths=a.fallback_paths + b.fallback_paths, languages=languages)


def _mode(mode: Mode | str) -> Mode:
    """A search mode, or a one-line error naming the valid ones."""
    try:
        return Mode(mode)
    except ValueError:
        choices = ", ".join(m.value for m in Mode)
        raise RagdbError(f"mode must be one of {choices}, got {mode!r}"[:200]) from None
