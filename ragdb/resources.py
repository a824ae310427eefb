"""Where ragdb's files live: SQL beside the package in a wheel (or at the repository root in a
checkout), and model weights under one models folder."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """Find `sql/` or `migrations/`, in the installed package first, then in the checkout."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"ragdb's {name}/ folder is missing next to {_PACKAGE}")


class SqlText(str):
    """A statement's SQLite text that knows its file's name: an engine with its own version of
    the file (PostgreSQL: sql/postgresql/<name>.sql, where its SQL differs) runs that one
    instead."""

    name: str

    def __new__(cls, text: str, name: str) -> "SqlText":
        made = super().__new__(cls, text)
        made.name = name
        return made


@cache
def sql(name: str) -> SqlText:
    """Text of `sql/<name>.sql`, read once per process."""
    return SqlText((resource_dir("sql") / f"{name}.sql").read_text(encoding="utf-8"), name)


def models_dir() -> Path:
    """Where model weights and compiled-model caches live: `RAGDB_MODELS_DIR`, else data/models
    (relative to the current folder). The embedder and the answer model share it."""
    return Path(os.environ.get("RAGDB_MODELS_DIR") or "data/models")
