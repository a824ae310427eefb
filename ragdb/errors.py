"""The one exception type the CLI and HTTP layers turn into a single clear line, and the lines
that name why rag.db cannot be written (read-only, locked by another process)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class RagdbError(Exception):
    """A problem the user can act on; its message is shown as is, without a traceback."""


class MissingIndexError(RagdbError):
    """Raised where a command needs an index that has not been built."""


class ForeignDatabaseError(MissingIndexError):
    """The file is some other application's database: as far as ragdb goes, there is no index
    there, and nothing may be written to it."""


class DiskFullError(RagdbError):
    """SQLite said the disk (or the database's size limit) is full; the write was rolled back."""


class UnavailableError(RagdbError):
    """Not the request's fault and not for ever: try again later (HTTP 503)."""


class DatabaseBusyError(UnavailableError):
    """Another connection holds the write lock (an index run elsewhere); try again later."""


class IndexRunningError(RagdbError):
    """Another index run holds rag.db's index lock (HTTP 409): one run at a time."""


def read_only_error(path: Path) -> RagdbError:
    """Why rag.db cannot be written here, and what to do about it, in one line."""
    folder = Path(os.path.abspath(path)).parent
    if path.exists() and not os.access(path, os.W_OK):
        why = f"{path} is read-only ({stat.filemode(path.stat().st_mode)})"
    elif not path.exists() and not os.access(folder, os.W_OK | os.X_OK):
        why = f"cannot create {path}: its folder {folder} is read-only"
    elif not os.access(folder, os.W_OK | os.X_OK):
        why = (f"{path} is in a read-only folder ({folder}), where SQLite must write its "
               "-wal, -shm and lock files")
    else:
        why = f"{path} is read-only here (a read-only file system?)"
    return RagdbError(f"{why}: check its permissions or pass --db")


def locked_error(path: Path | str) -> RagdbError:
    """The one line for rag.db locked by another connection past the busy timeout: who holds
    it (Linux says in /proc/locks) and what to do."""
    pids = lock_holders(Path(path))
    who = f" (pid {', '.join(map(str, pids))})" if pids else ""
    return DatabaseBusyError(f"{path} is locked by another process{who}: wait for it to "
                             "finish or stop it, then try again")


def lock_holders(path: Path) -> list[int]:
    """The other processes holding a write lock on rag.db or its -wal or -shm file, as
    /proc/locks lists them (empty where that file does not exist: the pid is not known)."""
    files = set()
    for name in (path, path.with_name(path.name + "-shm"), path.with_name(path.name + "-wal")):
        try:
            st = name.stat()
        except OSError:
            continue
        files.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    try:
        table = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    pids: list[int] = []
    for line in table.splitlines():
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 1234 fe:00:5678 120 120"; a waiter's has "->" after "1:"
        if len(fields) < 6 or fields[1] == "->" or fields[3] != "WRITE":
            continue  # a waiter, or a lock that does not keep a writer out
        try:
            major, minor, inode = fields[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
            pid = int(fields[4])
        except ValueError:
            continue
        if key in files and pid > 0 and pid != os.getpid() and pid not in pids:
            pids.append(pid)
    return pids
