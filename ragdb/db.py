"""rag.db: opening it, recognising it as ragdb's own, migrations, transactions and settings.

The database may also be PostgreSQL (`--db postgresql://...`, ragdb/postgres.py): `connect`
then returns a PostgresConnection, which ragdb's logic uses as it uses apsw's Connection, and
each function below that differs by engine (transactions, the full-text rows, the cache
write) hands that connection's work to it, as ragdb.run_lock does for the index lock. Nothing
above these two modules branches on the engine.

ragdb never writes a SQLite file that is not its own: a database is recognised by its
`PRAGMA application_id` mark (or, for indexes made before the mark existed, by ragdb's schema
version together with its core tables), and anything else is refused before a single pragma
that writes (journal mode, migrations) runs.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Iterator, Sequence, Union, overload
from urllib.parse import quote

import apsw

from ragdb.errors import (
    DiskFullError,
    ForeignDatabaseError,
    MissingIndexError,
    RagdbError,
    locked_error,
    read_only_error,
)
from ragdb.postgres import PostgresConnection, is_url
from ragdb.resources import SAVED_ANSWERS, cache_dir, resource_dir, sql

DEFAULT_DB = Path("data/processed/rag.db")
#: An open index: rag.db through apsw, or a PostgreSQL database (ragdb/postgres.py).
Connection = Union[apsw.Connection, PostgresConnection]
#: Where an index is: a rag.db path, or a postgresql:// URL.
Location = Union[Path, str]
BUSY_TIMEOUT_MS = 5000
#: "RAGD": ragdb's mark in the database header (PRAGMA application_id).
APPLICATION_ID = 0x52414744
#: Tables every ragdb index has had since its first schema version.
CORE_TABLES = frozenset({"files", "chunks", "settings", "index_runs"})


class Setting:
    """Keys of the `settings` table, in one place."""

    GENERATION = "generation"  # bumped by every index run that changed something
    MAX_CHUNK_SIZE = "max_chunk_size"  # rebuild on change
    TOKENIZER = "tokenizer"  # rebuild on change
    CHUNKER = "chunker"  # rebuild on change
    EMBEDDER = "embedder"  # identity of the model that made the vectors: re-embed on change
    EMBEDDER_NAME = "embedder_name"  # what the user asked for (a name, folder or hub id)
    EMBED_POLICY = "embed_policy"  # which chunks get vectors and how: re-embed on change
    #: Bumped by every commit that changes chunk_vectors (each embedded batch, a reset): what
    #: a dense or hybrid search read, so cached results of an earlier state are not reused.
    VECTORS_VERSION = "vectors_version"
    BASE_DIR = "base_dir"  # the folder index runs ran in: stored paths are relative to it


#: Files this process must not open with apsw: `ragdb serve` reads them through Datasette's
#: SQLite, and two SQLite libraries in one process defeat SQLite's locks (ragdb/worker.py).
_FORBIDDEN: set[Path] = set()


def forbid_in_this_process(path: Path) -> None:
    _FORBIDDEN.add(Path(path).resolve())


def _check_allowed(path: Path) -> None:
    if _FORBIDDEN and path.resolve() in _FORBIDDEN:
        raise RagdbError(f"{path} is served by Datasette in this process; ragdb's work on it "
                         "runs in its worker processes")


def default_db_path(env: bool = True) -> Path | str:
    """The index a command without --db uses, found the way git finds its repository:
    `RAGDB_DB`; else the nearest of the current folder and its parents that holds
    data/processed/rag.db (commands work from any subfolder of an indexed project; a parent's
    is named by its absolute path); else data/processed/rag.db here, where `ragdb index`
    creates it. Only that layout is looked for: an index under another name is named by
    --db or RAGDB_DB. `env` False: the project's own, whatever RAGDB_DB says."""
    given = os.environ.get("RAGDB_DB") if env else None
    if given:
        return given
    try:
        here = Path(os.getcwd())
    except OSError:  # the current folder was deleted: nothing above it to look in
        return DEFAULT_DB
    if (here / DEFAULT_DB).is_file():
        return DEFAULT_DB
    for parent in here.parents:
        if (parent / DEFAULT_DB).is_file():
            return parent / DEFAULT_DB
    return DEFAULT_DB


