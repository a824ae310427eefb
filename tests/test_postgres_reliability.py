"""PostgreSQL under stress and bad input: a killed or cut-off index run leaves the previous
index whole, one index run at a time (the next one is refused in one line, or waits), searches
go on during a run, and every bad --db says one line without a traceback or a password."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from psycopg import sql

from ragdb import RagDB
from ragdb.errors import IndexRunningError, RagdbError
from ragdb.postgres import INDEX_LOCK_KEY
from tests.conftest import (
    SMALL_CORPUS,
    extract_slice,
    free_port,
    one_line_error,
    pg_admin,
    run_cli,
    write_corpus,
)

LORA = "data/raw/proj/docs/features/lora.md"


def _dbname(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def _ranked(url: str, cwd: Path) -> list[tuple[str, int, int]]:
    done = run_cli("search", "How do I load a LoRA adapter?", "--mode", "lexical", "--json",
                   "--k", "10", "--db", url, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return [(h["file_path"], h["first_character_index"], h["last_character_index"])
            for h in json.loads(done.stdout)]


def _counts(url: str) -> tuple[int, int, int]:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks),"
                           " (SELECT count(*) FROM postings)").fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


@pytest.fixture
def big_project(tmp_path: Path, pg_url: str) -> Path:
    """The small corpus indexed into PostgreSQL, and a slice of vLLM beside it whose index run
    takes seconds (the run the tests interrupt)."""
    project = extract_slice(tmp_path, every=6)
    write_corpus(project / "data" / "raw" / "proj")
    done = run_cli("index", "data/raw/proj", "--no-vectors", "--db", pg_url, cwd=project)
    assert done.returncode == 0, done.stderr
    return project


def _start_index(project: Path, url: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ragdb", "index", "data/raw", "--no-vectors", "--db", url,
         *extra], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _writing_backend(server: Any, url: str, proc: subprocess.Popen[str],
                     timeout: float = 60) -> int:
    """The pid of the index run's backend once its transaction has written (it has an xid)."""
    deadline = time.monotonic() + timeout
    with pg_admin(server) as admin:
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            row = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND application_name = "
                "'ragdb' AND backend_xid IS NOT NULL", [_dbname(url)]).fetchone()
            if row is not None:
                return int(row[0])
            time.sleep(0.01)
    pytest.fail("the index run never started writing")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_killed_index_run_keeps_the_previous_index(big_project: Path, pg_url: str,
                                                     pg_server: Any, sig: signal.Signals) -> None:
    before, counts = _ranked(pg_url, big_project), _counts(pg_url)
    proc = _start_index(big_project, pg_url)
    _writing_backend(pg_server, pg_url, proc)
    time.sleep(0.3)  # well into the run: files, chunks and postings written
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0
    if sig == signal.SIGINT:
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and "interrupted" in lines[0], stderr
    assert _counts(pg_url) == counts and counts[0] == len(SMALL_CORPUS)
    assert _ranked(pg_url, big_project) == before
    again = run_cli("index", "data/raw", "--no-vectors", "--db", pg_url, cwd=big_project)
    assert again.returncode == 0, again.stderr  # the lock went with the killed session
    assert _counts(pg_url)[0] > len(SMALL_CORPUS)


def test_a_connection_lost_mid_run_is_one_line_and_the_previous_index_stays(
        big_project: Path, pg_url: str, pg_server: Any) -> None:
    before, counts = _ranked(pg_url, big_project), _counts(pg_url)
    proc = _start_index(big_project, pg_url)
    pid = _writing_backend(pg_server, pg_url, proc)
    with pg_admin(pg_server) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
    stdout, stderr = proc.communicate(timeout=60)
    line = one_line_error(subprocess.CompletedProcess(proc.args, proc.returncode, stdout,
                                                      stderr))
    assert "lost the connection to PostgreSQL" in line and "last complete index" in line, line
    assert _counts(pg_url) == counts
    assert _ranked(pg_url, big_project) == before
    assert run_cli("index", "data/raw", "--no-vectors", "--db", pg_url, cwd=big_project
                   ).returncode == 0


