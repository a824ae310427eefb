"""PostgreSQL as ragdb's second engine (`--db postgresql://user@host/db`), over psycopg 3.

ragdb's logic (indexing, vectors, search, the front door) talks to one connection object and
the functions of ragdb.db. For rag.db that object is apsw's Connection; here it is a
PostgresConnection, which offers the same small part of apsw's interface the logic uses
(`execute`, `executemany`, `filename`, `readonly`, `fts5_tokenizer`, `close`) plus what only
differs by engine, which ragdb.db hands to it: transactions (a REPEATABLE READ snapshot for a
search, one transaction per index run), the index lock (an advisory lock on a session of its
own), the full-text rows (FTS5's tokens as `postings` rows, by COPY) and the cache write.

SQL stays in files: a statement named `x` (ragdb.resources.sql("x")) runs as
`sql/postgresql/x.sql`, with the same `:name` parameters, rewritten for psycopg when loaded
(`:name` -> `%(name)s`, `?` -> `%s`, `%` -> `%%`; comments dropped). Int8 vectors (bytes
parameters) go over as halfvec text, `[1,-2,...]`, cast in the SQL. Every psycopg error comes
out as a one-line RagdbError, and no message carries the password.

psycopg is imported on first connection only: SQLite users never need it.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ragdb.errors import (
    DiskFullError,
    ForeignDatabaseError,
    IndexRunningError,
    MissingIndexError,
    RagdbError,
    UnavailableError,
)
from ragdb.resources import SqlText, resource_dir

if TYPE_CHECKING:
    import psycopg

    from ragdb.postings import Postings

SCHEMES = ("postgresql://", "postgres://")
#: Advisory lock keys (database-wide): "RAGD", as rag.db's application_id, for the index run;
#: the next number for migrations; the one after, held shared by each write of an index run
#: (index_lock_held.sql), for a run that takes the index lock to wait for the last one's write.
INDEX_LOCK_KEY = 0x52414744
MIGRATE_LOCK_KEY = INDEX_LOCK_KEY + 1
WRITE_LOCK_KEY = INDEX_LOCK_KEY + 2
CONNECT_TIMEOUT_S = 10
#: How long a run that is refused retries first (as ragdb.db's flock: a probe must not make a
#: run that starts at that moment fail).
_LOCK_RETRY_S = 0.25
#: How long a search waits to cache its result behind an index run's locks before skipping it
#: (PostgresConnection.write_if_free).
CACHE_LOCK_TIMEOUT = "100ms"
#: SQLSTATEs: lock_not_available, read_only_sql_transaction, disk_full, insufficient_privilege.
LOCK_NOT_AVAILABLE, READ_ONLY, DISK_FULL, NO_PRIVILEGE = "55P03", "25006", "53100", "42501"

Params = dict[str, Any] | Sequence[Any] | None


def is_url(location: object) -> bool:
    """Whether a --db value names a PostgreSQL database rather than a rag.db file."""
    return isinstance(location, str) and location.lower().startswith(SCHEMES)


def display(url: str) -> str:
    """The URL as ragdb prints it: without a password, in the user part or the query."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            netloc = f"{userinfo.split(':', 1)[0]}@{host}"
        query = "&".join(p for p in parts.query.split("&")
                         if p and not p.lower().startswith("password="))
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:  # not even urlsplit reads it: cut anything that may be a password
        shown = re.sub(r"(://[^:/@?]*):[^@]*@", r"\1@", url)
        return re.sub(r"(?i)password=[^&]*&?", "", shown)


