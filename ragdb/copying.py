"""`ragdb copy`: a whole index from a rag.db into a PostgreSQL database, and back.

rag.db -> PostgreSQL: files, chunks, the analysed text of chunks_fts exactly as FTS5 holds it,
the postings made from that text by FTS5's own tokenizer (ragdb.postings) with each chunk's
FTS5 row length and fts_stats (so BM25 there is FTS5's), the window vectors as halfvec,
settings, roots, index runs and the common terms; ids are kept, and so are the next ids.
PostgreSQL -> rag.db: the same rows, FTS5 rebuilt from the analysed text, the vectors as int8.

The target is written in one transaction (a copy killed at any moment leaves the target as it
was), under the index lock. A target that already holds an index is refused unless `replace`
says to replace it; a PostgreSQL database of another application (tables and no ragdb mark)
is always refused. A bad URL, a server that is down or refuses the login: one line, with the
password masked.

The PostgreSQL connection, the schema (migrations/postgresql/*.sql, by its runner), the
statement loader and the index lock's key are the engine layer's (ragdb.postgres); the rows
themselves go by COPY on its psycopg connection.
"""

from __future__ import annotations

import os
import tempfile
import time
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, LiteralString, cast

from ragdb.db import connect, read_transaction, scalar, write_transaction
from ragdb.errors import IndexRunningError, RagdbError
from ragdb import postgres
from ragdb.pg_search import PG_SETTINGS, PgRanking
from ragdb.postgres import INDEX_LOCK_KEY, PostgresConnection, display, is_url, pg_statements
from ragdb.postgres import _one_line
from ragdb.postings import Postings
from ragdb.resources import sql
from ragdb.run_lock import index_lock
from ragdb.tokenize import analyse, analyse_names, defined_names
from ragdb.vectors import VECTOR_DIM
from ragdb.walking import below_root

if TYPE_CHECKING:  # psycopg is the postgres extra: imported where a copy needs it
    import apsw
    import psycopg

_BLOCK = 1 << 20  # bytes per write of a spooled COPY stream


#: Definitions and references (issue 41) travel with the index, names first (both others
#: point at them by id), so a copy answers `ragdb references` as its source does.
SYMBOL_TABLES = ("symbol_names", "symbol_defs", "symbol_refs")


def masked(url: str) -> str:
    """The URL as messages show it: without its password (ragdb.postgres.display)."""
    return display(url)


def _pg(url: str, *, create: bool) -> PostgresConnection:
    """The engine layer's connection (ragdb.postgres.connect: one line on a bad URL, a server
    that is down or a refused login; another application's database refused; with `create`,
    migrations/postgresql/ applied by its runner)."""
    return postgres.connect(url, create=create)


def _statement(name: str) -> LiteralString:
    """sql/postgresql/<name>.sql as psycopg takes it, by the engine layer's loader
    (one statement; ragdb's own file, never text from a user)."""
    return cast(LiteralString, pg_statements(name)[0])


def _run(pg: psycopg.Connection[Any], name: str, params: dict[str, Any] | None = None) -> None:
    """Every statement of sql/postgresql/<name>.sql, in order."""
    for statement in pg_statements(name):
        pg.execute(cast(LiteralString, statement), params)