def test_a_second_index_run_is_refused_in_one_line(big_project: Path, pg_url: str,
                                                   pg_server: Any) -> None:
    proc = _start_index(big_project, pg_url)
    _writing_backend(pg_server, pg_url, proc)
    second = run_cli("index", "data/raw/proj", "--no-vectors", "--db", pg_url, cwd=big_project)
    line = one_line_error(second)
    assert line.startswith("ragdb: another index run is in progress on postgresql://"), line
    searching = run_cli("search", "LoRA adapter", "--mode", "lexical", "--db", pg_url,
                        cwd=big_project)  # searches go on meanwhile
    assert searching.returncode == 0 and LORA in searching.stdout, searching.stderr
    assert proc.wait(timeout=120) == 0, proc.communicate()
    assert run_cli("index", "data/raw/proj", "--no-vectors", "--db", pg_url, cwd=big_project
                   ).returncode == 0


@pytest.fixture
def lock_holder(pg_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A session holding the database's index lock, as an index run elsewhere does."""
    with psycopg.connect(pg_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", [INDEX_LOCK_KEY])
        yield holder


def test_index_with_wait_queues_behind_the_run_in_progress(
        project: Path, pg_url: str, lock_holder: psycopg.Connection[Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    rag = RagDB(pg_url)
    assert rag.index_running()
    with pytest.raises(IndexRunningError, match="another index run is in progress"):
        rag.index(["data/raw"], vectors=False)
    told: list[float] = []
    done: list[Any] = []
    runner = threading.Thread(target=lambda: done.append(rag.index(
        ["data/raw"], vectors=False, wait=True, on_wait=lambda: told.append(time.monotonic()))))
    runner.start()
    time.sleep(1.0)
    assert told and not done  # told once, and waiting
    released = time.monotonic()
    lock_holder.execute("SELECT pg_advisory_unlock(%s)", [INDEX_LOCK_KEY])
    runner.join(timeout=60)
    assert done and done[0].stats.files_indexed == len(SMALL_CORPUS) and len(told) == 1
    assert told[0] < released and not rag.index_running()
    rag.close()


def test_twenty_clients_search_while_an_index_run_commits(big_project: Path,
                                                          pg_url: str) -> None:
    """Each client its own RagDB (connection, searcher, cache writes): no error, and every
    search sees one whole index, the old or the new."""
    errors: list[str] = []
    tops: list[str] = []
    searches = [0]
    proc = _start_index(big_project, pg_url)
    stop = threading.Event()

    def client(number: int) -> None:
        try:
            with RagDB(pg_url) as rag:
                while not stop.is_set():
                    hits = rag.search(f"How do I load a LoRA adapter? {number % 5}", 5,
                                      "lexical")
                    tops.append(hits[0].file_path)
                    searches[0] += 1
        except Exception as exc:  # any error at all fails the test
            errors.append(f"{type(exc).__name__}: {exc}")

    clients = [threading.Thread(target=client, args=(n,)) for n in range(20)]
    for thread in clients:
        thread.start()
    try:
        assert proc.wait(timeout=180) == 0, proc.communicate()
        time.sleep(0.5)  # searches of the new index too
    finally:
        stop.set()
        for thread in clients:
            thread.join(timeout=60)
    assert not errors, errors[:3]
    with RagDB(pg_url) as rag:
        after = rag.search("How do I load a LoRA adapter? 0", 5, "lexical")[0].file_path
    assert searches[0] >= 40 and LORA in tops and set(tops) <= {LORA, after}


# -- bad input: one line, no traceback, never the password ----------------------------------

def test_a_url_that_does_not_parse(project: Path) -> None:
    for url in ("postgresql://ragdb:s3cret-pass@localhost:notaport/db",
                "postgresql://ragdb:s3cret-pass@[::1/db", "postgresql://host/db?nosuch=1"):
        done = run_cli("search", "lora", "--db", url, cwd=project)
        line = one_line_error(done)
        assert "s3cret-pass" not in done.stderr + done.stdout, line
        assert "PostgreSQL" in line, line


def test_a_server_that_is_down(project: Path) -> None:
    url = f"postgresql://ragdb:s3cret-pass@127.0.0.1:{free_port()}/ragdb"
    for args in (("search", "lora"), ("index", "data/raw"), ("roots",)):
        done = run_cli(*args, "--db", url, cwd=project)
        line = one_line_error(done)
        assert line.startswith("ragdb: cannot connect to PostgreSQL at "
                               f"postgresql://ragdb@127.0.0.1:{url.rsplit(':', 1)[1]}"), line
        assert "refused" in line and "s3cret-pass" not in done.stderr


def _socket_dir(server: Any) -> str:
    return parse_qs(urlsplit(server.get_uri()).query)["host"][0]


def test_a_login_refused_never_shows_the_password(project: Path, pg_server: Any,
                                                  own_role: tuple[str, str, str]) -> None:
    role, _password, database = own_role
    url = f"postgresql://{role}:wrong-pass-2846@/{database}?host={_socket_dir(pg_server)}"
    done = run_cli("index", "data/raw", "--db", url, cwd=project)
    line = one_line_error(done)
    assert "password authentication failed" in line, line
    assert "wrong-pass-2846" not in done.stderr + done.stdout
    assert f"postgresql://{role}@/{database}" in line


def test_a_database_where_pgvector_cannot_be_enabled(project: Path, pg_server: Any,
                                                     own_role: tuple[str, str, str]) -> None:
    """pgvector is not a trusted extension: a role that is not a superuser cannot enable it.
    One line that says what to ask for, and nothing written."""
    role, password, database = own_role
    url = f"postgresql://{role}:{password}@/{database}?host={_socket_dir(pg_server)}"
    done = run_cli("index", "data/raw", "--no-vectors", "--db", url, cwd=project)
    line = one_line_error(done)
    assert "CREATE EXTENSION vector" in line and password not in done.stderr, line
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                            ).fetchone() == (0,)
    # An administrator enables it once: the role can then index.
    with psycopg.connect(pg_server.get_uri(database), autocommit=True) as admin:
        admin.execute("CREATE EXTENSION vector")
    again = run_cli("index", "data/raw", "--no-vectors", "--db", url, cwd=project)
    assert again.returncode == 0, again.stderr
    assert password not in again.stdout + again.stderr


def test_another_applications_database_is_left_untouched(project: Path, pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE customers (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO customers VALUES (1, 'Ada')")
    for args in (("index", "data/raw"), ("search", "lora"), ("roots",)):
        done = run_cli(*args, "--db", pg_url, cwd=project)
        line = one_line_error(done)
        assert "is not a ragdb index (1 tables of another application" in line, line
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                            ).fetchall() == [("customers",)]
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'"
                            ).fetchone() == (0,)
        assert conn.execute("SELECT name FROM customers").fetchall() == [("Ada",)]


def test_a_blank_database_has_no_index_yet(project: Path, pg_url: str) -> None:
    line = one_line_error(run_cli("search", "lora", "--db", pg_url, cwd=project))
    assert "holds no ragdb index: run `ragdb index` first" in line, line
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                            ).fetchone() == (0,)


def test_a_searcher_outlives_its_session_being_terminated(project: Path, pg_url: str,
                                                          pg_server: Any,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """A long-lived door (`ragdb serve`, `ragdb mcp`) keeps one RagDB: when the server ends
    its idle session (a restart, pg_terminate_backend), the next search connects again."""
    assert run_cli("index", "data/raw", "--no-vectors", "--db", pg_url, cwd=project
                   ).returncode == 0
    monkeypatch.chdir(project)
    with RagDB(pg_url) as rag:
        assert rag.search("LoRA adapter", 3, "lexical")[0].file_path == LORA
        with pg_admin(pg_server) as admin:
            ended = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                "AND application_name = 'ragdb'", [_dbname(pg_url)]).fetchall()
        assert ended == [(True,)]
        time.sleep(0.2)
        assert rag.search("Gemma2DecoderLayer", 3, "lexical")[0].file_path == (
            "data/raw/proj/pkg/layers.py")


def test_a_role_that_may_only_read_searches_uncached(project: Path, pg_url: str,
                                                     pg_server: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening an up-to-date index writes nothing, a search reads its snapshot READ ONLY, and
    the query cache, which this role may not write, is skipped without a word."""
    assert run_cli("index", "data/raw", "--no-vectors", "--db", pg_url, cwd=project
                   ).returncode == 0
    role = f"ragdb_reader_{uuid.uuid4().hex[:8]}"
    with pg_admin(pg_server) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    with psycopg.connect(pg_url, autocommit=True) as owner:
        owner.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(
            sql.Identifier(role)))
    reader = pg_url.replace("postgres:@", f"{role}@")
    try:
        for _ in range(2):
            done = run_cli("search", "How do I load a LoRA adapter?", "--mode", "lexical",
                           "--db", reader, cwd=project)
            assert done.returncode == 0 and LORA in done.stdout and not done.stderr, done.stderr
        with psycopg.connect(pg_url) as owner:
            assert owner.execute("SELECT count(*) FROM query_cache").fetchone() == (0,)
        refused = one_line_error(run_cli("index", "data/raw", "--no-vectors", "--db", reader,
                                         cwd=project))
        assert "permission denied" in refused, refused
    finally:
        with psycopg.connect(pg_url, autocommit=True) as owner:  # its grants, here
            owner.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        with pg_admin(pg_server) as admin:
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


# -- the index lock's own session ends mid-run ----------------------------------------------

def _end_lock_session(server: Any, url: str) -> None:
    """pg_terminate_backend on the index run's lock session, and wait till its lock is gone."""
    with pg_admin(server) as admin:
        ended = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
            "AND application_name = 'ragdb index lock'", [_dbname(url)]).fetchall()
        assert ended == [(True,)]
        deadline = time.monotonic() + 10
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND "
                            "application_name = 'ragdb index lock'", [_dbname(url)]
                            ).fetchone() != (0,):
            assert time.monotonic() < deadline
            time.sleep(0.02)


def test_a_run_that_loses_its_lock_stops_and_a_second_run_meanwhile_is_refused(
        big_project: Path, pg_url: str, pg_server: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock's session ends while the run's transaction is open: a second run started
    then is refused in one line, and the first stops at its commit, keeping nothing."""
    before, counts = _ranked(pg_url, big_project), _counts(pg_url)
    monkeypatch.chdir(big_project)
    second: list[subprocess.CompletedProcess[str]] = []

    def lose_the_lock(_files: int) -> None:  # called inside the run's transaction
        _end_lock_session(pg_server, pg_url)
        second.append(run_cli("index", "data/raw/proj", "--no-vectors", "--db", pg_url,
                              cwd=big_project))

    with RagDB(pg_url) as rag:
        with pytest.raises(RagdbError, match="this index run lost its lock on postgresql://"):
            rag.index(["data/raw"], vectors=False, on_files=lose_the_lock)
    line = one_line_error(second[0])
    assert line.startswith("ragdb: another index run is in progress on postgresql://"), line
    assert _counts(pg_url) == counts
    assert _ranked(pg_url, big_project) == before
    again = run_cli("index", "data/raw", "--no-vectors", "--db", pg_url, cwd=big_project)
    assert again.returncode == 0, again.stderr
    assert _counts(pg_url)[0] > len(SMALL_CORPUS)


def test_a_cli_run_whose_lock_session_is_terminated_stops_in_one_line(
        big_project: Path, pg_url: str, pg_server: Any) -> None:
    before, counts = _ranked(pg_url, big_project), _counts(pg_url)
    proc = _start_index(big_project, pg_url)
    _writing_backend(pg_server, pg_url, proc)
    _end_lock_session(pg_server, pg_url)
    stdout, stderr = proc.communicate(timeout=120)
    line = one_line_error(subprocess.CompletedProcess(proc.args, proc.returncode, stdout,
                                                      stderr))
    assert "this index run lost its lock" in line and "run `ragdb index` again" in line, line
    assert _counts(pg_url) == counts
    assert _ranked(pg_url, big_project) == before


def test_the_lock_session_does_not_idle_out(big_project: Path, pg_url: str,
                                            pg_server: Any) -> None:
    """idle_session_timeout ends idle sessions, and the lock's is idle for the whole run."""
    with pg_admin(pg_server) as admin:
        admin.execute(sql.SQL("ALTER DATABASE {} SET idle_session_timeout = '300ms'").format(
            sql.Identifier(_dbname(pg_url))))
    proc = _start_index(big_project, pg_url)
    _writing_backend(pg_server, pg_url, proc)
    time.sleep(1.0)
    with pg_admin(pg_server) as admin:
        assert admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND "
                             "application_name = 'ragdb index lock'", [_dbname(pg_url)]
                             ).fetchone() == (1,)
    assert proc.wait(timeout=120) == 0, proc.communicate()
    assert _counts(pg_url)[0] > len(SMALL_CORPUS)
