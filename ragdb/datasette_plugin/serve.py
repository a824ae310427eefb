"""`ragdb serve`: Datasette over rag.db with ragdb's plugin, on loopback by default."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import socket
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from ragdb.datasette_plugin.service import PLUGIN, PluginConfig, mark_checked, service_for
from ragdb import worker
from ragdb.db import Location, forbid_in_this_process, location, needs_immutable, shown
from ragdb.errors import MissingIndexError, RagdbError


def ensure_registered() -> None:
    """Register this plugin where the entry point was not loaded (e.g. under pytest)."""
    from datasette.plugins import pm

    module = sys.modules["ragdb.datasette_plugin"]
    if not pm.is_registered(module) and pm.get_plugin(PLUGIN) is None:
        pm.register(module, PLUGIN)


def make_datasette(db_path: Location, *, corpus_roots: list[Path] | None = None,
                   model: str | None = None, extra: dict[str, Any] | None = None) -> Any:
    """A Datasette over rag.db with ragdb's plugin configured (used by `serve` and tests).

    A PostgreSQL database (a postgresql:// URL) is not a file Datasette can serve: the
    plugin's API and question page work on it, and Datasette serves no database."""
    from datasette.app import Datasette

    ensure_registered()
    config: dict[str, Any] = {"db": str(db_path)}
    if corpus_roots:
        config["corpus_roots"] = [str(r) for r in corpus_roots]
    if model:
        config["model"] = model
    config.update(extra or {})
    PluginConfig.from_metadata(config)  # fail now on a bad value
    metadata = {"title": "ragdb", "plugins": {PLUGIN: config}}
    files = [str(db_path)] if isinstance(db_path, Path) else []
    if isinstance(db_path, Path) and needs_immutable(db_path):
        # Datasette opens a file mode=ro, which a WAL database cannot be without its -shm:
        # read it as ragdb's own read-only connections do (db._open_read_only).
        return Datasette(immutables=files, metadata=metadata)
    return Datasette(files=files, metadata=metadata)


#: Seconds a client may take to send a request's headers (uvicorn has no such limit).
HEADER_TIMEOUT_S = 10.0


def _timed_h11() -> type:
    """uvicorn's h11 protocol that drops a connection whose request headers do not arrive in
    HEADER_TIMEOUT_S (a stalled or trickling client would otherwise hold it for ever)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimedH11Protocol(H11Protocol):
        _header_timer: Any = None

        def _waiting(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(HEADER_TIMEOUT_S, self._too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _too_slow(self) -> None:
            self._header_timer = None
            if self._waiting() and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._waiting():
                self._arm()
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return TimedH11Protocol


#: Seconds a client may take to send a whole request body: api.BODY_TIMEOUT_S bounds each
#: pause, and a body trickled a byte at a time would otherwise hold its connection for ever.
BODY_DEADLINE_S = 60.0


def body_deadline(app: Any, seconds: float) -> Any:
    """ASGI middleware: a request whose body has not all arrived `seconds` after the app
    first asked for it is answered 408 and its connection closed; the app, waiting on the
    body, is told the client went away (http.disconnect) and what it sends after is
    dropped."""
    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        body_done = started = timed_out = False

        async def timed_receive() -> dict[str, Any]:
            nonlocal body_done, timed_out, deadline
            if timed_out:
                return {"type": "http.disconnect"}
            if body_done:
                return dict(await receive())
            if deadline is None:
                deadline = loop.time() + seconds
            try:
                left = max(deadline - loop.time(), 0.0)
                message = dict(await asyncio.wait_for(receive(), left))
            except asyncio.TimeoutError:
                timed_out = True
                if not started:
                    await _send_408(send, seconds)
                return {"type": "http.disconnect"}
            body_done = message["type"] != "http.request" or not message.get("more_body")
            return message

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            if timed_out and not started:
                return  # the 408 was the answer
            started = started or message["type"] == "http.response.start"
            await send(message)

        await app(scope, timed_receive, tracked_send)
    return guarded


async def _send_408(send: Any, seconds: float) -> None:
    body = json.dumps({"error": f"the request body did not arrive within {seconds:g} s"}
                      ).encode()
    await send({"type": "http.response.start", "status": 408, "headers": [
        (b"content-type", b"application/json; charset=utf-8"),
        (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _check_port(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise RagdbError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def serve(db_path: Location, *, host: str = "127.0.0.1", port: int = 8001,
          corpus_roots: list[Path] | None = None, model: str | None = None) -> None:
    """Serve rag.db with Datasette and ragdb's routes until interrupted (as `datasette serve`).

    The index must exist (`ragdb index` first); its migrations are applied before Datasette
    reads the schema, so the tables it lists are the current ones.
    """
    import uvicorn

    db_path = location(db_path)
    if isinstance(db_path, Path) and not db_path.exists():
        raise MissingIndexError(f"no index at {db_path}: run `ragdb index` first")
    # Refuses a foreign database and applies migrations, in a child process: this process
    # reads rag.db through Datasette's SQLite only (see ragdb/worker.py).
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                             initializer=worker.die_with_parent,
                             initargs=(os.getpid(),)) as pool:
        pool.submit(worker.check, str(db_path)).result()
    mark_checked(db_path)  # the plugin's startup need not check it again
    if isinstance(db_path, Path):
        forbid_in_this_process(db_path)
    if not 1 <= port <= 65535:
        raise RagdbError(f"--port must be between 1 and 65535, got {port}")
    _check_port(host, port)
    os.environ.setdefault("OPENVINO_TELEMETRY_DISABLE", "1")
    bound = [] if host in ("0.0.0.0", "::", "") else [host]  # a wildcard is no name
    datasette = make_datasette(db_path, corpus_roots=corpus_roots, model=model,
                               extra={"allowed_hosts": bound} if bound else None)
    asyncio.run(datasette.invoke_startup())
    service_for(datasette).warm_up()
    print(f"ragdb: serving {shown(db_path)} on http://{host}:{port}/ "
          f"(questions: http://{host}:{port}{service_for(datasette).ask_url()})",
          file=sys.stderr, flush=True)
    # Stalled clients are dropped: headers not in within HEADER_TIMEOUT_S, idle keep-alive
    # connections after 5 s, headers over 64 KiB; a body must arrive whole within
    # BODY_DEADLINE_S, and without a pause of api.BODY_TIMEOUT_S.
    app = body_deadline(datasette.app(), BODY_DEADLINE_S)
    previous = _exit_on_sigterm()
    try:
        uvicorn.run(app, host=host, port=port, log_level="info", lifespan="on",
                    workers=1, http=_timed_h11(), timeout_keep_alive=5,
                    h11_max_incomplete_event_size=64 * 1024, limit_concurrency=256)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _exit_on_sigterm() -> Any:
    """SIGTERM (`kill`, systemd, `docker stop`) ends the server as Ctrl-C does. uvicorn shuts
    down gracefully, then raises the signal again under the handler it found: the default one
    killed the process there, before its worker pools were shut down, and Python's resource
    tracker warned of leaked semaphores. Raising SystemExit (status 143) lets them end.
    Returns the handler to restore; None off the main thread, where signals cannot be set."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _terminated)
