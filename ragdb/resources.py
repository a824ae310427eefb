"""Where ragdb's files live: SQL beside the package in a wheel (or at the repository root in a
checkout), model weights under one models folder, and what ragdb writes for itself in the
user's cache folder, never in the folder it runs from."""

from __future__ import annotations

import hashlib
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


#: Where `ragdb answer` saves its records: beside rag.db (db.answers_dir), else in cache_dir.
#: The walk never indexes such a folder beside any rag.db it meets (ragdb's output).
SAVED_ANSWERS = Path("outputs", "answers")


def cache_dir() -> Path:
    """ragdb's folder in the user's cache: `$XDG_CACHE_HOME/ragdb`, else `~/.cache/ragdb`.

    Never the current folder: under MCP that is the user's project, and a compiled model or an
    answer written there lands in their repository. (A relative XDG_CACHE_HOME is ignored, as
    the XDG spec says.)"""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "ragdb"


def checkout_models_dir() -> Path | None:
    """`data/models` of the ragdb checkout this package runs from, where it exists: where
    `make install-writer` installs the writer and where models were kept before they moved to
    the cache folder (a wheel has no such folder)."""
    checkout = _PACKAGE.parent
    folder = checkout / "data" / "models"
    if (checkout / "pyproject.toml").is_file() and folder.is_dir():
        return folder
    return None


def models_dir() -> Path:
    """Where model weights and compiled-model caches live: `RAGDB_MODELS_DIR`; else the ragdb
    checkout's data/models where it holds them; else `models` in the cache folder (never the
    current folder). The embedder and the answer model share it."""
    given = os.environ.get("RAGDB_MODELS_DIR")
    if given:
        return Path(given).expanduser()
    return checkout_models_dir() or cache_dir() / "models"


@cache
def code_fingerprint() -> str:
    """A digest of ragdb's own code (every module and SQL file, as installed): part of the
    query cache's key, so that an upgraded ragdb never serves the results an older ranking
    cached (the cache is otherwise valid until the next index run changes something). Read
    once a process, when the cache is first used (about 1.5 MB)."""
    digest = hashlib.sha256()
    files = sorted(_PACKAGE.rglob("*.py")) + sorted(resource_dir("sql").rglob("*.sql"))
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def package_version() -> str:
    """ragdb's version as installed (`ragdb --version`, MCP's serverInfo); "unknown" when run
    from a checkout that is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ragdb")
    except PackageNotFoundError:
        return "unknown"