def location(value: Path | str | None = None) -> Location:
    """A --db value (or, when None, default_db_path()): a postgresql:// URL stays text,
    anything else is a rag.db path. An empty one (`--db ""`, `--db "$UNSET"`) is refused: it
    read as the current folder (". is a directory, not a ragdb database")."""
    if value is None:
        value = default_db_path()
    elif isinstance(value, str) and not value.strip():
        raise RagdbError("--db is empty: name a rag.db file or a postgresql:// URL")
    return value if is_url(value) else Path(value)


def found_in_parent(value: Path | str | None, where: Location) -> bool:
    """Whether `where` is an index that default_db_path() found in a parent folder (not named
    by --db or RAGDB_DB): `ragdb index` says which one it writes."""
    return (value is None and not os.environ.get("RAGDB_DB") and isinstance(where, Path)
            and where.is_absolute())


def built_from(path: Path) -> Path | None:
    """The folder rag.db's index runs ran in (its stored paths are relative to it), read
    without writing anything; None where there is no such file or it does not say."""
    if not path.is_file():
        return None
    _check_allowed(path)
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            value = get_setting(conn, Setting.BASE_DIR)
        finally:
            conn.close()
    except apsw.Error:  # not a database, no settings table, locked: nothing to go by
        return None
    return Path(value) if value else None


def answers_dir(where: Location) -> Path:
    """Where `ragdb answer` saves its record without --save_directory: outputs/answers beside
    rag.db, never the folder the command runs from; the user's cache folder for a PostgreSQL
    index or a rag.db in a folder that cannot be written (a shared, read-only index)."""
    if isinstance(where, Path):
        folder = where.parent / SAVED_ANSWERS
        probe = folder
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if probe.is_dir() and os.access(probe, os.W_OK | os.X_OK):
            return folder
    return cache_dir() / SAVED_ANSWERS


def shown(where: Location) -> str:
    """A location as messages name it: a URL without its password."""
    from ragdb.postgres import display

    return display(where) if isinstance(where, str) else str(where)


def migrations() -> list[tuple[int, Path]]:
    """Numbered migration files in order: `003_cache.sql` is version 3."""
    found = []
    for path in sorted(resource_dir("migrations").glob("*.sql")):
        number = path.name.split("_", 1)[0]
        if number.isdigit():
            found.append((int(number), path))
    return found


def schema_version() -> int:
    return migrations()[-1][0]


@dataclass(frozen=True)
class FileState:
    """What the header and schema of an existing SQLite file say, read without writing."""

    application_id: int
    user_version: int
    tables: frozenset[str]

    @property
    def is_ragdb(self) -> bool:
        if self.application_id == APPLICATION_ID:
            return True
        # Indexes written before the mark: ragdb's schema version and its core tables.
        return (self.application_id == 0 and 1 <= self.user_version <= schema_version()
                and CORE_TABLES <= self.tables)

    @property
    def is_blank(self) -> bool:
        """No tables and no marks: a new file that may become a ragdb index."""
        return not self.tables and not self.application_id and not self.user_version


def inspect(path: Path) -> FileState:
    """Read a database's marks through a read-only connection (changes nothing on disk)."""
    _check_allowed(path)
    try:
        probe = (apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY) if writable(path)
                 else _open_read_only(path))
    except apsw.CantOpenError as exc:
        raise RagdbError(f"cannot open {path} ({exc})") from None
    try:
        try:
            app_id = int(scalar(probe, "PRAGMA application_id") or 0)
        except (apsw.IOError, apsw.FullError):
            if not is_disk_full(probe):
                raise
            probe.close()  # no room for the -shm file: read the file as it is on disk
            probe = _open_read_only(path, immutable=True)
            app_id = int(scalar(probe, "PRAGMA application_id") or 0)
        version = int(scalar(probe, "PRAGMA user_version") or 0)
        names = frozenset(
            str(row[0]) for row in probe.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        )
    except apsw.NotADBError as exc:
        raise RagdbError(f"{path} is not a SQLite database or is corrupted ({exc})") from None
    except apsw.CorruptError as exc:
        raise RagdbError(f"{path} is corrupted ({exc}); delete it and run `ragdb index`") from None
    finally:
        probe.close()
    return FileState(app_id, version, names)


