"""The per-instance service behind ragdb's routes: one `RagDB` on a dedicated search thread,
index runs on a connection of their own, one answer model shared by all requests.

Plugin configuration lives in metadata under `"plugins": {"ragdb": {...}}`:

    db              path of rag.db for ragdb's own connection [the first database file served],
                    or a postgresql:// URL (Datasette then serves no database; the API does)
    corpus_roots    folders `POST /-/ragdb/index` re-indexes [the roots of the last index run]
    model           --model of `ragdb answer` [Qwen3-0.6B, else the offline SmolLM2]
    vectors         whether an index run also embeds new chunks [true]
    embedder        embedding model for index runs [the one the index was built with]
    include         globs index runs add to the default file rule [none]
    exclude         globs index runs take out of it (an include wins) [none]
    max_body_bytes  the largest request body accepted [5 MB]
    allowed_hosts   Host header names accepted besides loopback ones ["*": any]
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import queue
import sys
import threading
import time
import weakref
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing.managers import SyncManager
from pathlib import Path
from typing import Any, Callable, Sequence

from ragdb.answering import Answer
from ragdb import worker
from ragdb.db import Location, location, shown
from ragdb.errors import (
    DatabaseBusyError,
    IndexRunningError,
    MissingIndexError,
    RagdbError,
    UnavailableError,
)
from ragdb.generate.style import Style
from ragdb.walking import WalkOptions
from ragdb.retrieve import NO_FILTERS, Filters, Hit, Mode

PLUGIN = "ragdb"
API_PREFIX = "-/ragdb/"
DEFAULT_K = 5
#: An answer reads the top 10, at every door (the CLI, RagDB.answer, MCP): the blind readings
#: measured answers at k 10 (benchmarks/README.md, "Which answer style?").
DEFAULT_ANSWER_K = 10
DEFAULT_DATASET_K = 10
MAX_BODY_BYTES = 5 * 1024 * 1024
#: Questions one `search-dataset` request may hold, and how many go to the search worker at
#: a time: a short search waits for one batch, not for the whole dataset.
MAX_DATASET_QUESTIONS = 1000
DATASET_BATCH = 16
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
    db: Location | None = None
    corpus_roots: list[Path] | None = None
    model: str | None = None
    vectors: bool = True
    embedder: str | None = None
    include: list[str] | None = None
    exclude: list[str] | None = None
    max_body_bytes: int = MAX_BODY_BYTES
    allowed_hosts: list[str] | None = None

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
        roots, include, exclude = texts("corpus_roots"), texts("include"), texts("exclude")
        WalkOptions(include=tuple(include or ()), exclude=tuple(exclude or ()))  # checks them
        allowed_hosts = texts("allowed_hosts")
        vectors = raw.get("vectors", True)
        limit = raw.get("max_body_bytes", MAX_BODY_BYTES)
        if not isinstance(vectors, bool):
            raise RagdbError("plugin configuration ragdb.vectors must be true or false")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise RagdbError("plugin configuration ragdb.max_body_bytes must be a positive integer")
        return cls(
            db=location(db) if db else None,
            corpus_roots=[Path(r) for r in roots] if roots else None,
            model=model,
            vectors=vectors,
            embedder=embedder,
            include=include,
            exclude=exclude,
            max_body_bytes=limit,
            allowed_hosts=allowed_hosts,
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


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def host_allowed(host_header: str, allowed: frozenset[str], server_port: int | None) -> bool:
    """Whether a Host header names this server: a loopback or configured name, and the port
    it listens on (DNS rebinding gives an attacker's name to our address)."""
    host = host_header.strip().lower()
    port: str | None = None
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        if rest.startswith(":"):
            port = rest[1:]
        elif rest:
            return False
    else:
        name, colon, port_text = host.partition(":")
        port = port_text if colon else None
    if "*" not in allowed and name.rstrip(".") not in allowed:
        return False
    if port is not None:
        if not port.isdigit():
            return False
        if server_port is not None and int(port) != server_port:
            return False
    return True


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
        self.db_path: Location | None = config.db
        self.is_ragdb = False
        self.hidden_tables: list[str] = []
        self.indexing = False
        self.last_index: dict[str, Any] | None = None
        self.model: str | None = None  # the answer model loaded in the answer worker, if any
        self._pools: dict[str, ProcessPoolExecutor] = {}
        self._manager: Any = None
        self._generate_lock = asyncio.Lock()

    # -- which database is ragdb's ---------------------------------------------------------

    async def setup(self) -> None:
        """Pick the served database that is rag.db and note its internal tables."""
        files = [db for db in self.datasette.databases.values() if db.path and not db.is_memory]
        chosen = None
        if isinstance(self.config.db, str):  # PostgreSQL: no file of Datasette's is it
            return
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

    async def refuse_held_secrets(self) -> None:
        """Refuse to serve an index that holds files today's rules leave out as secrets (an
        older ragdb indexed them: worker.check, as `ragdb serve` and `ragdb mcp` refuse it),
        for a plain `datasette rag.db` too: Datasette would serve every row. Checked in a
        worker process (this one reads rag.db through Datasette's SQLite only), once per
        index and process (`ragdb serve` checks before Datasette starts: mark_checked). A
        database that is no index (another application's, a missing file) is left to the
        routes, which answer 503 for it. RagdbError: the one-line refusal."""
        target = self.db_path
        if target is None or _checked_key(target) in _CHECKED:
            return
        if isinstance(target, Path) and not target.is_file():
            return
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=worker.die_with_parent,
                                 initargs=(os.getpid(),)) as pool:
            try:
                await asyncio.get_running_loop().run_in_executor(pool, worker.check,
                                                                 str(target))
            except MissingIndexError:
                return
        mark_checked(target)

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

    # -- the workers -----------------------------------------------------------------------

    def _pool(self, name: str) -> ProcessPoolExecutor:
        """A one-process pool per job ("search", "answer", "index"): see worker.py for why the
        server process itself never opens rag.db with apsw."""
        if self.db_path is None:
            raise MissingIndexError("Datasette serves no database file to search")
        pool = self._pools.get(name)
        if pool is None:
            pool = ProcessPoolExecutor(
                1, mp_context=multiprocessing.get_context("spawn"), initializer=worker.init,
                initargs=(str(self.db_path), self.config.model, os.getpid()),
            )
            self._pools[name] = pool
        return pool

    async def _call(self, pool: str, fn: Callable[..., Any], *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool(pool), fn, *args)
        except BrokenProcessPool:
            self._pools.pop(pool, None)  # the worker died (killed, out of memory): a new one
            raise UnavailableError("ragdb's worker process ended unexpectedly; try again"
                                   ) from None

    def close(self) -> None:
        for pool in self._pools.values():
            pool.shutdown(wait=False, cancel_futures=True)
        self._pools.clear()
        if self._manager is not None:
            self._manager.shutdown()
            self._manager = None

    # -- searching -------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Open the index and load the embedder now, so the first question does not wait."""
        def done(future: Any) -> None:
            if future.exception() is not None:
                warn(f"could not open the index ahead of the first request: "
                     f"{future.exception()}")
        try:
            self._pool("search").submit(worker.warm_up).add_done_callback(done)
        except RagdbError as exc:
            warn(f"could not open the index ahead of the first request: {exc}")

    async def search(self, question: str, k: int, mode: Mode, filters: Filters = NO_FILTERS,
                     remember: bool = True) -> worker.SearchOutcome:
        """Hits, the index generation they came from, how complete the dense leg is, the
        warnings (what the mode cannot find in this index; for no hits, why: worker.search)
        and what reranking did (RagDB.last_rerank). `remember` False: the query cache is
        read, not written."""
        result: worker.SearchOutcome = await self._call(
            "search", worker.search, question, k, mode, filters, remember)
        return result

    async def search_many(self, questions: Sequence[str], k: int, mode: Mode,
                          filters: Filters = NO_FILTERS,
                          stop: Callable[[], bool] | None = None) -> list[list[Hit]]:
        """Hits for each question, DATASET_BATCH questions per call to the search worker, so
        other searches are served between batches; `stop()` true (the client went away)
        ends the work before the next batch with Cancelled."""
        found: list[list[Hit]] = []
        for start in range(0, len(questions), DATASET_BATCH):
            if stop is not None and stop():
                raise Cancelled()
            batch = list(questions[start:start + DATASET_BATCH])
            found += await self._call("search", worker.search_many, batch, k, mode, filters)
        return found

    async def symbols(self, what: str, arg: Any, options: dict[str, Any]) -> dict[str, Any]:
        """A read of definitions and references, in the search worker (worker.symbols)."""
        found: dict[str, Any] = await self._call("search", worker.symbols, what, arg, options)
        return found

    async def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "database": self.db_name,
            "db_path": shown(self.db_path) if self.db_path else None,
            "indexing": self.indexing,
            "last_index": self.last_index,
            "model": self.model,
        }
        try:
            found = await self._call("search", worker.status)
            body.update(generation=found["generation"], has_chunks=found["has_chunks"],
                        dense_coverage=found["dense_coverage"])
            body["indexing"] = self.indexing or bool(found.get("index_running"))  # any door
        except RagdbError as exc:
            body["generation"], body["has_chunks"], body["problem"] = None, False, str(exc)
        return body

    # -- indexing --------------------------------------------------------------------------

    async def run_index(self) -> IndexOutcome:
        """One index run at a time; a second one while it runs is the caller's 409."""
        if self.indexing:
            raise ApiError(409, "an index run is already in progress; try again when it ends")
        if self.db_path is None:
            raise MissingIndexError("Datasette serves no database file to index into")
        self.indexing = True
        try:
            roots = [str(r) for r in self.config.corpus_roots or []] or None
            found = await self._call("index", worker.index, roots, self.config.include,
                                     self.config.vectors, self.config.embedder,
                                     self.config.exclude)
        except IndexRunningError as exc:  # a `ragdb index` (or --watch, MCP) run elsewhere
            raise ApiError(409, str(exc)) from None
        except DatabaseBusyError:
            raise ApiError(503, "another connection is writing rag.db (a `ragdb index` run?); "
                                "try again when it is done") from None
        finally:
            self.indexing = False
        outcome = IndexOutcome(found["stats"], found["vectors"], found["generation"],
                               found["roots"])
        self.last_index = {
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "generation": outcome.generation,
        }
        if self.db_name is not None:
            await self.refresh_tables()
        return outcome

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
        style: Style = Style.auto,
        filters: Filters = NO_FILTERS,
    ) -> Answer:
        """Answer from the hits (searched under `filters`) in the answer worker, one at a
        time; pieces reach `on_token` as they are made, and a set `cancelled` stops the
        generation."""
        if self._manager is None:
            manager = SyncManager(ctx=multiprocessing.get_context("spawn"))
            manager.start(worker.die_with_parent, (os.getpid(),))  # no orphan on kill -9
            self._manager = manager
        tokens = self._manager.Queue() if on_token is not None else None
        cancel = self._manager.Event()

        def forward(stop: threading.Event) -> None:
            """On a thread: queue pieces to on_token, cancellation to the worker."""
            while True:
                if cancelled is not None and cancelled.is_set():
                    cancel.set()
                try:
                    piece = tokens.get(timeout=0.05) if tokens is not None else None
                except queue.Empty:
                    piece = None
                if piece is not None and on_token is not None:
                    on_token(piece)
                elif stop.is_set():
                    return
                elif tokens is None:
                    stop.wait(0.05)

        async with self._generate_lock:
            stop = threading.Event()
            forwarder = asyncio.create_task(asyncio.to_thread(forward, stop))
            try:
                answer: Answer = await self._call(
                    "answer", worker.answer, question, hits, k, mode, search_ms, style,
                    tokens, cancel, filters)
            finally:
                stop.set()
                await forwarder
        if answer.style is None and answer.hits:
            raise Cancelled()
        if answer.style == Style.generate.value:
            self.model = answer.model
        elif answer.check is not None and answer.check.get("writer"):
            self.model = answer.check["writer"]  # it wrote, and its answer was not shown
        return answer


_SERVICES: "weakref.WeakKeyDictionary[Any, RagdbService]" = weakref.WeakKeyDictionary()


#: The indexes this process checked for held secrets (RagdbService.refuse_held_secrets).
_CHECKED: set[str] = set()


def _checked_key(db: Location) -> str:
    return str(db.resolve()) if isinstance(db, Path) else db


def mark_checked(db: Location) -> None:
    """`db` holds no file today's rules leave out as secrets (worker.check said so): a
    Datasette started on it in this process does not check it again."""
    _CHECKED.add(_checked_key(db))


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
