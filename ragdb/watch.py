"""`ragdb index --watch`: after the first run, re-index the roots whenever files under them
change (watchfiles: changes are batched, then one index run, one transaction, per batch)."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ragdb.database import IndexResult, RagDB
from ragdb.errors import RagdbError
from ragdb.indexing import ragdb_files

DEBOUNCE_MS = 500  # changes closer together than this form one batch (a save, a git checkout)
#: How often a watch of the recorded roots looks for a root another `ragdb index` added (it
#: was never watched: its edits waited for a change under another root).
ROOTS_CHECK_MS = 2000


_WALK_OPTIONS = ("include", "exclude", "ignore", "hidden", "follow_symlinks", "into_existing")


def watch_roots(rag: RagDB, roots: list[Path], options: dict[str, Any],
                report: Callable[[IndexResult], str], *,
                recorded: bool = False,
                stop: threading.Event | None = None,
                debounce_ms: int = DEBOUNCE_MS) -> int:
    """Re-index `roots` after each batch of changes until Ctrl-C (or `stop` is set); returns
    the number of runs. Each run is an ordinary incremental index run: only files whose hash
    changed are re-chunked, files gone lose their rows, all in one transaction.

    `recorded`: the roots are rag.db's own, and each is re-walked with the include, ignore and
    hidden options of its last run (as `ragdb index` with no folder does), not with `options`'.
    """
    if recorded:
        options = {k: v for k, v in options.items() if k not in _WALK_OPTIONS}
    from watchfiles import DefaultFilter

    # rag.db's own files change with every run, the models' cache with a model's first load:
    # what the walk never reads (indexing.ragdb_files) starts no run either
    own = ragdb_files(rag.conn)
    folders = tuple(path + os.sep for path in own)
    default = DefaultFilter()

    def relevant(change: Any, path: str) -> bool:
        real = os.path.realpath(path)
        return real not in own and not real.startswith(folders) and default(change, path)

    def waiting() -> None:
        print("ragdb: another index run is in progress; waiting for it to end",
              file=sys.stderr, flush=True)

    def current() -> list[Path]:
        """The roots to watch: those given, or with `recorded` rag.db's roots as they are now
        (a `ragdb index other` beside the watch adds one), those that exist."""
        found = rag.root_paths() if recorded else roots
        return [r for r in found or roots if r.exists()]

    print(f"ragdb: watching {', '.join(str(r) for r in roots)} (Ctrl-C stops)",
          file=sys.stderr, flush=True)
    runs = 0
    for _changes in _batches(current, relevant, debounce_ms, stop,
                             ROOTS_CHECK_MS if recorded else None):
        existing = [r for r in roots if r.exists()] if not recorded else current()
        if not existing:
            print("ragdb: every watched root is gone; stopping", file=sys.stderr, flush=True)
            break
        try:
            # Another run (a `ragdb index`, the server's) in progress: wait for it, then run.
            result = rag.index([] if recorded else existing, wait=True, on_wait=waiting,
                               **options)
        except RagdbError as exc:  # a root gone or unreadable: say so, keep watching
            print(f"ragdb: {exc}", file=sys.stderr, flush=True)
            continue
        runs += 1
        print(report(result), flush=True)
    return runs


def _batches(current: Callable[[], list[Path]], relevant: Callable[[Any, str], bool],
             debounce_ms: int, stop: threading.Event | None,
             check_ms: int | None = None) -> Iterator[object]:
    """watchfiles' batches of changes under the roots `current()` gives, until Ctrl-C or
    `stop`. With `check_ms`, every check_ms the roots are read again: a root added is watched
    from then on (said on stderr), a root gone is no longer watched.

    Its Rust side gives up on a name that is not UTF-8 ("Unable to decode path", raised from
    the iterator, which then ends): that batch is lost, so it is taken as a change (the index
    run skips and names the file) and watching starts again.
    """
    from watchfiles import watch
    from watchfiles._rust_notify import WatchfilesRustInternalError

    # Its only warning is "KeyboardInterrupt caught, stopping watch" on Ctrl-C, which Python's
    # last-resort handler printed under ragdb's own lines: Ctrl-C is how a watch ends.
    logging.getLogger("watchfiles.main").setLevel(logging.ERROR)
    watched = current()
    while stop is None or not stop.is_set():
        if not watched:
            yield set()  # every root is gone: the caller says so and stops
            return
        try:
            for changes in watch(*watched, watch_filter=relevant, debounce=debounce_ms,
                                 stop_event=stop, raise_interrupt=False,
                                 rust_timeout=check_ms or 5_000,
                                 yield_on_timeout=check_ms is not None):
                if changes:
                    yield changes
                if check_ms is not None:
                    now = current()
                    if {str(r) for r in now} != {str(r) for r in watched}:
                        added = [str(r) for r in now if r not in watched]
                        if added:
                            print(f"ragdb: watching {', '.join(added)} too", file=sys.stderr,
                                  flush=True)
                        watched = now
                        break  # watch again, over the roots as they are now
            else:
                return
        except WatchfilesRustInternalError as exc:
            if "decode path" not in str(exc):
                raise RagdbError(f"watching stopped: {exc}") from None
            yield set()