def check_is_ragdb(path: Path, *, into_existing: bool = False) -> FileState:
    """Refuse, in one line, a file that is not a ragdb index (before anything writes to it)."""
    state = inspect(path)
    if state.is_ragdb or state.is_blank:
        if state.user_version > schema_version():
            raise RagdbError(
                f"{path} was written by a newer ragdb (schema {state.user_version}, this one "
                f"knows {schema_version()}); upgrade ragdb or index into another --db"
            )
        return state
    if into_existing and not state.application_id and not state.user_version:
        return state
    why = (f"application_id {state.application_id:#x}" if state.application_id
           else f"{len(state.tables)} tables of its own")
    hint = ("" if state.application_id or state.user_version
            else "; `ragdb index --into-existing` adds ragdb's tables to it")
    raise ForeignDatabaseError(
        f"{path} is not a ragdb index ({why}); ragdb leaves it untouched: use another --db{hint}"
    )


@cache
def _vec_path() -> str:
    """sqlite-vec's loadable extension, as `sqlite_vec.loadable_path()` names it, without
    importing the package: its __init__ imports numpy (0.1 s of every command's start)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise RagdbError("the sqlite-vec package is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], "vec0")


@overload
def connect(path: Path, *, create: bool = ..., into_existing: bool = ...) -> apsw.Connection:
    ...


@overload
def connect(path: Path | str, *, create: bool = ..., into_existing: bool = ...) -> Connection:
    ...


def connect(path: Path | str, *, create: bool = False,
            into_existing: bool = False) -> Connection:
    """Open rag.db with sqlite-vec loaded, WAL on and migrations applied (a postgresql:// URL:
    the PostgreSQL database, ragdb.postgres.connect).

    Without `create`, a missing file is a MissingIndexError rather than a new empty database,
    so `ragdb search` before `ragdb index` says what to do instead of returning nothing.
    A file that is not a ragdb index is refused before anything is written to it.
    """
    if is_url(path):
        from ragdb import postgres

        return postgres.connect(str(path), create=create, into_existing=into_existing)
    path = Path(path)
    _check_allowed(path)
    if not path.exists():
        if not create:
            raise MissingIndexError(f"no index at {path}: run `ragdb index` first")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise RagdbError(f"cannot create {path}: {path.parent} is not a folder") from None
    elif path.is_dir():
        raise RagdbError(f"{path} is a directory, not a ragdb database")
    elif not path.is_file():  # SQLite would wait for ever on a FIFO
        raise RagdbError(f"{path} is not a regular file (a FIFO or a device), not a ragdb "
                         "database")
    else:
        state = check_is_ragdb(path, into_existing=into_existing)
        if state.is_blank and not create:
            raise MissingIndexError(f"{path} holds no ragdb index: run `ragdb index` first")
    read_only = path.exists() and not create and not writable(path)
    try:
        if read_only:
            conn = _open_read_only(path)
        else:
            conn = apsw.Connection(str(path))
        try:
            scalar(conn, "PRAGMA user_version")
        except (apsw.IOError, apsw.FullError):
            if not is_disk_full(conn):
                raise
            if create:
                raise DiskFullError(f"the disk is full: {path} cannot be written; free some "
                                    "space and run `ragdb index` again") from None
            # A search on a full disk: no room for the -shm file, so read the file as it is
            # (nobody can be writing it either); nothing is cached.
            conn.close()
            conn = _open_read_only(path, immutable=True)
            read_only = True
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        conn.enable_load_extension(True)
        conn.load_extension(_vec_path())
        conn.enable_load_extension(False)
        if read_only:
            _check_current(conn, path)
            return conn
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        # A deleted row's bytes are overwritten, not left in the page's free space or on the
        # freelist: a secret indexed once (then skipped) must not stay in the file a server
        # shares or a user copies.
        conn.execute("PRAGMA secure_delete = ON")
        _migrate(conn, path)
    except apsw.NotADBError as exc:
        raise RagdbError(f"{path} is not a SQLite database or is corrupted ({exc})") from None
    except apsw.CorruptError as exc:
        raise RagdbError(f"{path} is corrupted ({exc}); delete it and run `ragdb index`") from None
    except apsw.CantOpenError as exc:
        if not read_only and not writable(path):
            raise read_only_error(path) from None
        raise RagdbError(f"cannot open {path} ({exc})") from None
    except apsw.ReadOnlyError:
        raise read_only_error(path) from None
    except apsw.BusyError:
        raise locked_error(path) from None
    return conn


def writable(path: Path) -> bool:
    """Whether rag.db and its folder (where SQLite keeps -wal and -shm) can be written."""
    folder = path.parent if str(path.parent) else Path(".")
    return os.access(path, os.W_OK) and os.access(folder, os.W_OK | os.X_OK)


def is_disk_full(conn: apsw.Connection) -> bool:
    """Whether the last error on `conn` came from a full disk (SQLITE_FULL or ENOSPC)."""
    return conn.system_errno in (errno.ENOSPC, errno.EDQUOT) or (
        shutil.disk_usage(Path(conn.filename or ".").parent).free < 1024 * 1024)


def _readable_shm(path: Path) -> bool:
    """Whether rag.db's WAL index (-shm) is there to read: without it a read-only reader can
    only open the file as immutable."""
    shm = path.with_name(path.name + "-shm")
    return shm.exists() and os.access(shm, os.R_OK)


def needs_immutable(path: Path) -> bool:
    """Whether a read-only reader must open rag.db as immutable: ragdb may not write it or its
    folder, and no readable -shm is there (nor can one be made), so nobody writes it here."""
    return path.exists() and not writable(path) and not _readable_shm(path)


def _open_read_only(path: Path, *, immutable: bool = False) -> apsw.Connection:
    """A read-only connection for an index in a folder ragdb may not write (searching a
    shared or mounted index).

    A WAL database needs its -shm file: where it exists it is used (a writer elsewhere stays
    visible); where it does not and cannot be created, nobody can be writing the file through
    this folder, so it is opened as immutable (no locks, no -shm).
    """
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    uri = "file:" + quote(str(path.resolve()))
    if immutable or not _readable_shm(path):
        uri += "?immutable=1"
    return apsw.Connection(uri, flags=flags)


def _check_current(conn: apsw.Connection, path: Path) -> None:
    """A read-only index must not need a migration: it cannot be applied."""
    current = int(scalar(conn, "PRAGMA user_version"))
    if current != schema_version():
        raise RagdbError(
            f"{path} has schema {current} and this ragdb needs {schema_version()}, but it is "
            "read-only here: run any ragdb command once where it is writable"
        )


def scalar(conn: Connection, statement: str, params: dict[str, Any] | None = None) -> Any:
    """The first column of the first row, or None: apsw's row types are too wide for mypy."""
    rows = conn.execute(statement, params or {}).fetchall()
    return rows[0][0] if rows else None


