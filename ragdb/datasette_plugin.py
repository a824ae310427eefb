"""ragdb inside Datasette: browsing rag.db, a JSON API over the library, and a question page.

Datasette stays what it is (read-only SQL over the file, tables, canned queries); ragdb adds
what SQL alone cannot do (question analysis, embeddings, the LLM) under `/-/ragdb/`. One
`RagdbService` per Datasette instance keeps the Searcher, the embedder and the Generator loaded
across requests. Plugin configuration lives in metadata under `"plugins": {"ragdb": {...}}`:

    db              path of rag.db for ragdb's own connection [the first database file served]
    corpus_roots    folders `POST /-/ragdb/index` re-indexes [the roots of the last index run]
    model           --model of `ragdb answer` [Qwen3-0.6B, else the offline SmolLM2]
    vectors         whether an index run also embeds new chunks [true]
    embedder        embedding model for index runs [the one the index was built with]
    include         file name globs for index runs [ragdb's defaults]
    max_body_bytes  the largest request body accepted [5 MB]
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import traceback
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Sequence
from urllib.parse import parse_qsl

import apsw
import sqlite_vec
from datasette import Response, hookimpl
from markupsafe import Markup
from pydantic import ValidationError

from ragdb import embed, store
from ragdb import evaluate as evaluation
from ragdb.errors import MissingIndexError, RagdbError
from ragdb.resources import resource_dir, sql
from ragdb.retrieve import MAX_K, Hit, Mode, Searcher, check_k, index_is_empty, search_results
from ragdb.schemas import RagDataset, describe
from ragdb.tokenize import fts_query, query_terms

PLUGIN = "ragdb"
API_PREFIX = "-/ragdb/"
DEFAULT_K = 5
DEFAULT_DATASET_K = 10
MAX_BODY_BYTES = 5 * 1024 * 1024
MAX_QUESTION_CHARS = 4000
_PACKAGE = Path(__file__).resolve().parent
_RAGDB_TABLES = frozenset({"files", "chunks", "index_runs"})


# --------------------------------------------------------------------------------------------
# SQL functions, canned queries and table metadata (what plain `datasette rag.db` gets too)


def ragdb_fts_query(question: object) -> str:
    """An FTS5 MATCH expression with ragdb's identifier splitting, for plain SQL clients.

    A question with no searchable term gives `""`, which matches nothing instead of failing
    with an FTS5 syntax error (Datasette runs canned queries with empty parameters).
    """
    if not isinstance(question, str):
        return '""'
    return fts_query(query_terms(question)) or '""'


_VEC_LOCK = threading.Lock()
_VEC_STATE: dict[str, Any] = {}


def datasette_vec_path() -> str | None:
    """A private copy of sqlite-vec for Datasette's SQLite, or None where none can be made.

    apsw (ragdb's searches) and pysqlite3 (Datasette) each bundle their own SQLite. An
    extension keeps the API table of the SQLite that loaded it in one global (`sqlite3_api`),
    so loading the same vec0.so into both makes one library call into the other: the first
    KNN query after Datasette opened a connection crashed the process. A copy under another
    path is a separate library; RTLD_DEEPBIND (glibc) keeps each copy's references to
    `sqlite3_api` on its own definition even though SQLite opens extensions RTLD_GLOBAL.
    """
    with _VEC_LOCK:
        if "path" in _VEC_STATE:
            return _VEC_STATE["path"]  # type: ignore[no-any-return]
        _VEC_STATE["path"] = None
        base = sqlite_vec.loadable_path()
        suffixes = (".so", ".dylib", ".dll", "")
        original = next((base + s for s in suffixes if os.path.isfile(base + s)), None)
        if original is None:
            return None
        try:
            folder = tempfile.mkdtemp(prefix="ragdb-vec0-")  # private (0700) and unique
            copy = os.path.join(folder, os.path.basename(original))  # same name: same entry point
            shutil.copyfile(original, copy)
            atexit.register(shutil.rmtree, folder, True)
            deepbind = getattr(os, "RTLD_DEEPBIND", None)
            if deepbind is not None:
                mode = os.RTLD_NOW | os.RTLD_LOCAL | deepbind
                _VEC_STATE["handles"] = [ctypes.CDLL(original, mode=mode),
                                         ctypes.CDLL(copy, mode=mode)]
        except OSError as exc:
            _warn(f"sqlite-vec not loaded into Datasette ({exc}); vector tables will not open")
            return None
        _VEC_STATE["path"] = copy
        return copy


@hookimpl
def prepare_connection(conn: Any) -> None:
    """Register ragdb_fts_query() and load (a private copy of) sqlite-vec where the sqlite3
    module allows extensions (pysqlite3 does)."""
    try:
        conn.create_function("ragdb_fts_query", 1, ragdb_fts_query, deterministic=True)
    except (TypeError, AttributeError):  # an sqlite3 module without `deterministic`
        conn.create_function("ragdb_fts_query", 1, ragdb_fts_query)
    if not hasattr(conn, "enable_load_extension"):
        return
    path = datasette_vec_path()
    if path is None:
        return
    try:
        conn.enable_load_extension(True)
        conn.load_extension(path)
        conn.enable_load_extension(False)
    except Exception:  # an old SQLite or a locked-down build: browsing still works without vec0
        pass


@dataclass(frozen=True)
class CannedQuery:
    name: str
    title: str
    description: str
    sql: str


@cache
def canned_queries_from_files() -> tuple[CannedQuery, ...]:
    """`sql/canned_<name>.sql` files; `-- title:` and `-- description:` header lines name them."""
    found = []
    for path in sorted(resource_dir("sql").glob("canned_*.sql")):
        header: dict[str, str] = {}
        body: list[str] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            match = re.match(r"--\s*(title|description):\s*(.*)$", line)
            if match and not body:
                header[match.group(1)] = match.group(2).strip()
            else:
                body.append(line)
        name = path.stem[len("canned_"):]
        text = "\n".join(body).strip().rstrip(";").strip()
        found.append(CannedQuery(name, header.get("title", name), header.get("description", ""),
                                 text))
    return tuple(found)


def _is_hidden_table(name: str) -> bool:
    """FTS and vec0 shadow tables and ragdb's caches: implementation details, not data."""
    return (
        name.startswith("chunks_fts")
        or name.startswith("chunk_vectors_")
        or name in {"query_cache", "fts_common_terms", "sqlite_sequence"}
    )


def table_metadata(ask_url: str, hidden: Iterable[str]) -> dict[str, Any]:
    """Labels, descriptions and facets of ragdb's tables, as Datasette metadata."""
    tables: dict[str, Any] = {
        "files": {
            "description": (
                "One row per indexed file: path relative to where `ragdb index` ran, SHA-256 "
                "(a changed hash means re-chunking), size in bytes, kind and length in "
                "characters. The path links to the file's chunks."
            ),
            "label_column": "path",
            "facets": ["kind"],
        },
        "chunks": {
            "description": (
                "The retrievable pieces of each file: text == file_text[first_char:last_char] "
                "(Python character offsets, last exclusive), start_line..end_line for people, "
                "and the enclosing signatures or headings as context. Search here matches the "
                "analysed full-text index."
            ),
            "facets": ["kind"],
            "fts_table": "chunks_fts",
            "fts_pk": "id",
        },
        "index_runs": {
            "description": "Every index run: its roots, settings, counts and duration.",
            "sort_desc": "id",
        },
        "settings": {
            "description": (
                "What the index was built with (chunk size, tokenizer and embedder versions) and "
                "its generation, bumped by every run that changed something."
            ),
        },
        "chunk_vectors": {
            "description": (
                "int8 all-MiniLM-L6-v2 embeddings of the chunks (sqlite-vec vec0), one or more "
                "per chunk (chunk_id links to it); used by dense and hybrid search."
            ),
        },
    }
    for name in hidden:
        tables.setdefault(name, {})["hidden"] = True
    return {
        "description_html": (
            "ragdb's index of a codebase: files, their chunks, the full-text index and the "
            f'embeddings. <a href="{ask_url}">Ask a question</a> about it.'
        ),
        "tables": tables,
    }


# --------------------------------------------------------------------------------------------
# Configuration and the per-instance service


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


class _Cancelled(Exception):
    """Raised from the token callback when the client went away: stops generation early."""


def _warn(message: str) -> None:
    print(f"ragdb: warning: {message}", file=sys.stderr, flush=True)


@dataclass
class IndexOutcome:
    stats: dict[str, Any]
    vectors: dict[str, Any] | None = None
    generation: int = 0
    roots: list[str] = field(default_factory=list)


class RagdbService:
    """What one Datasette instance keeps loaded for ragdb's routes.

    The Searcher and its apsw connection live on one dedicated thread (apsw connections may be
    shared, but the Searcher's caches are not thread-safe, and OpenVINO calls must not block
    the event loop). Index runs open their own connection in a worker thread, so searches keep
    reading the previous index (WAL) until the run commits; the Searcher reloads what depends
    on the index when the generation changes. One Generator, loaded on the first answer, is
    used by one request at a time.
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
        self._searcher: Searcher | None = None
        self._generator: Any = None
        self._generate_lock = asyncio.Lock()
        self._embedders: dict[str, embed.Embedder] = {}
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
                _warn(f"{self.config.db} is not one of the databases Datasette serves: "
                      "the API works, links to rows do not")
        else:
            for db in files:
                if _RAGDB_TABLES <= set(await db.table_names()):
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
        self.is_ragdb = _RAGDB_TABLES <= set(names)
        self.hidden_tables = sorted(n for n in names if _is_hidden_table(n))

    # -- links -----------------------------------------------------------------------------

    def chunk_url(self, chunk_id: int) -> str | None:
        if self.db_name is None:
            return None
        return str(self.datasette.urls.row(self.db_name, "chunks", str(chunk_id)))

    def ask_url(self) -> str:
        return str(self.datasette.urls.path(API_PREFIX + "ask"))

    # -- searching -------------------------------------------------------------------------

    def _get_searcher(self) -> Searcher:
        """Runs on the search thread only."""
        if self._searcher is None:
            if self.db_path is None:
                raise MissingIndexError("Datasette serves no database file to search")
            self._check_is_ragdb(self.db_path)
            conn = store.connect(self.db_path)
            self._searcher = Searcher(conn)
        return self._searcher

    @staticmethod
    def _check_is_ragdb(path: Path) -> None:
        """Never apply ragdb's migrations to some other database Datasette happens to serve."""
        if not path.exists():
            raise MissingIndexError(f"no index at {path}: run `ragdb index` first")
        probe = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            version = probe.execute("PRAGMA user_version").fetchall()[0][0]
        finally:
            probe.close()
        if not version:
            raise MissingIndexError(f"{path} holds no ragdb index: run `ragdb index` first")

    def warm_up(self) -> None:
        """Open the index and load the embedder now, so the first question does not wait."""
        def run() -> None:
            try:
                searcher = self._get_searcher()
                if embed.has_vectors(searcher.conn):
                    searcher.embedder
            except Exception as exc:  # noqa: BLE001 - the first request reports it properly
                _warn(f"could not open the index ahead of the first request: {exc}")
        self._search_pool.submit(run)

    async def _on_search_thread(self, fn: Callable[[Searcher], Any]) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._search_pool, lambda: fn(self._get_searcher()))

    async def search(self, question: str, k: int, mode: Mode) -> tuple[list[Hit], int]:
        """Hits and the index generation they came from."""
        def run(searcher: Searcher) -> tuple[list[Hit], int]:
            hits = searcher.search(question, k, mode)
            return hits, store.generation(searcher.conn)
        result: tuple[list[Hit], int] = await self._on_search_thread(run)
        return result

    async def search_many(self, questions: Sequence[str], k: int,
                          mode: Mode) -> list[list[Hit]]:
        result: list[list[Hit]] = await self._on_search_thread(
            lambda s: s.search_many(questions, k, mode)
        )
        return result

    async def status(self) -> dict[str, Any]:
        def run(searcher: Searcher) -> tuple[int, bool]:
            return store.generation(searcher.conn), not index_is_empty(searcher.conn)
        body: dict[str, Any] = {
            "database": self.db_name,
            "db_path": str(self.db_path) if self.db_path else None,
            "indexing": self.indexing,
            "last_index": self.last_index,
            "model": getattr(self._generator, "model", None),
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
        """Configured roots, else those of the last run (as `ragdb index` was given), else
        data/raw: never paths from the request."""
        if self.config.corpus_roots:
            return list(self.config.corpus_roots)
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
        """The same steps as `ragdb index`, on a connection of its own (runs in a thread)."""
        if self.db_path is None:
            raise MissingIndexError("Datasette serves no database file to index into")
        if self.db_path.exists() and self.db_path.stat().st_size:
            self._check_is_ragdb(self.db_path)
        conn = store.connect(self.db_path, create=True)
        try:
            roots = self._roots(conn)
            stored_size = store.get_setting(conn, "max_chunk_size")
            max_chunk_size = int(stored_size) if stored_size else store.MAX_CHUNK_SIZE
            include = self.config.include or list(store.DEFAULT_INCLUDE)
            name = (self.config.embedder or store.get_setting(conn, "embedder_name")
                    or embed.DEFAULT_MODEL)
            stats, vstats = embed.update_index(
                conn, roots, max_chunk_size=max_chunk_size, include=include,
                vectors=self.config.vectors,
                embedder=self._embedder(name) if self.config.vectors else None,
                progress=self.index_progress,
            )
            outcome = IndexOutcome({**asdict(stats), "files_skipped": stats.files_skipped},
                                   roots=[str(r) for r in roots])
            if vstats is not None:
                outcome.vectors = asdict(vstats)
            outcome.generation = store.generation(conn)
            return outcome
        finally:
            conn.close()

    def _embedder(self, name: str) -> embed.Embedder:
        """The Searcher's own embedder when it is the same model (one copy in memory), else one
        loaded once per name and kept."""
        if self.config.embedder is None:  # both pick the stored embedder_name or the default
            shared: embed.Embedder = self._search_pool.submit(
                lambda: self._get_searcher().embedder
            ).result()
            return shared
        with self._embedder_lock:
            if name not in self._embedders:
                self._embedders[name] = embed.load_embedder(name)
            return self._embedders[name]

    # -- answering -------------------------------------------------------------------------

    def _load_generator(self) -> Any:
        from ragdb import generate

        if self._generator is None:
            resolved = generate.resolve_model(
                self.config.model, generate.default_models_dir(), warn=_warn
            )
            self._generator = generate.Generator(resolved)
        return self._generator

    async def answer(
        self,
        question: str,
        hits: list[Hit],
        on_token: Callable[[str], None] | None = None,
        cancelled: threading.Event | None = None,
    ) -> dict[str, Any]:
        """Generate from the hits (one generation at a time); the answer as JSON."""
        from ragdb import generate

        sources = [generate.prompt_source(h) for h in hits]
        if not sources:
            return {"answer": generate.NO_SOURCES_MESSAGE, "cited": [], "model": None,
                    "timings": {}, "in_prompt": 0}

        def token(piece: str) -> None:
            if cancelled is not None and cancelled.is_set():
                raise _Cancelled()
            if on_token is not None:
                on_token(piece)

        loop = asyncio.get_running_loop()
        async with self._generate_lock:
            generator = await loop.run_in_executor(None, self._load_generator)
            result = await loop.run_in_executor(
                None, lambda: generator.answer(question, sources, on_token=token)
            )
        used = result.sources if result.sources is not None else sources
        return {
            "answer": result.text,
            "cited": list(result.cited),
            "model": result.model,
            "in_prompt": len(used),
            "prompt_sources": used,
            "timings": {
                "first_token_s": round(result.first_token_s, 3),
                "total_s": round(result.total_s, 3),
                "prompt_tokens": result.prompt_tokens,
                "new_tokens": result.new_tokens,
            },
        }


_SERVICES: "weakref.WeakKeyDictionary[Any, RagdbService]" = weakref.WeakKeyDictionary()


def service_for(datasette: Any) -> RagdbService:
    """The instance's service (created by the startup hook; lazily if a caller came first)."""
    found = _SERVICES.get(datasette)
    if found is None:
        found = RagdbService(datasette, PluginConfig.from_metadata(datasette.plugin_config(PLUGIN)))
        _SERVICES[datasette] = found
    return found


@hookimpl
def startup(datasette: Any) -> Callable[[], Awaitable[None]]:
    async def inner() -> None:
        await service_for(datasette).setup()
    return inner


@hookimpl
def get_metadata(datasette: Any, key: str, database: str | None,
                 table: str | None) -> dict[str, Any]:
    """Table descriptions, facets and hidden tables for ragdb's database only."""
    service = _SERVICES.get(datasette)
    if service is None or service.db_name is None or not service.is_ragdb:
        return {}
    return {"databases": {service.db_name: table_metadata(service.ask_url(),
                                                          service.hidden_tables)}}


@hookimpl
def canned_queries(datasette: Any, database: str) -> dict[str, Any] | None:
    """The sql/canned_*.sql files, on ragdb's database only."""
    service = _SERVICES.get(datasette)
    if service is None or database != service.db_name or not service.is_ragdb:
        return None
    return {
        q.name: {"sql": q.sql, "title": q.title, "description": q.description}
        for q in canned_queries_from_files()
    }


@hookimpl
def menu_links(datasette: Any) -> list[dict[str, str]]:
    service = _SERVICES.get(datasette)
    if service is None or not service.is_ragdb:
        return []
    return [{"href": service.ask_url(), "label": "Ask ragdb a question"}]


# --------------------------------------------------------------------------------------------
# Cells: chunk text as code, links between chunks and files


_CODE_STYLE = "max-height:28em;overflow:auto;white-space:pre;margin:0"


def code_html(text: str) -> Markup:
    """Chunk text as an escaped <pre><code> block (Markup.format escapes its arguments)."""
    return Markup('<pre class="ragdb-code" style="{}"><code>{}</code></pre>').format(
        _CODE_STYLE, text
    )


def _row_value(row: Any, name: str) -> Any:
    try:
        return row[name]
    except (IndexError, KeyError, TypeError):
        return None


@hookimpl
def render_cell(row: Any, value: Any, column: str, table: str | None, database: str,
                datasette: Any) -> Markup | None:
    """Only ragdb's database is touched; everything is escaped by Markup.format."""
    service = _SERVICES.get(datasette)
    if service is None or database != service.db_name or not service.is_ragdb:
        return None
    urls = datasette.urls
    if column == "text" and table in ("chunks", None) and isinstance(value, str):
        return code_html(value)
    if table == "chunks" and column == "file_id":
        file_id = value.get("value") if isinstance(value, dict) else value
        label = value.get("label") if isinstance(value, dict) else None
        if not isinstance(file_id, int):
            return None
        file_link = urls.row(database, "files", str(file_id))
        others = urls.query(database, "chunks_of_file") + f"?file_id={file_id}"
        return Markup('<a href="{}">{}</a> &middot; <a href="{}">all chunks</a>').format(
            file_link, label or file_id, others
        )
    if table == "files" and column == "path" and isinstance(value, str):
        file_id = _row_value(row, "id")
        if not isinstance(file_id, int):
            return None
        others = urls.query(database, "chunks_of_file") + f"?file_id={file_id}"
        return Markup('<a href="{}" title="chunks of this file">{}</a>').format(others, value)
    if table in (None, "chunk_vectors") and column == "chunk_id" and isinstance(value, int):
        return Markup('<a href="{}">{}</a>').format(
            urls.row(database, "chunks", str(value)), value
        )
    if table is None and column == "file_id" and isinstance(value, int):
        return Markup('<a href="{}">{}</a>').format(urls.row(database, "files", str(value)),
                                                    value)
    if table is None and column == "dir" and isinstance(value, str):
        from urllib.parse import quote

        href = urls.table(database, "files") + "?path__startswith=" + quote(value, safe="")
        return Markup('<a href="{}">{}</a>').format(href, value or "(top level)")
    return None


@hookimpl
def skip_csrf(datasette: Any, scope: dict[str, Any]) -> bool | None:
    """JSON requests to the API need no CSRF token: browsers cannot send them cross-site
    without a CORS preflight, which Datasette does not grant."""
    if scope.get("type") != "http":
        return None
    if not str(scope.get("path", "")).startswith(str(datasette.urls.path(API_PREFIX))):
        return None
    headers = dict(scope.get("headers") or [])
    content_type = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
    return content_type == b"application/json" or None


# --------------------------------------------------------------------------------------------
# Request parsing


async def read_body(request: Any, limit: int) -> bytes:
    """The request body, refusing anything over `limit` bytes before reading it all."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body too large (limit {limit} bytes)")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise ApiError(400, "the client disconnected before sending the whole body")
        piece = message.get("body", b"")
        size += len(piece)
        if size > limit:
            raise ApiError(413, f"request body too large (limit {limit} bytes)")
        chunks.append(piece)
        if not message.get("more_body", False):
            return b"".join(chunks)


def parse_json(body: bytes, what: str = "request body") -> Any:
    try:
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise ApiError(400, f"{what} is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise ApiError(400, f"{what} is not valid JSON: {exc}") from None


async def request_params(request: Any, limit: int) -> dict[str, Any]:
    """Query-string parameters, overridden by a JSON object or form body when there is one."""
    params: dict[str, Any] = {key: request.args.get(key) for key in request.args.keys()}
    if request.method != "POST":
        return params
    body = await read_body(request, limit)
    if not body.strip():
        return params
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type == "application/x-www-form-urlencoded" and not body.lstrip().startswith(b"{"):
        try:
            params.update(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        except UnicodeDecodeError:
            raise ApiError(400, "request body is not UTF-8") from None
        return params
    data = parse_json(body)
    if not isinstance(data, dict):
        raise ApiError(400, "the JSON body must be an object, e.g. {\"q\": \"...\", \"k\": 5}")
    params.update(data)
    return params


def parse_question(raw: object) -> str:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise ApiError(400, "q is required: the question to search for")
    if not isinstance(raw, str):
        raise ApiError(400, "q must be a string")
    if len(raw) > MAX_QUESTION_CHARS:
        raise ApiError(400, f"q is too long ({len(raw)} characters, at most {MAX_QUESTION_CHARS})")
    return raw


def parse_k(raw: object, default: int, maximum: int = MAX_K) -> int:
    """A whole number from 1 to `maximum`; "abc", "-1", "1.5" and 10**9 are all refused."""
    if raw is None or raw == "":
        return default
    value: object = raw
    if isinstance(raw, str):
        if not re.fullmatch(r"\s*\d{1,9}\s*", raw):
            raise ApiError(400, f"k must be a whole number from 1 to {maximum}, got {raw!r}")
        value = int(raw)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise ApiError(400, f"k must be a whole number from 1 to {maximum}, got {raw!r}")
    return check_k(value)


def parse_mode(raw: object) -> Mode:
    if raw is None or raw == "":
        return Mode.hybrid
    try:
        return Mode(raw)
    except ValueError:
        choices = ", ".join(m.value for m in Mode)
        raise ApiError(400, f"mode must be one of {choices}, got {raw!r}") from None


def parse_flag(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    if raw is None:
        return False
    text = str(raw).strip().lower()
    if text in {"", "0", "false", "no", "off"}:
        return False
    if text in {"1", "true", "yes", "on"}:
        return True
    raise ApiError(400, f"stream must be 1 or 0, got {raw!r}")


# --------------------------------------------------------------------------------------------
# Responses


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Any:
    return Response.json({"error": message}, status=status, headers=headers)


def source_json(service: RagdbService, rank: int, hit: Hit) -> dict[str, Any]:
    return {
        "rank": rank,
        "chunk_id": hit.chunk_id,
        "file_path": hit.file_path,
        "first_character_index": hit.first,
        "last_character_index": hit.last,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "kind": hit.kind,
        "score": hit.score,
        "preview": hit.preview,
        "url": service.chunk_url(hit.chunk_id),
    }


View = Callable[..., Awaitable[Any]]


def api_view(methods: Sequence[str]) -> Callable[[View], View]:
    """Turn every failure of a handler into JSON: 4xx for the client's mistakes, 503 when there
    is no index, 500 (logged, without a traceback in the response) for anything else."""
    def decorate(handler: View) -> View:
        async def view(datasette: Any, request: Any, send: Any) -> Any:
            if request.method not in methods:
                return error_response(
                    405, f"{request.method} is not allowed here; use {' or '.join(methods)}",
                    {"Allow": ", ".join(methods)},
                )
            try:
                return await handler(service_for(datasette), request, send)
            except ApiError as exc:
                return error_response(exc.status, exc.message, exc.headers)
            except MissingIndexError as exc:
                return error_response(503, str(exc))
            except RagdbError as exc:
                return error_response(400, str(exc))
            except (apsw.BusyError, apsw.LockedError):
                return error_response(503, "the database is busy; try again")
            except Exception as exc:  # noqa: BLE001 - the one place that must catch everything
                traceback.print_exc()
                return error_response(500, f"internal error: {type(exc).__name__}")
        view.__name__ = handler.__name__
        return view
    return decorate


@api_view(["GET", "POST"])
async def search_view(service: RagdbService, request: Any, send: Any) -> Any:
    params = await request_params(request, service.config.max_body_bytes)
    question = parse_question(params.get("q"))
    k = parse_k(params.get("k"), DEFAULT_K)
    mode = parse_mode(params.get("mode"))
    started = time.perf_counter()
    hits, generation = await service.search(question, k, mode)
    return Response.json({
        "q": question,
        "k": k,
        "mode": mode.value,
        "generation": generation,
        "took_ms": round((time.perf_counter() - started) * 1000, 2),
        "sources": [source_json(service, rank, hit) for rank, hit in enumerate(hits, 1)],
    })


@api_view(["POST"])
async def search_dataset_view(service: RagdbService, request: Any, send: Any) -> Any:
    k = parse_k(request.args.get("k"), DEFAULT_DATASET_K, evaluation.MAX_K)
    mode = parse_mode(request.args.get("mode"))
    body = await read_body(request, service.config.max_body_bytes)
    if not body.strip():
        raise ApiError(400, "send the dataset (RagDataset JSON) as the request body")
    data = parse_json(body, "the dataset")
    try:
        dataset = RagDataset.model_validate(data)
    except ValidationError as exc:
        raise ApiError(400, f"the dataset does not have the expected shape ({describe(exc)})")
    questions = dataset.rag_questions
    found = await service.search_many([q.question for q in questions], k, mode)
    return Response.json(search_results(questions, found, k).model_dump())


@api_view(["POST"])
async def index_view(service: RagdbService, request: Any, send: Any) -> Any:
    await read_body(request, service.config.max_body_bytes)  # nothing in it is used
    try:
        outcome = await service.run_index()
    except MissingIndexError:
        raise
    except RagdbError as exc:  # a configured root is gone: the server's problem, not the client's
        raise ApiError(503, str(exc)) from None
    return Response.json({
        "roots": outcome.roots,
        "generation": outcome.generation,
        "stats": outcome.stats,
        "vectors": outcome.vectors,
    })


@api_view(["GET"])
async def status_view(service: RagdbService, request: Any, send: Any) -> Any:
    return Response.json(await service.status())


def _answer_json(service: RagdbService, question: str, k: int, mode: Mode, hits: list[Hit],
                 generated: dict[str, Any], search_ms: float) -> dict[str, Any]:
    cited = set(generated["cited"])
    in_prompt = generated["in_prompt"]
    prompt_sources = generated.get("prompt_sources") or []
    sources = []
    for rank, hit in enumerate(hits, 1):
        item = source_json(service, rank, hit)
        item["n"] = rank
        item["in_prompt"] = rank <= in_prompt
        item["cited"] = rank in cited
        item["text"] = hit.text
        if rank <= len(prompt_sources):  # the first source may have been cut to fit
            seen = prompt_sources[rank - 1]
            item["end_line"], item["last_character_index"] = seen.end_line, seen.last
            item["text"] = seen.text
        sources.append(item)
    citations = [
        {key: s[key] for key in ("n", "chunk_id", "file_path", "start_line", "end_line", "url")}
        for s in sources if s["cited"]
    ]
    return {
        "q": question,
        "k": k,
        "mode": mode.value,
        "answer": generated["answer"],
        "cited": sorted(cited),
        "citations": citations,
        "sources": sources,
        "model": generated["model"],
        "timings": {"search_ms": round(search_ms, 2), **generated["timings"]},
    }


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode("utf-8")


@api_view(["POST"])
async def answer_view(service: RagdbService, request: Any, send: Any) -> Any:
    params = await request_params(request, service.config.max_body_bytes)
    question = parse_question(params.get("q"))
    k = parse_k(params.get("k"), DEFAULT_K)
    mode = parse_mode(params.get("mode"))
    stream = parse_flag(params.get("stream"))
    started = time.perf_counter()
    hits, _generation = await service.search(question, k, mode)
    search_ms = (time.perf_counter() - started) * 1000
    if not stream:
        generated = await service.answer(question, hits)
        return Response.json(_answer_json(service, question, k, mode, hits, generated, search_ms))
    await stream_answer(service, request, send, question, k, mode, hits, search_ms)
    return None


async def stream_answer(service: RagdbService, request: Any, send: Any, question: str, k: int,
                        mode: Mode, hits: list[Hit], search_ms: float) -> None:
    """Server-sent events: `sources`, then `token`s as they are generated, then `done` (the
    whole JSON answer) or `error`. Generation runs in a worker thread; tokens cross to the
    event loop through a queue, and a client that goes away stops the generation."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    cancelled = threading.Event()

    def on_token(piece: str) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, ("token", {"text": piece}))

    async def generate() -> None:
        try:
            generated = await service.answer(question, hits, on_token, cancelled)
            body = _answer_json(service, question, k, mode, hits, generated, search_ms)
            queue.put_nowait(("done", body))
        except _Cancelled:
            queue.put_nowait(("end", None))
        except RagdbError as exc:
            queue.put_nowait(("error", {"error": str(exc)}))
        except Exception as exc:  # noqa: BLE001 - reported to the client as an event
            traceback.print_exc()
            queue.put_nowait(("error", {"error": f"internal error: {type(exc).__name__}"}))

    async def watch_disconnect() -> None:
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                cancelled.set()
                queue.put_nowait(("end", None))
                return

    await send({
        "type": "http.response.start",
        "status": 200,
        "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ],
    })
    await send({"type": "http.response.body", "more_body": True, "body": _sse("sources", [
        {**source_json(service, rank, hit), "n": rank, "text": hit.text}
        for rank, hit in enumerate(hits, 1)
    ])})
    worker = asyncio.create_task(generate())
    watcher = asyncio.create_task(watch_disconnect())
    try:
        while True:
            event, data = await queue.get()
            if event == "end":
                break
            await send({"type": "http.response.body", "body": _sse(event, data),
                        "more_body": True})
            if event in ("done", "error"):
                break
    finally:
        watcher.cancel()
        if not worker.done():
            cancelled.set()
        await send({"type": "http.response.body", "body": b"", "more_body": False})


