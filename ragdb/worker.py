"""ragdb's work behind the server, in worker processes of its own.

Datasette reads rag.db through its sqlite3 module's SQLite; ragdb writes and caches through
apsw's. SQLite's locks do not hold between two copies of the library in one process (a reader
saw a torn snapshot, and Datasette's pages broke after a rejected write), so the server
process never opens rag.db with apsw: searches and answers run in one worker process (which
keeps its RagDB, embedder and answer model across requests) and index runs in another (so
searches are served meanwhile). Workers are started with "spawn": no state is shared.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import apsw

from ragdb.answering import Answer
from ragdb.database import RagDB
from ragdb.db import Location, Setting, check_is_ragdb, get_setting, location
from ragdb.embedder import Embedder, embedder_identity, load_embedder
from ragdb.errors import DatabaseBusyError, MissingIndexError
from ragdb.generate.style import Style
from ragdb.indexing import refuse_held_secrets
from ragdb.postgres import PostgresConnection, display
from ragdb.repo_map import check_tokens
from ragdb.walking import DEFAULT_EXCLUDE, DEFAULT_INCLUDE
from ragdb.retrieve import NO_FILTERS, Filters, Hit, Mode

#: A file path: while that file exists, an index run pauses after each file (at most 30 s).
#: Lets a test hold a run in flight; nothing else sets it.
HOLD_ENV = "RAGDB_INDEX_HOLD"

_state: dict[str, Any] = {}

#: Seconds between two looks of the watchdog thread at whether the server is still there.
PARENT_POLL_S = 0.5
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent: int) -> None:
    """End this process when `parent` (the server) is gone, even killed with SIGKILL: a worker
    holds hundreds of MB and rag.db open, and nothing else would ever stop it.

    On Linux the kernel sends SIGTERM at the parent's death (PR_SET_PDEATHSIG); everywhere a
    daemon thread also watches the parent pid, which changes when the parent dies.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):  # no prctl here: the watchdog alone does it
            pass
    if os.getppid() != parent:  # gone before the signal was asked for
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="ragdb-parent-watch", daemon=True).start()


def init(db_path: str, model: str | None, parent: int | None = None) -> None:
    """Runs once in each worker process."""
    if parent is not None:
        die_with_parent(parent)
    os.environ.setdefault("OPENVINO_TELEMETRY_DISABLE", "1")
    _state["db_path"] = location(db_path)
    _state["model"] = model


def _rag() -> RagDB:
    rag = _state.get("rag")
    if rag is None:
        rag = RagDB(_state["db_path"], model=_state["model"], warn=_warn)
        rag.conn  # a missing or foreign database fails here, before anything is kept
        _state["rag"] = rag
    return rag


def _warn(message: str) -> None:
    import sys

    print(f"ragdb: warning: {message}", file=sys.stderr, flush=True)


def _busy(fn: Any) -> Any:
    """apsw's busy errors do not cross process boundaries as themselves."""
    try:
        return fn()
    except (apsw.BusyError, apsw.LockedError):
        raise DatabaseBusyError("the database is busy; try again") from None


def check(db_path: str) -> None:
    """Open (and migrate) rag.db once, refusing a foreign database, and one that holds files
    today's rules leave out as secrets (an older ragdb indexed them; Datasette would serve
    every row of a rag.db, the API any index's): `ragdb serve`'s and `ragdb mcp`'s start."""
    rag = RagDB(location(db_path))
    try:
        shown = display(db_path) if isinstance(rag.conn, PostgresConnection) else db_path
        refuse_held_secrets(rag.conn, shown, "nothing was served")
    finally:
        rag.conn.close()


def warm_up() -> None:
    rag = _rag()
    if rag.status()["vectors"]:
        rag.embedder
    if rag.reranking is not None:  # RAGDB_RERANKER: fetched and compiled before a question
        rag.reranking.encoder


SearchOutcome = tuple[list[Hit], int, float | None, list[str], dict[str, Any] | None]


def search(question: str, k: int, mode: Mode, filters: Filters = NO_FILTERS,
           remember: bool = True) -> SearchOutcome:
    """Hits, the generation, the dense leg's coverage, the warnings (what the mode cannot
    find here; for no hits, why, where the question or the filters tell:
    RagDB.why_nothing_found), and what reranking did (RagDB.last_rerank; None when off).
    `remember`: RagDB.search's."""
    def run() -> SearchOutcome:
        rag = _rag()
        hits = rag.search(question, k, mode, filters, remember=remember)
        warning = rag.mode_warning(mode)
        why = None if hits else rag.why_nothing_found(question, filters)
        warnings = ([warning] if warning else []) + ([f"no sources found: {why}"] if why else [])
        return (hits, rag.generation, rag.dense_coverage(), warnings, rag.last_rerank)
    result: SearchOutcome = _busy(run)
    return result


