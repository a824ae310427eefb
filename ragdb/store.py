"""rag.db: opening it, its migrations, and writing files and chunks in one transaction per run."""

from __future__ import annotations

import os
from pathlib import Path

import apsw
import sqlite_vec

from ragdb.errors import MissingIndexError, RagdbError
from ragdb.resources import resource_dir

DEFAULT_DB = Path("data/processed/rag.db")


def default_db_path() -> Path:
    """`RAGDB_DB` wins over the default so scripts and tests can point elsewhere."""
    return Path(os.environ.get("RAGDB_DB") or DEFAULT_DB)


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


def connect(path: Path | str, *, create: bool = False) -> apsw.Connection:
    """Open rag.db with sqlite-vec loaded, WAL on and migrations applied.

    Without `create`, a missing file is a MissingIndexError rather than a new empty database,
    so `ragdb search` before `ragdb index` says what to do instead of returning nothing.
    """
    path = Path(path)
    if not path.exists():
        if not create:
            raise MissingIndexError(f"no index at {path}: run `ragdb index` first")
        path.parent.mkdir(parents=True, exist_ok=True)
    elif path.is_dir():
        raise RagdbError(f"{path} is a directory, not a ragdb database")
    try:
        conn = apsw.Connection(str(path))
        conn.set_busy_timeout(5000)
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        _migrate(conn, path)
    except apsw.NotADBError as exc:
        raise RagdbError(f"{path} is not a SQLite database or is corrupted ({exc})") from None
    except apsw.CorruptError as exc:
        raise RagdbError(f"{path} is corrupted ({exc}); delete it and run `ragdb index`") from None
    except apsw.CantOpenError as exc:
        raise RagdbError(f"cannot open {path} ({exc})") from None
    return conn


def _migrate(conn: apsw.Connection, path: Path) -> None:
    current = conn.execute("PRAGMA user_version").fetchall()[0][0]
    latest = schema_version()
    if current > latest:
        raise RagdbError(
            f"{path} was written by a newer ragdb (schema {current}, this one knows {latest}); "
            "upgrade ragdb or index into another --db"
        )
    for number, migration in migrations():
        if number <= current:
            continue
        with conn:
            conn.execute(migration.read_text(encoding="utf-8"))
            conn.execute(f"PRAGMA user_version = {int(number)}")


def get_setting(conn: apsw.Connection, key: str) -> str | None:
    rows = conn.execute("SELECT value FROM settings WHERE key = :key", {"key": key}).fetchall()
    return rows[0][0] if rows else None


def set_setting(conn: apsw.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO settings(key, value) VALUES (:key, :value) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        {"key": key, "value": value},
    )