def first_row(conn: psycopg.Connection[Any], name: str,
              params: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """The first row of sql/postgresql/<name>.sql (each of these returns one)."""
    row = conn.execute(_statement(name), params).fetchone()
    if row is None:
        raise RagdbError(f"sql/postgresql/{name}.sql returned no row")
    return tuple(row)


@dataclass
class CopyStats:
    files: int = 0
    chunks: int = 0
    postings: int = 0
    vectors: int = 0
    rebuilt_fts: int = 0  # chunks whose analysed text was remade (none stored for them)
    seconds: float = 0.0


def copy_index(source: str, target: str, *, replace: bool = False,
               ranking: PgRanking = PgRanking(),
               progress: Callable[[str], None] | None = None) -> CopyStats:
    """Copy the index in `source` to `target`: one is a rag.db path, the other a PostgreSQL
    URL. `ranking` (PostgreSQL targets) picks the lexical and vector legs, kept in settings."""
    started = time.perf_counter()
    to_pg, from_pg = is_url(target), is_url(source)
    if to_pg == from_pg:
        raise RagdbError("ragdb copy goes from a rag.db to a PostgreSQL URL "
                         "(postgresql://...) or back; got "
                         f"{'two URLs' if to_pg else 'two files'}")
    if to_pg:
        stats = _to_postgres(Path(source), target, replace, ranking, progress or _quiet)
    else:
        stats = _to_sqlite(source, Path(target), replace, progress or _quiet)
    stats.seconds = time.perf_counter() - started
    return stats


def _quiet(_message: str) -> None:
    pass


# --- rag.db -> PostgreSQL -----------------------------------------------------------------


def _to_postgres(source: Path, url: str, replace: bool, ranking: PgRanking,
                 progress: Callable[[str], None]) -> CopyStats:
    import psycopg

    if not source.exists():
        raise RagdbError(f"no index at {source}: nothing to copy")
    lite = connect(source)
    shown = masked(url)
    try:
        with read_transaction(lite):  # one committed state of rag.db
            if not lite.execute("SELECT 1 FROM chunks LIMIT 1").fetchall():
                raise RagdbError(f"{source} holds no index: nothing to copy")
            _refuse_secrets(lite, source)
            engine = _pg(url, create=True)
            pg = engine.driver
            try:
                with pg.transaction():
                    _prepare_target(pg, shown, replace)
                    stats = _write_postgres(lite, pg, ranking, progress)
                _run(pg, "copy_vacuum")
            except psycopg.errors.UndefinedFile as exc:  # e.g. no pg_textsearch library
                raise RagdbError(f"{shown}: {_one_line(exc, url)}") from None
            except psycopg.errors.FeatureNotSupported as exc:
                raise RagdbError(f"{shown}: {_one_line(exc, url)}") from None
            except psycopg.OperationalError as exc:
                raise RagdbError(f"lost the connection to {shown}; nothing was copied "
                                 f"({_one_line(exc, url)})") from None
            except psycopg.Error as exc:
                raise RagdbError(f"{shown}: nothing was copied: {_one_line(exc, url)}"
                                 ) from None
            finally:
                engine.close()
    finally:
        lite.close()
    return stats


def _refuse_secrets(lite: apsw.Connection, source: Path) -> None:
    """A rag.db an older ragdb built can hold files today's rules leave out as secrets (a
    Rails secrets.yml, a .cfg setting DB_PASSWORD): the next `ragdb index` removes them, but a
    copy would first put them on a server others search. Refused, nothing written."""
    from ragdb.indexing import refuse_held_secrets

    refuse_held_secrets(lite, str(source), "nothing was copied")


def _prepare_target(pg: psycopg.Connection[Any], shown: str, replace: bool) -> None:
    """Lock the target and refuse to overwrite an index without `replace` (the schema is
    the engine layer's: _pg)."""
    if not first_row(pg, "copy_lock", {"key": INDEX_LOCK_KEY})[0]:
        raise IndexRunningError(f"an index run or a copy is in progress on {shown}; "
                                "try again when it ends")
    if first_row(pg, "copy_holds_index")[0]:
        if not replace:
            raise RagdbError(f"{shown} already holds an index; --replace replaces it")
        _run(pg, "copy_clear")


def _write_postgres(lite: apsw.Connection, pg: psycopg.Connection[Any], ranking: PgRanking,
                    progress: Callable[[str], None]) -> CopyStats:
    stats = CopyStats()
    cur = pg.cursor()
    with cur.copy(_statement("copy_write_files")) as copy:
        for row in lite.execute(sql("copy_read_files")):
            copy.write_row(row)
            stats.files += 1
    progress(f"files: {stats.files}")
    postings = Postings()
    n_chunks = total_length = 0
    with _spool() as fts_rows, _spool() as posting_rows:
        with cur.copy(_statement("copy_write_chunks")) as copy:
            for row in lite.execute(sql("copy_read_chunks")):
                chunk_id = int(row[0])
                if row[9] is None:  # no full-text row: FTS5 counts no tokens for it
                    length = 0
                else:
                    path, context, body = (str(v) for v in row[9:12])
                    rows, length = postings.of_chunk(chunk_id, path, context, body)
                    fts_rows.write(_copy_line((chunk_id, path, context, body)))
                    for posting in rows:
                        posting_rows.write(_copy_line(posting))
                    stats.postings += len(rows)
                    n_chunks += 1
                    total_length += length
                copy.write_row((*row[:9], length))
                stats.chunks += 1
        progress(f"chunks: {stats.chunks}")
        _copy_spool(cur, "copy_write_chunks_fts", fts_rows)
        _run(pg, "copy_postings_unindex")  # the table is empty: index after loading
        _copy_spool(cur, "copy_write_postings", posting_rows)
        _run(pg, "copy_postings_reindex")
    progress(f"postings: {stats.postings}")
    _run(pg, "copy_write_stats", {"n_chunks": n_chunks, "total_length": total_length})
    with cur.copy(_statement("copy_write_vectors")) as copy:
        for vector_id, chunk_id, blob in lite.execute(sql("copy_read_vectors")):
            copy.write_row((vector_id, chunk_id, _halfvec_literal(blob)))
            stats.vectors += 1
    progress(f"vectors: {stats.vectors}")
    settings = {str(k): str(v) for k, v in lite.execute(sql("copy_read_settings"))}
    settings.update(ranking.as_settings())
    with cur.copy(_statement("copy_write_settings")) as copy:
        for item in sorted(settings.items()):
            copy.write_row(item)
    for name in ("roots", "index_runs", "common_terms", *SYMBOL_TABLES):
        with cur.copy(_statement(f"copy_write_{name}")) as copy:
            for row in lite.execute(sql(f"copy_read_{name}")):
                copy.write_row(row)
    _run(pg, "copy_symbol_sequences")
    chunks_seq, files_seq, runs_seq = lite.execute(sql("copy_read_sequences")).fetchall()[0]
    _run(pg, "copy_write_sequences",
         {"chunks": chunks_seq, "files": files_seq, "index_runs": runs_seq})
    _run(pg, "copy_analyze")
    if ranking.vectors == "hnsw":
        progress("building the HNSW index")
        _run(pg, "vectors_ann_index")
    if ranking.lexical == "pg_textsearch":
        progress("building the pg_textsearch index")
        _run(pg, "fts_textsearch_index")
    return stats


def _halfvec_literal(blob: bytes) -> str:
    if len(blob) != VECTOR_DIM:
        raise RagdbError(f"a vector in rag.db has {len(blob)} bytes, not {VECTOR_DIM} int8 "
                         "values: run `ragdb index` to re-embed")
    return "[" + ",".join(map(str, memoryview(blob).cast("b").tolist())) + "]"


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_line(values: tuple[Any, ...]) -> bytes:
    """One row in COPY's text format (values that are never NULL)."""
    return ("\t".join(str(v).translate(_COPY_ESCAPES) for v in values) + "\n").encode()


@contextmanager
def _spool() -> Iterator[IO[bytes]]:
    """Rows of a COPY held until the rows they refer to are written (memory, then disk)."""
    with tempfile.SpooledTemporaryFile(max_size=64 << 20) as spool:
        yield cast(IO[bytes], spool)


def _copy_spool(cur: psycopg.Cursor[Any], statement: str, spool: IO[bytes]) -> None:
    spool.seek(0)
    with cur.copy(_statement(statement)) as copy:
        while block := spool.read(_BLOCK):
            copy.write(block)


# --- PostgreSQL -> rag.db -----------------------------------------------------------------


def _to_sqlite(url: str, target: Path, replace: bool,
               progress: Callable[[str], None]) -> CopyStats:
    import psycopg

    shown = masked(url)
    engine = _pg(url, create=False)
    pg = engine.driver
    try:
        if target.is_dir():
            raise RagdbError(f"{target} is a directory, not a ragdb database")
        existed = target.exists()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            raise RagdbError(f"cannot create {target}: {target.parent} is not a folder") from None
        try:
            with pg.transaction():
                _run(pg, "copy_snapshot")
                if not first_row(pg, "copy_holds_index")[0]:
                    raise RagdbError(f"{shown} holds no index: nothing to copy")
                with index_lock(target):
                    lite = connect(target, create=True)
                    try:
                        if existed and lite.execute("SELECT 1 FROM chunks LIMIT 1").fetchall():
                            if not replace:
                                raise RagdbError(f"{target} already holds an index; "
                                                 "--replace replaces it")
                        with write_transaction(lite):
                            lite.execute(sql("copy_clear"))
                            stats = _write_sqlite(pg, lite, progress)
                    finally:
                        lite.close()
        except psycopg.OperationalError as exc:
            raise RagdbError(f"lost the connection to {shown}; {target} was not changed "
                             f"({_one_line(exc, url)})") from None
        except psycopg.Error as exc:
            raise RagdbError(f"{shown}: nothing was copied: {_one_line(exc, url)}") from None
        except BaseException:
            if not existed:
                _remove_db(target)
            raise
    finally:
        engine.close()
    return stats


def _remove_db(path: Path) -> None:
    """A rag.db this copy created and could not fill goes, with its WAL files."""
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            os.unlink(name)
        except OSError:
            pass


def _write_sqlite(pg: psycopg.Connection[Any], lite: apsw.Connection,
                  progress: Callable[[str], None]) -> CopyStats:
    stats = CopyStats()

    def rows(statement: str) -> Iterator[tuple[Any, ...]]:
        with pg.cursor(name=f"ragdb_copy_{statement}") as cur:
            cur.itersize = 5000
            cur.execute(_statement(statement))
            yield from cur

    lite.executemany(sql("copy_write_files"), rows("copy_read_files"))
    stats.files = int(scalar(lite, "SELECT count(*) FROM files"))
    progress(f"files: {stats.files}")
    chunk_rows: list[tuple[Any, ...]] = []
    fts_rows: list[tuple[int, str, str, str]] = []
    roots = [str(row[0]) for row in rows("copy_read_roots")]  # the path column is below them

    def flush() -> None:
        lite.executemany(sql("copy_write_chunks"), chunk_rows)
        lite.executemany(sql("index_fts_insert"), fts_rows)
        chunk_rows.clear()
        fts_rows.clear()

    for row in rows("copy_read_chunks"):
        chunk_id, text, context, kind = int(row[0]), str(row[8]), str(row[7]), str(row[13])
        chunk_rows.append(tuple(row[:9]))
        if row[9] is None:  # no analysed text stored: made again from the chunk
            stats.rebuilt_fts += 1
            fts_rows.append((chunk_id, analyse(below_root(str(row[12]), roots)),
                             f"{analyse(context)} "
                             f"{analyse_names(defined_names(text, kind))}".strip(),
                             analyse(text)))
        else:
            fts_rows.append((chunk_id, str(row[9]), str(row[10]), str(row[11])))
        stats.chunks += 1
        if len(chunk_rows) >= 5000:
            flush()
    flush()
    progress(f"chunks: {stats.chunks}")
    for vector_id, chunk_id, text in rows("copy_read_vectors"):
        lite.execute(sql("copy_write_vectors"), (vector_id, chunk_id, _int8_blob(str(text))))
        stats.vectors += 1
    progress(f"vectors: {stats.vectors}")
    lite.executemany(sql("copy_write_settings"),
                     [row for row in rows("copy_read_settings") if row[0] not in PG_SETTINGS])
    for name in ("roots", "index_runs", "common_terms", *SYMBOL_TABLES):
        lite.executemany(sql(f"copy_write_{name}"), rows(f"copy_read_{name}"))
    (last_chunk,) = first_row(pg, "copy_read_sequences")
    lite.execute(sql("copy_write_chunk_sequence"), {"seq": int(last_chunk)})
    return stats


def _int8_blob(text: str) -> bytes:
    """A halfvec's text ('[1,-2,...]') as the int8 bytes vec0 stores; refused if a value is not
    an int8 (a vector another program wrote: rag.db holds int8 only)."""
    try:
        values = [float(v) for v in text.strip("[]").split(",")]
        blob = array("b", [int(v) for v in values]).tobytes()
    except (ValueError, OverflowError):
        blob = b""
    if len(blob) != VECTOR_DIM or any(v != int(v) for v in values):
        raise RagdbError("a vector in the PostgreSQL index is not 384 int8 values; rag.db "
                         "holds int8 vectors only")
    return blob
