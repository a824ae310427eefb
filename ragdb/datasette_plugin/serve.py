"""`ragdb serve`: Datasette over rag.db with ragdb's plugin, on loopback by default."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path
from typing import Any

from ragdb.datasette_plugin.service import PLUGIN, PluginConfig, service_for
from ragdb.db import connect
from ragdb.errors import MissingIndexError, RagdbError


def ensure_registered() -> None:
    """Register this plugin where the entry point was not loaded (e.g. under pytest)."""
    from datasette.plugins import pm

    module = sys.modules["ragdb.datasette_plugin"]
    if not pm.is_registered(module) and pm.get_plugin(PLUGIN) is None:
        pm.register(module, PLUGIN)


def make_datasette(db_path: Path, *, corpus_roots: list[Path] | None = None,
                   model: str | None = None, extra: dict[str, Any] | None = None) -> Any:
    """A Datasette over rag.db with ragdb's plugin configured (used by `serve` and tests)."""
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
    return Datasette(files=[str(db_path)], metadata=metadata)


def _check_port(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise RagdbError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def serve(db_path: Path, *, host: str = "127.0.0.1", port: int = 8001,
          corpus_roots: list[Path] | None = None, model: str | None = None) -> None:
    """Serve rag.db with Datasette and ragdb's routes until interrupted (as `datasette serve`).

    The index must exist (`ragdb index` first); its migrations are applied before Datasette
    reads the schema, so the tables it lists are the current ones.
    """
    import uvicorn

    db_path = Path(db_path)
    if not db_path.exists():
        raise MissingIndexError(f"no index at {db_path}: run `ragdb index` first")
    connect(db_path).close()  # refuses a foreign database; applies migrations first
    if not 1 <= port <= 65535:
        raise RagdbError(f"--port must be between 1 and 65535, got {port}")
    _check_port(host, port)
    os.environ.setdefault("OPENVINO_TELEMETRY_DISABLE", "1")
    datasette = make_datasette(db_path, corpus_roots=corpus_roots, model=model)
    asyncio.run(datasette.invoke_startup())
    service_for(datasette).warm_up()
    print(f"ragdb: serving {db_path} on http://{host}:{port}/ "
          f"(questions: http://{host}:{port}{service_for(datasette).ask_url()})",
          file=sys.stderr, flush=True)
    uvicorn.run(datasette.app(), host=host, port=port, log_level="info", lifespan="on",
                workers=1)
