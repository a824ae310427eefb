"""ragdb inside Datasette: loads sqlite-vec so every table of rag.db opens."""

from __future__ import annotations

from typing import Any

import sqlite_vec
from datasette import hookimpl


@hookimpl
def prepare_connection(conn: Any) -> None:
    """Load sqlite-vec where the sqlite3 module allows extensions (pysqlite3 does)."""
    if not hasattr(conn, "enable_load_extension"):
        return
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
    except Exception:  # an old SQLite or a locked-down build: browsing still works without vec0
        pass