# --------------------------------------------------------------------------------------------
# The question page


@cache
def _asset(name: str) -> str:
    return (_PACKAGE / name).read_text(encoding="utf-8")


async def ask_view(datasette: Any, request: Any) -> Any:
    if request.method not in ("GET", "HEAD"):
        return error_response(405, f"{request.method} is not allowed here; use GET",
                              {"Allow": "GET"})
    service = service_for(datasette)
    template = datasette.jinja_env.from_string(_asset("templates/ragdb_ask.html"))
    body = await datasette.render_template(
        template,
        {
            "q": request.args.get("q") or "",
            "k": request.args.get("k") or str(DEFAULT_K),
            "max_k": MAX_K,
            "answer_url": datasette.urls.path(API_PREFIX + "answer"),
            "script_url": datasette.urls.path(API_PREFIX + "static/ask.js"),
            "database": service.db_name,
        },
        request=request,
        view_name="ragdb-ask",
    )
    return Response.html(body)


async def asset_view(request: Any) -> Any:
    name = request.url_vars["name"]
    if name != "ask.js":
        return error_response(404, f"no such ragdb asset: {name}")
    return Response(_asset("static/ask.js"), content_type="text/javascript; charset=utf-8",
                    headers={"Cache-Control": "no-cache"})


async def not_found_view(request: Any) -> Any:
    return error_response(404, f"no such ragdb endpoint: {request.path}; see docs/http-api.md")


