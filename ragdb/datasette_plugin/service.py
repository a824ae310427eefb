"""The per-instance service behind ragdb's routes: one `RagDB` on a dedicated search thread,
index runs on a connection of their own, one answer model shared by all requests.

Plugin configuration lives in metadata under `"plugins": {"ragdb": {...}}`:

    db              path of rag.db for ragdb's own connection [the first database file served]
    corpus_roots    folders `POST /-/ragdb/index` re-indexes [the roots of the last index run]
    model           --model of `ragdb answer` [Qwen3-0.6B, else the offline SmolLM2]
    vectors         whether an index run also embeds new chunks [true]
    embedder        embedding model for index runs [the one the index was built with]
    include         file name globs for index runs [every language ragdb knows]
    max_body_bytes  the largest request body accepted [5 MB]
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import apsw

from ragdb.answering import Answer
from ragdb.database import RagDB
from ragdb.db import check_is_ragdb
from ragdb.embedder import DEFAULT_MODEL, Embedder, load_embedder
from ragdb.errors import MissingIndexError, RagdbError
from ragdb.indexing import DEFAULT_INCLUDE
from ragdb.resources import sql
from ragdb.retrieve import NO_FILTERS, Filters, Hit, Mode
from ragdb.vectors import has_vectors

PLUGIN = "ragdb"
API_PREFIX = "-/ragdb/"
DEFAULT_K = 5
DEFAULT_DATASET_K = 10
MAX_BODY_BYTES = 5 * 1024 * 1024
MAX_QUESTION_CHARS = 4000
RAGDB_TABLES = frozenset({"files", "chunks", "index_runs"})


def is_hidden_table(name: str) -> bool:
    """FTS and vec0 shadow tables and ragdb's caches: implementation details, not data."""
    return (
        name.startswith("chunks_fts")
        or name.startswith("chunk_vectors_")
        or name in {"query_cache", "fts_common_terms", "sqlite_sequence"}
    )


@dataclass
class PluginConfig:
    db: Path | None = None
    corpus_roots: list[Path] | None = None
    model: str | None = None
    vectors: bool = True
    embedder: str | None = None
    include: list[str] | None = None
    max_body_bytes: int = MAX_BODY_BYTES

    @classmethod
    def from_metadata(cls, raw: object) -> "PluginConfig":
        """Read `"plugins": {"ragdb": {...}}`; a wrong type fails at startup, not per request."""
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise RagdbError("the ragdb plugin configuration must be an object")

        def text(key: str) -> str | None:
            value = raw.get(key)
            if value is not None and not isinstance(value, str):
                raise RagdbError(f"plugin configuration ragdb.{key} must be a string")
            return value or None

        def texts(key: str) -> list[str] | None:
            value = raw.get(key)
            if value is None:
                return None
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise RagdbError(f"plugin configuration ragdb.{key} must be a list of strings")
            return list(value)

        db, model, embedder = text("db"), text("model"), text("embedder")
        roots, include = texts("corpus_roots"), texts("include")
        vectors = raw.get("vectors", True)
        limit = raw.get("max_body_bytes", MAX_BODY_BYTES)
        if not isinstance(vectors, bool):
            raise RagdbError("plugin configuration ragdb.vectors must be true or false")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise RagdbError("plugin configuration ragdb.max_body_bytes must be a positive integer")
        return cls(
            db=Path(db) if db else None,
            corpus_roots=[Path(r) for r in roots] if roots else None,
            model=model,
            vectors=vectors,
            embedder=embedder,
            include=include,
            max_body_bytes=limit,
        )


