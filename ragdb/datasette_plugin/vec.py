"""A private copy of the sqlite-vec extension for Datasette's SQLite library."""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import tempfile
import threading
from typing import Any

import sqlite_vec

from ragdb.datasette_plugin.service import warn

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
            warn(f"sqlite-vec not loaded into Datasette ({exc}); vector tables will not open")
            return None
        _VEC_STATE["path"] = copy
        return copy