def search_many(questions: list[str], k: int, mode: Mode,
                filters: Filters = NO_FILTERS) -> list[list[Hit]]:
    result: list[list[Hit]] = _busy(lambda: _rag().search_many(questions, k, mode, filters))
    return result


def symbols(what: str, arg: Any, options: dict[str, Any]) -> dict[str, Any]:
    """A read of definitions and references (RagDB.definition, references, callers, callees,
    outline; `map`: RagDB.repo_map) as JSON."""
    def run() -> dict[str, Any]:
        rag = _rag()
        if what == "map":
            tokens = check_tokens(arg)  # the HTTP query string gives "64": answer 64, as MCP
            text, entries = rag.repo_map(tokens, options.get("filters", NO_FILTERS))
            return {"tokens": tokens, "map": text, "entries": [e.to_json() for e in entries]}
        result: dict[str, Any] = getattr(rag, what)(arg, **options).to_json()
        return result
    found: dict[str, Any] = _busy(run)
    return found


def status() -> dict[str, Any]:
    rag = _rag()
    body: dict[str, Any] = _busy(rag.status)
    body["model"] = rag.loaded_model
    body["query_embedder"] = rag.searcher.loaded_embedder
    return body


def answer(question: str, hits: list[Hit], k: int, mode: Mode, search_ms: float,
           style: Style, tokens: Any, cancel: Any, filters: Filters = NO_FILTERS) -> Answer:
    """Answer from hits; pieces go to the `tokens` queue (a Manager queue) as they come, and a
    set `cancel` event stops a generation whose client went away."""
    def on_token(piece: str) -> None:
        if cancel is not None and cancel.is_set():
            raise KeyboardInterrupt("the client went away")
        if tokens is not None:
            tokens.put(piece)

    try:
        return _rag().answer_from(question, hits, k=k, mode=mode, search_ms=search_ms,
                                  on_token=on_token, style=style, filters=filters)
    except KeyboardInterrupt:
        return Answer(question, k, mode, hits, "", style=None)


def index(roots: list[str] | None, include: list[str] | None, vectors: bool,
          embedder_name: str | None, exclude: list[str] | None = None) -> dict[str, Any]:
    """The same steps as `ragdb index`, on a RagDB of its own; the embedder is kept."""
    db_path: Location = _state["db_path"]
    if isinstance(db_path, Path) and db_path.exists() and db_path.stat().st_size:
        check_is_ragdb(db_path)
    hold = os.environ.get(HOLD_ENV)

    def progress(_count: int) -> None:
        deadline = time.monotonic() + 30
        while hold and os.path.exists(hold) and time.monotonic() < deadline:
            time.sleep(0.02)

    def run() -> dict[str, Any]:
        with RagDB(db_path, warn=_warn) as rag:
            if not roots and not include and not exclude and rag.roots():
                chosen: list[Path] = []  # every recorded root, each walked as its last run
            else:
                chosen = [Path(r) for r in roots] if roots else _last_roots(rag)
            result = rag.index(
                chosen, max_chunk_size=rag.stored_max_chunk_size(),
                include=include or list(DEFAULT_INCLUDE),
                exclude=exclude or list(DEFAULT_EXCLUDE), vectors=vectors,
                embedder_name=embedder_name,
                embedder=_embedder(embedder_name, rag) if vectors else None,
                progress=progress if hold else None,
            )
        stats = result.stats
        return {
            "stats": {**asdict(stats), "files_skipped": stats.files_skipped},
            "vectors": asdict(result.vectors) if result.vectors is not None else None,
            "generation": result.generation, "roots": result.roots,
        }
    outcome: dict[str, Any] = _busy(run)
    return outcome


def _last_roots(rag: RagDB) -> list[Path]:
    """The roots of the last run (as `ragdb index` was given them), else data/raw."""
    roots = rag.last_roots()
    return [Path(r) for r in roots] if roots else [Path("data/raw")]


def _embedder(name: str | None, rag: RagDB) -> Embedder:
    """One embedder per model, loaded once in this worker (None: the index's own, as it is
    recorded now: a `ragdb index --embedder` elsewhere may have switched it since)."""
    if name is None:
        try:
            name = get_setting(rag.conn, Setting.EMBEDDER_NAME)
        except MissingIndexError:  # no index yet: the default model
            name = None
    key = embedder_identity(name)
    cache: dict[str, Embedder] = _state.setdefault("embedders", {})
    if key not in cache:
        cache[key] = load_embedder(name)
    return cache[key]
