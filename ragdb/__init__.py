"""ragdb: ask questions about a codebase; answers cite the exact places they come from."""

from __future__ import annotations

from typing import Any

__all__ = ["RagDB"]


def __getattr__(name: str) -> Any:
    """`ragdb.RagDB` without importing the whole library for `python -m ragdb --help`."""
    if name == "RagDB":
        from ragdb.database import RagDB

        return RagDB
    raise AttributeError(f"module 'ragdb' has no attribute {name!r}")