def _password(url: str) -> str:
    """The password a URL carries, if any (read by libpq's parser, else by pattern)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        return str(conninfo_to_dict(url).get("password") or "")
    except Exception:  # a URL libpq cannot read: where a password would stand
        found = (re.search(r"://[^:/@?]*:([^@]*)@", url)
                 or re.search(r"(?i)password=([^&]*)", url))
        return found.group(1) if found else ""


def _one_line(exc: BaseException, url: str = "") -> str:
    """The first line of an error's message, with the URL (which libpq may quote) shown
    without its password and the password itself, should it appear, as ***."""
    diag = getattr(exc, "diag", None)
    text = (getattr(diag, "message_primary", None) or str(exc) or type(exc).__name__).strip()
    text = " ".join(text.splitlines()[0].split()) if text else type(exc).__name__
    if url:
        text = text.replace(url, display(url))
        secret = _password(url)
        if len(secret) >= 3:
            text = text.replace(secret, "***")
    return text


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise RagdbError("--db postgresql://... needs psycopg: install ragdb with its postgres "
                         "extra (`uv sync --extra postgres`, `pip install 'ragdb[postgres]'`)"
                         ) from None
    # psycopg logs what it ignores while closing a broken connection ("error ignored
    # terminating <psycopg.Pipeline [BAD]>"); ragdb says what happened in its own one line.
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    return psycopg


# --- SQL files ---------------------------------------------------------------------------------

_TOKEN_PATTERN = (r"""
    (?P<string>'(?:[^']|'')*')
  | (?P<ident>"(?:[^"]|"")*")
  | (?P<dollar>\$(?P<tag>[A-Za-z_]*)\$.*?\$(?P=tag)\$)
  | (?P<line>--[^\n]*)
  | (?P<block>/\*.*?\*/)
  | (?P<cast>::)
  | :(?P<param>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<positional>\?)
  | (?P<percent>%)
  | (?P<end>;)