@hookimpl
def register_routes() -> list[tuple[str, Any]]:
    return [
        (r"^/-/ragdb/search$", search_view),
        (r"^/-/ragdb/search-dataset$", search_dataset_view),
        (r"^/-/ragdb/answer$", answer_view),
        (r"^/-/ragdb/index$", index_view),
        (r"^/-/ragdb/status$", status_view),
        (r"^/-/ragdb/ask$", ask_view),
        (r"^/-/ragdb/static/(?P<name>[^/]+)$", asset_view),
        (r"^/-/ragdb(?:/.*)?$", not_found_view),
    ]


# --------------------------------------------------------------------------------------------
# Serving


def ensure_registered() -> None:
    """Register this plugin where the entry point was not loaded (e.g. under pytest)."""
    from datasette.plugins import pm

    module = sys.modules[__name__]
    if not pm.is_registered(module) and pm.get_plugin(PLUGIN) is None:
        pm.register(module, PLUGIN)


def make_datasette(db_path: Path, *, corpus_roots: list[Path] | None = None,
                   model: str | None = None, extra: dict[str, Any] | None = None) -> Any:
    """A Datasette over rag.db with ragdb's plugin configured (used by `serve` and tests)."""
    from datasette.app import Datasette

    ensure_registered()
    config: dict[str, Any] = {"db": str(db_path)}
    if corpus_roots:
        config["corpus_roots"] = [str(r) for r in corpus_roots]
    if model:
        config["model"] = model
    config.update(extra or {})
    PluginConfig.from_metadata(config)  # fail now on a bad value
    metadata = {"title": "ragdb", "plugins": {PLUGIN: config}}
    return Datasette(files=[str(db_path)], metadata=metadata)


