"""One index run at a time per rag.db, whatever the door: the lock file beside it that the run
in progress holds (an flock, released by the kernel when its holder dies), and the probe that
asks whether a run holds it now. PostgreSQL's lock is an advisory lock (ragdb/postgres.py):
given its connection or URL, the functions below hand the work to it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import apsw

from ragdb.db import Connection
from ragdb.errors import IndexRunningError, RagdbError, read_only_error
from ragdb.postgres import PostgresConnection, is_url

#: How long a run that is refused retries first: a probe (index_running) holds the lock for
#: microseconds, and must not make a run that starts at that moment fail.
_LOCK_RETRY_S = 0.25


def index_lock_path(db_path: Path | str) -> Path:
    """The lock file beside rag.db held by the index run in progress (removed when it ends);
    beside the real file, so every name of rag.db (a symlink, a relative path) shares it."""
    return Path(os.path.realpath(db_path) + ".lock")


@contextmanager
def index_lock(db_path: Path | str | Connection, *, wait: bool = False,
               on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold rag.db's index lock for one index run: a second run (any door, any process) is
    refused with IndexRunningError, or with `wait` waits for the first to end.

    An flock on `rag.db.lock`: the kernel releases it when the holder dies, even by SIGKILL,
    so a killed run never leaves rag.db locked. The holder removes the file before releasing
    it; a run that locked a file already removed tries again on the new one. (Given a
    connection: its database's lock; PostgreSQL's is an advisory lock, PostgresConnection.)
    """
    if isinstance(db_path, PostgresConnection):
        with db_path.index_lock(wait=wait, on_wait=on_wait):
            yield
        return
    if isinstance(db_path, apsw.Connection):
        db_path = db_path.filename
    if not str(db_path):  # an in-memory database: no other process can reach it
        yield
        return
    path = index_lock_path(db_path)
    deadline = time.monotonic() + _LOCK_RETRY_S
    told = False
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise read_only_error(Path(db_path)) from None
            raise RagdbError(f"cannot write {path}, the lock file beside {db_path} "
                             f"({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if not wait and time.monotonic() >= deadline:
                raise IndexRunningError(
                    f"another index run is in progress on {db_path}; try again when it ends"
                ) from None
            if wait and not told and time.monotonic() >= deadline and on_wait is not None:
                on_wait()
                told = True
            time.sleep(0.05)
            continue
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # locked a file its holder had just removed: take the new one
    try:
        yield
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
        os.close(fd)


def index_running(db_path: Path | str | Connection) -> bool:
    """Whether an index run holds rag.db's index lock now (any process)."""
    if isinstance(db_path, PostgresConnection):
        return db_path.index_running()
    if is_url(db_path):
        from ragdb import postgres

        return postgres.index_running(str(db_path))
    if isinstance(db_path, apsw.Connection):
        db_path = db_path.filename
    path = index_lock_path(db_path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False  # no lock file: no run (or a folder we cannot read: we cannot know)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing releases a lock it took
    return False