def _migrate(conn: apsw.Connection, path: Path) -> None:
    current = int(scalar(conn, "PRAGMA user_version"))
    latest = schema_version()
    if current > latest:
        raise RagdbError(
            f"{path} was written by a newer ragdb (schema {current}, this one knows {latest}); "
            "upgrade ragdb or index into another --db"
        )
    if int(scalar(conn, "PRAGMA application_id") or 0) != APPLICATION_ID:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    for number, migration in migrations():
        if number <= current:
            continue
        with conn:
            conn.execute(migration.read_text(encoding="utf-8"))
            conn.execute(f"PRAGMA user_version = {int(number)}")


@contextmanager
def write_transaction(conn: Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (Ctrl-C included).

    A deferred transaction that reads before it writes fails at once (no busy wait) when
    another connection commits in between, e.g. a search caching its result; taking the write
    lock up front makes writers queue on the busy timeout instead.
    """
    if isinstance(conn, PostgresConnection):
        with conn.write_transaction():
            yield
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
    except apsw.BusyError:  # another connection kept the write lock past the busy timeout
        raise locked_error(conn.filename) from None
    try:
        yield
        conn.execute("COMMIT")
    except BaseException as exc:
        if not conn.getautocommit():  # SQLite may already have rolled back (disk full, I/O)
            try:
                conn.execute("ROLLBACK")
            except apsw.Error:
                pass  # the original error says more
        full = isinstance(exc, apsw.FullError)
        if full or (isinstance(exc, apsw.IOError) and is_disk_full(conn)):
            raise DiskFullError(
                f"the disk is full: nothing of this write to {conn.filename} was kept and it "
                "holds its last complete index; free some space and run `ragdb index` again"
            ) from None
        if isinstance(exc, apsw.ReadOnlyError):
            raise read_only_error(Path(conn.filename)) from None
        if isinstance(exc, apsw.BusyError):
            raise locked_error(conn.filename) from None
        raise


def checkpoint(conn: Connection) -> None:
    """Copy the WAL into rag.db and empty it (SQLite; PostgreSQL: nothing). After rows were
    deleted or replaced: while a server holds rag.db open nothing else checkpoints, and
    rag.db-wal kept the old page images (a removed secret's text) for anyone who copies the
    folder; secure_delete's zeroed pages reach rag.db instead. A reader mid-request may keep
    a few frames; the next run's checkpoint takes them."""
    if isinstance(conn, PostgresConnection):
        return
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except apsw.BusyError:
        pass


def get_setting(conn: Connection, key: str) -> str | None:
    value = scalar(conn, "SELECT value FROM settings WHERE key = :key", {"key": key})
    return None if value is None else str(value)


def set_setting(conn: Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO settings(key, value) VALUES (:key, :value) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        {"key": key, "value": value},
    )


def generation(conn: Connection) -> int:
    """Bumped by every index run that changed something: caches keyed on it stay correct."""
    return int(get_setting(conn, Setting.GENERATION) or 0)


def bump_generation(conn: Connection) -> None:
    """Mark the index as changed: cached query results of earlier generations are dropped."""
    set_setting(conn, Setting.GENERATION, str(generation(conn) + 1))
    conn.execute("DELETE FROM query_cache")


def vectors_version(conn: Connection) -> int:
    """Changes with every commit that changes chunk_vectors (see Setting.VECTORS_VERSION)."""
    return int(get_setting(conn, Setting.VECTORS_VERSION) or 0)


def bump_vectors_version(conn: Connection) -> None:
    set_setting(conn, Setting.VECTORS_VERSION, str(vectors_version(conn) + 1))


@contextmanager
def read_transaction(conn: Connection) -> Iterator[None]:
    """One snapshot for several reads (BEGIN ... COMMIT, deferred): a search reads settings,
    vectors and rows as of one committed state, never half of an index run's next commit.
    (PostgreSQL: REPEATABLE READ, READ ONLY.)"""
    if isinstance(conn, PostgresConnection):
        with conn.read_transaction():
            yield
        return
    if not conn.getautocommit():  # already inside a transaction: it is the snapshot
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if not conn.getautocommit():
            conn.execute("COMMIT")  # read only: ends the snapshot, nothing to write


def data_version(conn: Connection) -> int:
    """Changes when another connection commits what a count of vectors reads: SQLite's
    PRAGMA data_version; PostgreSQL: the vectors version (every vector commit bumps it)."""
    if isinstance(conn, PostgresConnection):
        return vectors_version(conn)
    return int(scalar(conn, "PRAGMA data_version"))


def write_if_free(conn: Connection, statement: str, params: dict[str, Any]) -> bool:
    """One small write (a search caching its result) that never waits on a writer: skipped
    while an index run holds the write lock. False when the database cannot be written here
    (read-only, a full disk): the caller stops trying."""
    if isinstance(conn, PostgresConnection):
        return conn.write_if_free(statement, params)
    conn.set_busy_timeout(0)
    try:
        with conn:
            conn.execute(statement, params)
    except apsw.BusyError:
        pass  # an index run holds the write lock: skip rather than wait
    except (apsw.ReadOnlyError, apsw.FullError, apsw.IOError, apsw.CantOpenError):
        return False
    finally:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    return True


# --- the full-text rows -------------------------------------------------------------------------

def write_full_text(conn: Connection, statement: str,
                    rows: Sequence[tuple[int, str, str, str]]) -> None:
    """Full-text rows (chunk id, path, context, body: analysed text) in one batch: into
    chunks_fts (`statement`, sql/index_fts_insert.sql); PostgreSQL: FTS5's tokens of the same
    texts as postings rows, and each chunk's row length."""
    if isinstance(conn, PostgresConnection):
        conn.write_postings(rows)
    else:
        conn.executemany(statement, rows)


def full_text_done(conn: Connection) -> None:
    """After an index run changed rows: PostgreSQL recomputes N and the total row length BM25
    reads (fts_stats); FTS5 keeps its own."""
    if isinstance(conn, PostgresConnection):
        conn.full_text_done()


# --- the search files ----------------------------------------------------------------------

def search_legs(conn: Connection) -> Any:
    """Which legs the index ranks with where the engine has a choice (PostgreSQL: its
    settings, ragdb.pg_search.PgRanking); None for rag.db, which has one way."""
    if isinstance(conn, PostgresConnection):
        from ragdb.pg_search import PG_SETTINGS, PgRanking

        return PgRanking.of_settings({key: value for key in PG_SETTINGS
                                      if (value := get_setting(conn, key)) is not None})
    return None


def set_search_legs(conn: Connection, legs: Any) -> None:
    """Rank with these legs from now on (PostgreSQL: ragdb.pg_search.PgRanking): the HNSW and
    pg_textsearch indexes built or dropped and the choice recorded, in the caller's write
    transaction. rag.db has one way to rank: refused in one line."""
    if not isinstance(conn, PostgresConnection):
        raise RagdbError("the lexical and vector legs are PostgreSQL options: rag.db ranks "
                         "with FTS5 and sqlite-vec (`ragdb copy` it to PostgreSQL first)")
    conn.run("vectors_ann_index" if legs.vectors == "hnsw" else "vectors_ann_drop")
    conn.run("fts_textsearch_index" if legs.lexical == "pg_textsearch" else "fts_textsearch_drop")
    for key, value in legs.as_settings().items():
        set_setting(conn, key, value)


def search_rows(conn: Connection, statement: str, params: dict[str, Any],
                legs: Any = None, memo: dict[Any, Any] | None = None) -> list[tuple[Any, ...]]:
    """A search file's rows: rag.db's sql/<statement>.sql; PostgreSQL: each leg's file (with
    the pg_textsearch or HNSW option where `legs` names one), then its twin over their hits,
    with the parameters ragdb.pg_search makes from the same ones. `memo`: one search's legs,
    kept across the runs of a hybrid search with a bridge leg (PostgreSQL; rag.db's files
    run whole)."""
    if isinstance(conn, PostgresConnection):
        from ragdb.pg_search import PgRanking, search_rows as pg_rows

        return pg_rows(conn, statement, params, legs if legs is not None else PgRanking(),
                       memo)
    return [tuple(row) for row in conn.execute(sql(statement), params)]
