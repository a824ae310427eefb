"""Reading a file the walk found: regular files only, size-capped, never a hang.

The ignore rules and the index run both read files through here (a .gitignore that is a FIFO
or a link to /dev/zero must not stall a run)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_FILE_BYTES = 4 * 1024 * 1024


def inside(target: Path, top: Path) -> bool:
    return target == top or top in target.parents


def link_target(path: Path) -> Path | None:
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):  # dangling, a loop, or an unreadable step
        return None


#: A file that exists but could not be opened or read: its rows are kept, not removed.
UNREADABLE = "unreadable"
VANISHED = "vanished"


def read_regular(path: Path) -> tuple[bytes | None, str]:
    """(the bytes of a regular file, '') or (None, why it was not read).

    Only regular files are read (a FIFO would block, /dev/zero never ends), checked before
    opening and again on the open descriptor, and never more than the size cap plus one byte.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None, "not a regular file"
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None, VANISHED
    except OSError:
        return None, UNREADABLE
    try:
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None, "not a regular file"
            if info.st_size > MAX_FILE_BYTES:
                return None, "too large"
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None, UNREADABLE
    if len(raw) > MAX_FILE_BYTES:
        return None, "too large"
    return raw, ""


#: The byte order marks of UTF-32 and UTF-16, little- and big-endian.
_WIDE_BOMS = (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff", b"\xff\xfe", b"\xfe\xff")


def read_text(path: Path) -> tuple[str | None, bytes, str]:
    """(text, raw bytes, reason it was skipped or ''): a regular file (read_regular) that is
    neither binary nor other than UTF-8."""
    raw, reason = read_regular(path)
    if raw is None:
        return None, b"", reason
    if b"\x00" in raw[:8192]:
        # UTF-16 and UTF-32 text (PowerShell, Visual Studio) holds NULs too: by its byte order
        # mark it is text in another encoding, not binary.
        return None, raw, "not UTF-8" if raw.startswith(_WIDE_BOMS) else "binary"
    try:
        return raw.decode("utf-8"), raw, ""
    except UnicodeDecodeError:
        return None, raw, "not UTF-8"
