"""`ragdb index --watch`: after the first run, re-index the roots whenever files under them
change (watchfiles: changes are batched, then one index run, one transaction, per batch)."""

from __future__ import annotations

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

    print(f"ragdb: watching {', '.join(str(r) for r in roots)} (Ctrl-C stops)",
          file=sys.stderr, flush=True)
    runs = 0
    for _changes in _batches(roots, relevant, debounce_ms, stop):
        existing = [r for r in roots if r.exists()]
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


def _batches(roots: list[Path], relevant: Callable[[Any, str], bool], debounce_ms: int,
             stop: threading.Event | None) -> Iterator[object]:
    """watchfiles' batches of changes until Ctrl-C or `stop`.

    Its Rust side gives up on a name that is not UTF-8 ("Unable to decode path", raised from
    the iterator, which then ends): that batch is lost, so it is taken as a change (the index
    run skips and names the file) and watching starts again.
    """
    from watchfiles import watch
    from watchfiles._rust_notify import WatchfilesRustInternalError

    while stop is None or not stop.is_set():
        try:
            yield from watch(*roots, watch_filter=relevant, debounce=debounce_ms,
                             stop_event=stop, raise_interrupt=False, yield_on_timeout=False)
            return
        except WatchfilesRustInternalError as exc:
            if "decode path" not in str(exc):
                raise RagdbError(f"watching stopped: {exc}") from None
            yield set()