class ApiError(Exception):
    """An HTTP error with a message for the client; turned into `{"error": ...}` JSON."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class Cancelled(Exception):
    """Raised from the token callback when the client went away: stops generation early."""


def warn(message: str) -> None:
    print(f"ragdb: warning: {message}", file=sys.stderr, flush=True)


@dataclass
class IndexOutcome:
    stats: dict[str, Any]
    vectors: dict[str, Any] | None = None
    generation: int = 0
    roots: list[str] = field(default_factory=list)


class RagdbService:
    """What one Datasette instance keeps loaded for ragdb's routes.

    The `RagDB` (its apsw connection, Searcher and query embedder) lives on one dedicated
    thread: its caches are not thread-safe, and OpenVINO calls must not block the event loop.
    Index runs use a `RagDB` of their own in a worker thread, so searches keep reading the
    previous index (WAL) until the run commits; the Searcher reloads what depends on the
    index when the generation changes. The answer model, loaded on the first answer, is used
    by one request at a time.
    """

    def __init__(self, datasette: Any, config: PluginConfig) -> None:
        self.datasette = datasette
        self.config = config
        self.db_name: str | None = None
        self.db_path: Path | None = config.db
        self.is_ragdb = False
        self.hidden_tables: list[str] = []
        self.indexing = False
        self.last_index: dict[str, Any] | None = None
        self._search_pool = ThreadPoolExecutor(1, thread_name_prefix="ragdb-search")
        self._rag: RagDB | None = None
        self._generate_lock = asyncio.Lock()
        self._embedders: dict[str, Embedder] = {}
        self._embedder_lock = threading.Lock()
        self.index_progress: Callable[[int], None] | None = None  # per file, in the run's thread

    # -- which database is ragdb's ---------------------------------------------------------

    async def setup(self) -> None:
        """Pick the served database that is rag.db and note its internal tables."""
        files = [db for db in self.datasette.databases.values() if db.path and not db.is_memory]
        chosen = None
        if self.config.db is not None:
            wanted = self.config.db.resolve()
            chosen = next((db for db in files if Path(db.path).resolve() == wanted), None)
            if chosen is None:
                warn(f"{self.config.db} is not one of the databases Datasette serves: "
                     "the API works, links to rows do not")
        else:
            for db in files:
                if RAGDB_TABLES <= set(await db.table_names()):
                    chosen = db
                    break
            chosen = chosen or (files[0] if files else None)
            self.db_path = Path(chosen.path) if chosen is not None else None
        if chosen is not None:
            self.db_name = chosen.name
            await self.refresh_tables()

    async def refresh_tables(self) -> None:
        db = self.datasette.get_database(self.db_name)
        names = await db.table_names()
        self.is_ragdb = RAGDB_TABLES <= set(names)
        self.hidden_tables = sorted(n for n in names if is_hidden_table(n))

    # -- links -----------------------------------------------------------------------------

    def chunk_url(self, chunk_id: int) -> str | None:
        if self.db_name is None:
            return None
        return str(self.datasette.urls.row(self.db_name, "chunks", str(chunk_id)))

    def ask_url(self) -> str:
        return str(self.datasette.urls.path(API_PREFIX + "ask"))

    # -- searching -------------------------------------------------------------------------

    def _get_rag(self) -> RagDB:
        """Runs on the search thread only."""
        if self._rag is None:
            if self.db_path is None:
                raise MissingIndexError("Datasette serves no database file to search")
            rag = RagDB(self.db_path, model=self.config.model, warn=warn)
            rag.conn  # a missing or foreign database fails here, before anything is kept
            self._rag = rag
        return self._rag

    def warm_up(self) -> None:
        """Open the index and load the embedder now, so the first question does not wait."""
        def run() -> None:
            try:
                rag = self._get_rag()
                if has_vectors(rag.conn):
                    rag.embedder
            except Exception as exc:  # noqa: BLE001 - the first request reports it properly
                warn(f"could not open the index ahead of the first request: {exc}")
        self._search_pool.submit(run)

    async def _on_search_thread(self, fn: Callable[[RagDB], Any]) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._search_pool, lambda: fn(self._get_rag()))

    async def search(self, question: str, k: int, mode: Mode,
                     filters: Filters = NO_FILTERS) -> tuple[list[Hit], int]:
        """Hits and the index generation they came from."""
        def run(rag: RagDB) -> tuple[list[Hit], int]:
            hits = rag.search(question, k, mode, filters)
            return hits, rag.generation
        result: tuple[list[Hit], int] = await self._on_search_thread(run)
        return result

    async def search_many(self, questions: Sequence[str], k: int,
                          mode: Mode) -> list[list[Hit]]:
        result: list[list[Hit]] = await self._on_search_thread(
            lambda rag: rag.search_many(questions, k, mode)
        )
        return result

    async def status(self) -> dict[str, Any]:
        def run(rag: RagDB) -> tuple[int, bool]:
            status = rag.status()
            return status["generation"], status["has_chunks"]
        body: dict[str, Any] = {
            "database": self.db_name,
            "db_path": str(self.db_path) if self.db_path else None,
            "indexing": self.indexing,
            "last_index": self.last_index,
            "model": self._rag.loaded_model if self._rag is not None else None,
        }
        try:
            body["generation"], body["has_chunks"] = await self._on_search_thread(run)
        except RagdbError as exc:
            body["generation"], body["has_chunks"], body["problem"] = None, False, str(exc)
        return body

    # -- indexing --------------------------------------------------------------------------

    async def run_index(self) -> IndexOutcome:
        """One index run at a time; a second one while it runs is the caller's 409."""
        if self.indexing:
            raise ApiError(409, "an index run is already in progress; try again when it ends")
        self.indexing = True
        loop = asyncio.get_running_loop()
        try:
            outcome: IndexOutcome = await loop.run_in_executor(None, self._index_sync)
        except (apsw.BusyError, apsw.LockedError):
            raise ApiError(503, "another connection is writing rag.db (a `ragdb index` run?); "
                                "try again when it is done") from None
        finally:
            self.indexing = False
        self.last_index = {
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "generation": outcome.generation,
        }
        if self.db_name is not None:
            await self.refresh_tables()
        return outcome

    def _roots(self, conn: apsw.Connection) -> list[Path]:
        """Configured roots, else the roots rag.db records (every repository indexed into
        it), else those of the last run, else data/raw: never paths from the request."""
        if self.config.corpus_roots:
            return list(self.config.corpus_roots)
        recorded = [Path(path) for (path,) in conn.execute("SELECT path FROM roots ORDER BY path")]
        if recorded:
            return recorded
        cursor = conn.execute(sql("canned_index_runs"))
        try:
            column = [d[0] for d in cursor.getdescription()].index("roots")
        except apsw.ExecutionCompleteError:  # no run yet
            return [Path("data/raw")]
        for row in cursor:
            roots = json.loads(str(row[column]))
            if roots:
                return [Path(r) for r in roots]
        return [Path("data/raw")]

    def _index_sync(self) -> IndexOutcome:
        """The same steps as `ragdb index`, on a RagDB of its own (runs in a thread)."""
        if self.db_path is None:
            raise MissingIndexError("Datasette serves no database file to index into")
        if self.db_path.exists() and self.db_path.stat().st_size:
            check_is_ragdb(self.db_path)
        with RagDB(self.db_path, warn=warn) as rag:
            # Recorded roots (none configured) are re-indexed each as its own last run was.
            recorded = not self.config.corpus_roots and not self.config.include and bool(
                rag.roots())
            roots = [] if recorded else self._roots(rag.conn)
            name = self.config.embedder  # None: the one the index was built with
            result = rag.index(
                roots, max_chunk_size=rag.stored_max_chunk_size(),
                include=self.config.include or list(DEFAULT_INCLUDE),
                vectors=self.config.vectors, embedder_name=name,
                embedder=self._embedder(name, rag) if self.config.vectors else None,
                progress=self.index_progress,
            )
        stats = result.stats
        return IndexOutcome(
            {**asdict(stats), "files_skipped": stats.files_skipped},
            vectors=asdict(result.vectors) if result.vectors is not None else None,
            generation=result.generation, roots=result.roots,
        )

    def _embedder(self, name: str | None, rag: RagDB) -> Embedder:
        """The search thread's embedder when it is the same model (one copy in memory), else
        one loaded once per name and kept."""
        if name is None:
            shared: Embedder = self._search_pool.submit(
                lambda: self._get_rag().embedder
            ).result()
            return shared
        with self._embedder_lock:
            if name not in self._embedders:
                self._embedders[name] = load_embedder(name or DEFAULT_MODEL)
            return self._embedders[name]

    # -- answering -------------------------------------------------------------------------

    async def answer(
        self,
        question: str,
        k: int,
        mode: Mode,
        hits: list[Hit],
        search_ms: float,
        on_token: Callable[[str], None] | None = None,
        cancelled: threading.Event | None = None,
    ) -> Answer:
        """Answer from the hits (one generation at a time)."""
        def token(piece: str) -> None:
            if cancelled is not None and cancelled.is_set():
                raise Cancelled()
            if on_token is not None:
                on_token(piece)

        rag = await self._on_search_thread(lambda rag: rag)
        loop = asyncio.get_running_loop()
        async with self._generate_lock:
            answer: Answer = await loop.run_in_executor(None, lambda: rag.answer_from(
                question, hits, k=k, mode=mode, search_ms=search_ms, on_token=token))
        return answer


_SERVICES: "weakref.WeakKeyDictionary[Any, RagdbService]" = weakref.WeakKeyDictionary()


def service_for(datasette: Any) -> RagdbService:
    """The instance's service (created by the startup hook; lazily if a caller came first)."""
    found = _SERVICES.get(datasette)
    if found is None:
        found = RagdbService(datasette, PluginConfig.from_metadata(datasette.plugin_config(PLUGIN)))
        _SERVICES[datasette] = found
    return found


def existing_service(datasette: Any) -> RagdbService | None:
    """The instance's service if startup made one (hooks that must not create it)."""
    return _SERVICES.get(datasette)