""")


@cache
def _token() -> re.Pattern[str]:
    """Compiled on first use: a SQLite user never pays for it (ragdb's start-up time)."""
    return re.compile(_TOKEN_PATTERN, re.VERBOSE | re.DOTALL)


def psycopg_statements(text: str) -> tuple[str, ...]:
    """SQL with SQLite-style parameters as psycopg statements, one per `;`: `:name` becomes
    `%(name)s`, `?` `%s` and `%` `%%` (outside strings, identifiers and comments, which are
    dropped); a `::` cast is kept as it is."""
    out: list[str] = []
    current: list[str] = []
    at = 0
    for m in _token().finditer(text):
        current.append(text[at:m.start()])
        at = m.end()
        kind = m.lastgroup if m.lastgroup != "tag" else "dollar"
        if kind in ("string", "ident", "dollar"):
            current.append(m.group().replace("%", "%%"))
        elif kind in ("line", "block"):
            current.append(" ")
        elif kind == "cast":
            current.append("::")
        elif kind == "param":
            current.append(f"%({m.group('param')})s")
        elif kind == "positional":
            current.append("%s")
        elif kind == "percent":
            current.append("%%")
        else:
            out.append("".join(current))
            current = []
    current.append(text[at:])
    out.append("".join(current))
    return tuple(s.strip() for s in out if s.strip())


@cache
def pg_statements(name: str) -> tuple[str, ...]:
    """`sql/postgresql/<name>.sql` as psycopg statements, read once per process; where the
    statement is the same SQL on both engines it is written once, as `sql/<name>.sql`."""
    folder = resource_dir("sql")
    for path in (folder / "postgresql" / f"{name}.sql", folder / f"{name}.sql"):
        try:
            return psycopg_statements(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
    raise RagdbError(f"this ragdb has no statement {name} for PostgreSQL "
                     f"(sql/postgresql/{name}.sql)")


@cache
def _inline(text: str) -> tuple[str, ...]:
    return psycopg_statements(text)


def migrations() -> list[tuple[int, str]]:
    """migrations/postgresql/NNN_*.sql in order, as (version, text)."""
    found = []
    for path in sorted((resource_dir("migrations") / "postgresql").glob("*.sql")):
        number = path.name.split("_", 1)[0]
        if number.isdigit():
            found.append((int(number), path.read_text(encoding="utf-8")))
    return found


def vector_text(blob: bytes) -> str:
    """int8 vector bytes as pgvector's text form, `[1,-2,...]` (exact in halfvec)."""
    return "[" + ",".join(map(str, memoryview(blob).cast("b"))) + "]"


def _adapt(params: Params) -> dict[str, Any] | list[Any]:
    """Bytes parameters (ragdb's int8 vectors) as halfvec text; the rest as they are."""
    if params is None:
        return {}
    if isinstance(params, dict):
        return {k: vector_text(v) if isinstance(v, bytes) else v for k, v in params.items()}
    return [vector_text(v) if isinstance(v, bytes) else v for v in params]


#: What COPY's text format escapes in a value.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


class Rows(list[tuple[Any, ...]]):
    """A statement's rows (all fetched), iterable like an apsw cursor."""

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self)


class PostgresError(RagdbError):
    """A psycopg error, said in one line (`sqlstate` kept for the callers that branch on it)."""

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class ConnectionLostError(PostgresError):
    """The server went away (restarted, the backend terminated, the network): the open
    transaction, if any, was rolled back by the server."""


class IndexLockLostError(UnavailableError):
    """The index run's lock session ended mid-run: the run stops before its next commit, so
    a run that took the lock since never sees its writes interleaved with this one's."""


# --- the connection ----------------------------------------------------------------------------

class PostgresConnection:
    """One psycopg connection (autocommit: transactions are begun and ended explicitly, as
    ragdb.db does with apsw), shaped like the part of apsw.Connection ragdb's logic uses."""

    def __init__(self, url: str, pg: psycopg.Connection[Any],
                 application_name: str = "ragdb") -> None:
        self.url = url
        self.shown = display(url)
        self._pg = pg
        self._application_name = application_name
        self._postings: Postings | None = None
        #: The backend pid of the session holding the index lock for a run of this connection
        #: (index_lock), which each write of the run checks; None outside a run.
        self._lock_pid: int | None = None
        self._sqlite: Any = None  # an in-memory apsw connection, for FTS5's tokenizer
        #: GLOB patterns compiled by the server (ragdb.pg_search.compiled_globs), by their
        #: JSON text: they depend on nothing but the patterns and the schema's functions.
        self.compiled_globs: dict[str | None, tuple[list[str], str | None]] = {}

    # -- apsw's shape --------------------------------------------------------------------------

    @property
    def filename(self) -> str:
        """What messages name the database by (apsw: the file), without the password."""
        return self.shown

    def readonly(self, name: str) -> bool:
        """A standby or a read-only role is found out by the first write (the cache's)."""
        return False

    def fts5_tokenizer(self, name: str, args: list[str]) -> Any:
        """SQLite's FTS5 tokenizer (from an in-memory apsw connection): query terms are
        stemmed exactly as the postings were."""
        if self._sqlite is None:
            import apsw

            self._sqlite = apsw.Connection(":memory:")
        return self._sqlite.fts5_tokenizer(name, args)

    @property
    def postings(self) -> Postings:
        if self._postings is None:
            from ragdb.postings import Postings

            self._postings = Postings()
        return self._postings

    def execute(self, statement: str, params: Params = None, prepare: bool | None = None,
                ) -> Rows:
        """Run a statement (every statement of its file, in order); the rows of the last.
        `prepare` is psycopg's: None prepares a statement on the server once it has run a few
        times, False never does.

        Outside a transaction, a BEGIN or a SELECT that finds the connection gone (the server
        restarted, the session was terminated) connects again and runs once more: nothing of
        the lost session was pending, so a long-lived door (`ragdb serve`, `ragdb mcp`)
        outlives a server restart. Inside one, the loss is the caller's error."""
        args = _adapt(params)
        texts = self._texts(statement)
        idle = self.getautocommit()
        try:
            return self._run(texts, args, prepare)
        except ConnectionLostError:
            if not (idle and len(texts) == 1
                    and texts[0].lstrip().upper().startswith(("BEGIN", "SELECT"))):
                raise
        self.close()
        self._pg = _connect(self.url, application_name=self._application_name)._pg
        return self._run(texts, args, prepare)

    def _run(self, texts: tuple[str, ...], args: dict[str, Any] | list[Any],
             prepare: bool | None = None) -> Rows:
        try:
            cursor = None
            for text in texts:
                cursor = self._pg.execute(text, args, prepare=prepare)
            if cursor is None or cursor.description is None:
                return Rows()
            return Rows(cursor.fetchall())
        except Exception as exc:
            raise self.error(exc) from None

    def executemany(self, statement: str, seq: Iterable[Params]) -> Rows:
        """One statement for each parameter set (pipelined); the rows each returned."""
        texts = self._texts(statement)
        if len(texts) != 1:
            raise RagdbError(f"executemany runs one statement, {statement[:60]!r} has "
                             f"{len(texts)}")
        rows = Rows()
        try:
            cursor = self._pg.cursor()
            cursor.executemany(texts[0], [_adapt(p) for p in seq], returning=True)
            while True:
                if cursor.description is not None:
                    rows.extend(cursor.fetchall())
                if not cursor.nextset():
                    break
        except Exception as exc:
            raise self.error(exc) from None
        return rows

    def close(self) -> None:
        try:
            self._pg.close()
        except Exception:
            pass

    def _texts(self, statement: str) -> tuple[str, ...]:
        if isinstance(statement, SqlText):
            return pg_statements(statement.name)
        return _inline(statement)

    @property
    def driver(self) -> psycopg.Connection[Any]:
        """The psycopg connection itself, for what apsw's shape has no room for (COPY)."""
        return self._pg

    def run(self, name: str, params: Params = None, prepare: bool | None = None) -> Rows:
        """A statement that exists for PostgreSQL only (sql/postgresql/<name>.sql)."""
        return self.execute(SqlText("", name), params, prepare)

    # -- errors -------------------------------------------------------------------------------

    def error(self, exc: BaseException) -> RagdbError:
        """A psycopg error as one line that names the database (never its password)."""
        if isinstance(exc, RagdbError):
            return exc
        psycopg = _psycopg()
        if not isinstance(exc, psycopg.Error):
            raise exc
        reason = _one_line(exc, self.url)
        state = getattr(getattr(exc, "diag", None), "sqlstate", None)
        if self._pg.closed or (isinstance(exc, psycopg.OperationalError) and state is None):
            return ConnectionLostError(f"lost the connection to PostgreSQL at {self.shown} "
                                       f"({reason})", state)
        if state and state.startswith("57P"):  # admin_shutdown, crash_shutdown, ...
            return ConnectionLostError(f"lost the connection to PostgreSQL at {self.shown} "
                                       f"({reason})", state)
        if state == DISK_FULL:
            return DiskFullError(f"PostgreSQL at {self.shown} is out of disk space ({reason}); "
                                 "nothing of this write was kept")
        if state == READ_ONLY:
            return PostgresError(f"{self.shown} is read-only here (a standby?): ragdb cannot "
                                 "write it", state)
        return PostgresError(f"PostgreSQL at {self.shown}: {reason}", state)

    # -- transactions --------------------------------------------------------------------------

    def getautocommit(self) -> bool:
        """Whether no transaction is open (apsw's name)."""
        from psycopg.pq import TransactionStatus

        status = self._pg.info.transaction_status
        return status in (TransactionStatus.IDLE, TransactionStatus.UNKNOWN)

    def _rollback(self) -> None:
        if not self._pg.closed and not self.getautocommit():
            try:
                self._pg.execute("ROLLBACK")
            except Exception:
                pass  # the original error says more

    @contextmanager
    def write_transaction(self) -> Iterator[None]:
        """BEGIN ... COMMIT, rolled back on any exception; a lost connection is said as what
        it means for the index (the server rolled the transaction back)."""
        self.execute("BEGIN")
        try:
            self._check_index_lock()
            yield
            self._check_index_lock()
        except ConnectionLostError as exc:
            raise ConnectionLostError(f"{exc}: nothing of this write was kept and the "
                                      "database holds its last complete index",
                                      exc.sqlstate) from None
        except BaseException:
            self._rollback()
            raise
        try:
            self.execute("COMMIT")
        except ConnectionLostError as exc:
            raise ConnectionLostError(f"{exc} while committing: the database holds either its "
                                      "last complete index or this one; run it again",
                                      exc.sqlstate) from None

    @contextmanager
    def read_transaction(self) -> Iterator[None]:
        """One snapshot for several reads: REPEATABLE READ, READ ONLY (inside a transaction
        already, that one is the snapshot)."""
        if not self.getautocommit():
            yield
            return
        self.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield
        finally:
            if not self._pg.closed and not self.getautocommit():
                try:
                    self._pg.execute("COMMIT")  # read only: ends the snapshot
                except Exception:
                    pass

    def _check_index_lock(self) -> None:
        """Inside an index run's write: stop unless the run's lock session still holds the
        index lock (pg_terminate_backend, a restart or a network cut may have ended it, and
        another run may hold it now). The write holds WRITE_LOCK_KEY shared till it ends."""
        if self._lock_pid is None:
            return
        if not self.run("index_lock_held", {"key": INDEX_LOCK_KEY, "write_key": WRITE_LOCK_KEY,
                                            "pid": self._lock_pid})[0][0]:
            raise IndexLockLostError(
                f"this index run lost its lock on {self.shown} (the lock's session was ended: "
                "pg_terminate_backend, a restart or a network cut): it stopped, nothing of its "
                "last write was kept; run `ragdb index` again")

    def write_if_free(self, statement: str, params: Params) -> bool:
        """One short write (the query cache) that never waits on an index run for long:
        skipped when locks are held. False when this database cannot be written here."""
        try:
            self.execute("BEGIN")
            self.execute("SET LOCAL lock_timeout = '100ms'")  # CACHE_LOCK_TIMEOUT
            self.execute(statement, params)
            self.execute("COMMIT")
        except RagdbError as exc:
            self._rollback()
            return getattr(exc, "sqlstate", None) == LOCK_NOT_AVAILABLE
        return True

    # -- one index run at a time --------------------------------------------------------------

    @contextmanager
    def index_lock(self, *, wait: bool = False,
                   on_wait: Callable[[], None] | None = None) -> Iterator[None]:
        """Hold the database's index lock for one run: pg_advisory_lock on a session of its
        own (kept from idling out), which the server releases when that session ends, even
        when its process is killed. A second run is refused with IndexRunningError, or with
        `wait` waits. Should the session end mid-run, the run's next write or commit stops
        it (_check_index_lock), and a run that takes the lock meanwhile is refused while a
        write of the first is still open (index_lock_barrier)."""
        session = _connect(self.url, application_name="ragdb index lock")
        held = False
        outer = self._lock_pid
        try:
            pid = int(session.run("index_lock_session")[0][0])
            refused = IndexRunningError(f"another index run is in progress on {self.shown}; "
                                        "try again when it ends")
            deadline = time.monotonic() + _LOCK_RETRY_S
            while not session.run("index_lock_try", {"key": INDEX_LOCK_KEY})[0][0]:
                if time.monotonic() >= deadline:
                    if not wait:
                        raise refused
                    if on_wait is not None:
                        on_wait()
                    session.run("index_lock_wait", {"key": INDEX_LOCK_KEY})
                    break
                time.sleep(0.05)
            held = True
            if wait:
                session.run("index_lock_barrier_wait", {"write_key": WRITE_LOCK_KEY})
            elif not session.run("index_lock_barrier", {"write_key": WRITE_LOCK_KEY})[0][0]:
                raise refused
            self._lock_pid = pid
            yield
        finally:
            self._lock_pid = outer
            if held:
                try:
                    session.run("index_unlock", {"key": INDEX_LOCK_KEY})
                except RagdbError:
                    pass  # the session is gone, and the lock with it
            session.close()

    def index_running(self) -> bool:
        """Whether some session holds this database's index lock now."""
        return bool(self.run("index_running", {"key": INDEX_LOCK_KEY})[0][0])

    # -- full text ------------------------------------------------------------------------------

    def write_postings(self, rows: Sequence[tuple[int, str, str, str]]) -> None:
        """Full-text rows (chunk_id, path, context, body: the analysed texts FTS5 would take)
        as postings (COPY), the texts themselves (chunks_fts, as rag.db's) and each chunk's
        FTS5 row length."""
        postings, lengths = self.postings.of_chunks(rows)
        # COPY's text format, built in one join: twice as fast as psycopg's write_row here.
        # (unicode61 tokens hold no tab, newline or backslash; escaped should one ever.)
        terms = {term: term.translate(_COPY_ESCAPES) for term in {p[0] for p in postings}}
        data = "".join(f"{terms[term]}\t{chunk_id}\t{tf_path}\t{tf_context}\t{tf_body}\n"
                       for term, chunk_id, tf_path, tf_context, tf_body in postings)
        texts = "".join("\t".join(str(v).translate(_COPY_ESCAPES) for v in row) + "\n"
                        for row in rows)
        try:
            with self._pg.cursor().copy(pg_statements("index_postings_copy")[0]) as copy:
                copy.write(data)
            with self._pg.cursor().copy(pg_statements("index_fts_copy")[0]) as copy:
                copy.write(texts)
        except Exception as exc:
            raise self.error(exc) from None
        self.run("index_fts_lengths", {"ids": [chunk_id for chunk_id, _ in lengths],
                                       "lengths": [length for _, length in lengths]})

    def full_text_done(self) -> None:
        """After a run's writes: N and the total row length BM25 reads (fts_stats)."""
        self.run("index_fts_stats")

    # -- opening --------------------------------------------------------------------------------

    def _open(self, *, create: bool, into_existing: bool) -> None:
        """Recognise the database as ragdb's (or blank), then bring its schema up to date;
        another application's database is refused before anything is written."""
        state = self.run("schema_state")[0]
        schema, is_ragdb, n_tables, has_vector, vector_available = state
        if schema is None:
            raise RagdbError(f"{self.shown}: no schema of its search_path exists; create it "
                             "or use another database")
        latest = migrations()[-1][0]
        if is_ragdb:
            version = int(self.run("schema_version")[0][0] or 0)
            if version > latest:
                raise RagdbError(
                    f"{self.shown} was written by a newer ragdb (schema {version}, this one "
                    f"knows {latest}); upgrade ragdb or index into another --db")
            if version == latest:
                return
        elif n_tables and not into_existing:
            raise ForeignDatabaseError(
                f"{self.shown} is not a ragdb index ({n_tables} tables of another application "
                f"in schema {schema}); ragdb leaves it untouched: use another database, or "
                "`ragdb index --into-existing` adds ragdb's tables to it")
        elif not create:
            raise MissingIndexError(f"{self.shown} holds no ragdb index: run `ragdb index` "
                                    "first")
        if not has_vector and not vector_available:
            raise RagdbError(f"{self.shown}: the server has no pgvector extension, which "
                             "ragdb's vectors need; install pgvector on the server "
                             "(https://github.com/pgvector/pgvector)")
        self._migrate(latest)

    def _migrate(self, latest: int) -> None:
        """Each migration in its own transaction, under a lock: two first runs at once
        create the schema once."""
        for number, text in migrations():
            with self.write_transaction():
                self.run("schema_migrate_lock", {"key": MIGRATE_LOCK_KEY})
                if self.run("schema_state")[0][1]:
                    version = int(self.run("schema_version")[0][0] or 0)
                    if number <= version:
                        continue
                try:
                    self._pg.execute(text)  # no parameters: several statements at once
                except Exception as exc:
                    raise self._migration_error(exc, number) from None
                self.run("schema_version_set", {"version": number})

    def _migration_error(self, exc: BaseException, number: int) -> RagdbError:
        error = self.error(exc)
        if isinstance(error, PostgresError) and error.sqlstate == NO_PRIVILEGE:
            user = self._pg.info.user
            return RagdbError(
                f"{self.shown}: role {user} may not create ragdb's schema here "
                f"({_one_line(exc, self.url)}); pgvector must be enabled by an "
                "administrator (CREATE EXTENSION vector) and the role needs CREATE on the "
                "schema")
        return PostgresError(f"{error} (migration {number:03d}); nothing of it was kept",
                             getattr(error, "sqlstate", None))


def _connect(url: str, *, application_name: str = "ragdb") -> PostgresConnection:
    """A connection to `url`, or one line that says why there is none."""
    psycopg = _psycopg()
    from psycopg.conninfo import conninfo_to_dict

    shown = display(url)
    try:
        given = conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise RagdbError(f"cannot read the PostgreSQL URL {shown}: {_one_line(exc, url)}"
                         ) from None
    ports = str(given.get("port") or "").split(",")
    if not all(p.strip().isdigit() for p in ports if p.strip()):
        raise RagdbError(f"cannot read the PostgreSQL URL {shown}: the port "
                         f"{given.get('port')!r} is not a number")
    extra: dict[str, Any] = {}
    if "connect_timeout" not in given:
        extra["connect_timeout"] = CONNECT_TIMEOUT_S
    if "application_name" not in given:
        extra["application_name"] = application_name
    try:
        pg = psycopg.connect(url, autocommit=True, **extra)
    except psycopg.Error as exc:
        reason = _one_line(exc, url)
        reason = re.sub(r"^(connection failed: )?connection to server (at|on) .*? failed: ", "",
                        reason)
        raise RagdbError(f"cannot connect to PostgreSQL at {shown}: {reason}") from None
    return PostgresConnection(url, pg, application_name)


def index_running(url: str) -> bool:
    """Whether an index run holds the index lock of the database at `url` (which need not
    hold an index yet)."""
    conn = _connect(url)
    try:
        return conn.index_running()
    finally:
        conn.close()


def connect(url: str, *, create: bool = False,
            into_existing: bool = False) -> PostgresConnection:
    """Open a PostgreSQL database as a ragdb index, as ragdb.db.connect opens rag.db: a blank
    database without `create` is a MissingIndexError, another application's is refused, and
    migrations/postgresql/ are applied."""
    conn = _connect(url)
    try:
        conn._open(create=create, into_existing=into_existing)
    except BaseException:
        conn.close()
        raise
    return conn