def _check_port(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise RagdbError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def serve(db_path: Path, *, host: str = "127.0.0.1", port: int = 8001,
          corpus_roots: list[Path] | None = None, model: str | None = None) -> None:
    """Serve rag.db with Datasette and ragdb's routes until interrupted (as `datasette serve`).

    The index must exist (`ragdb index` first); its migrations are applied before Datasette
    reads the schema, so the tables it lists are the current ones.
    """
    import uvicorn

    db_path = Path(db_path)
    if not db_path.exists():
        raise MissingIndexError(f"no index at {db_path}: run `ragdb index` first")
    RagdbService._check_is_ragdb(db_path)
    store.connect(db_path).close()
    if not 1 <= port <= 65535:
        raise RagdbError(f"--port must be between 1 and 65535, got {port}")
    _check_port(host, port)
    os.environ.setdefault("OPENVINO_TELEMETRY_DISABLE", "1")
    datasette = make_datasette(db_path, corpus_roots=corpus_roots, model=model)
    asyncio.run(datasette.invoke_startup())
    service_for(datasette).warm_up()
    print(f"ragdb: serving {db_path} on http://{host}:{port}/ "
          f"(questions: http://{host}:{port}{service_for(datasette).ask_url()})",
          file=sys.stderr, flush=True)
    uvicorn.run(datasette.app(), host=host, port=port, log_level="info", lifespan="on",
                workers=1)
