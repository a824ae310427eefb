"""Issue 18, retrieval: implementation before tests, --exclude inside both legs, identical
files in one slot, code that hybrid fusion must not bury, and dense search that says what it
cannot find. Real files, real rag.db files built by the real CLI, a real server."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from urllib.request import Request, urlopen

import numpy as np
import pytest

from ragdb.db import connect
from ragdb.resources import sql
from ragdb.retrieve import Filters, Mode, Searcher, SearchParams
from ragdb.vectors import to_int8
from tests.conftest import free_port, run_cli, wait_until_serving, write_corpus

IMPLEMENTATION = (
    '"""Command-line flags."""\n\n\n'
    "def parse_flags(argv: list[str]) -> dict[str, str]:\n"
    '    """Split command-line words into flags and their values."""\n'
    "    flags: dict[str, str] = {}\n"
    "    for word in argv:\n"
    "        name, _, value = word.lstrip('-').partition('=')\n"
    "        flags[name] = value\n"
    "    return flags\n"
)
TEST_OF_IT = (
    "from flagparse.parser import parse_flags\n\n\n"
    "def test_parse_flags_values() -> None:\n"
    "    assert parse_flags(['--a=1']) == {'a': '1'}\n"
    "    assert parse_flags(['--b=2']) == {'b': '2'}\n\n\n"
    "def test_parse_flags_empty() -> None:\n"
    "    assert parse_flags([]) == {}\n"
    "    assert parse_flags(['--c']) == {'c': ''}\n"
    "    assert parse_flags(['--d=', '--e=5']) == {'d': '', 'e': '5'}\n"
)
SHARED_HELPER = (
    '"""Checksums of buffers."""\n\n\n'
    "def adler_checksum(buffer: bytes) -> int:\n"
    '    """The Adler-32 checksum of a buffer, computed in one pass."""\n'
    "    a, b = 1, 0\n"
    "    for byte in buffer:\n"
    "        a = (a + byte) % 65521\n"
    "        b = (b + a) % 65521\n"
    "    return (b << 16) | a\n"
)
REPO_FILES = {
    "src/flagparse/parser.py": IMPLEMENTATION,
    "tests/test_parser.py": TEST_OF_IT,
    "src/flagparse/checksum.py": SHARED_HELPER,
    "vendor_copy/checksum.py": SHARED_HELPER,  # the same bytes: one slot, one duplicate
    "src/flagparse/other.py": '"""Other checksum helpers."""\n\n\n'
                              "def crc_checksum(buffer: bytes) -> int:\n"
                              '    """A checksum of a buffer, computed with crc32."""\n'
                              "    import zlib\n\n    return zlib.crc32(buffer)\n",
    "docs/flags.md": "# Flags\n\nThe parser splits command-line words into flags and values: "
                     "`--name=value` gives the flag `name` the value `value`.\n",
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A crafted repository indexed lexical-only by the real CLI."""
    work = tmp_path_factory.mktemp("ranking")
    write_corpus(work / "proj", REPO_FILES)
    done = run_cli("index", "proj", "--no-vectors", "--db", "rag.db", cwd=work)
    assert done.returncode == 0, done.stderr
    return work


@pytest.fixture(scope="module")
def vector_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same repository indexed with the default vectors (docs only)."""
    work = tmp_path_factory.mktemp("ranking-vectors")
    write_corpus(work / "proj", REPO_FILES)
    done = run_cli("index", "proj", "--db", "rag.db", cwd=work)
    assert done.returncode == 0, done.stderr
    return work


def _search_json(work: Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    done = run_cli("search", *args, "--json", "--db", "rag.db", cwd=work)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


# -- implementation first ------------------------------------------------------------------------

def test_the_prior_ranks_the_implementation_above_its_test(repo: Path) -> None:
    """BM25 alone prefers the test (it names parse_flags seven times); the path prior puts the
    definition first, in every mode that ranks by the prior's SQL."""
    conn = connect(repo / "rag.db")
    question = "What does parse_flags return?"
    unprioritised = Searcher(conn, SearchParams(prior=1.0), use_cache=False)
    before = [h.file_path for h in unprioritised.search(question, 5, Mode.lexical)]
    assert before[0] == "proj/tests/test_parser.py"  # the ranking the prior corrects
    hits, _ = _search_json(repo, question, "--mode", "lexical", "--k", "5")
    paths = [h["file_path"] for h in hits]
    assert paths[0] == "proj/src/flagparse/parser.py"
    assert "proj/tests/test_parser.py" in paths  # demoted, not removed


# -- identical files -------------------------------------------------------------------------

def test_identical_files_share_one_slot_and_list_each_other(repo: Path) -> None:
    hits, _ = _search_json(repo, "adler checksum of a buffer", "--mode", "lexical", "--k", "3")
    paths = [h["file_path"] for h in hits]
    copies = {"proj/src/flagparse/checksum.py", "proj/vendor_copy/checksum.py"}
    assert len(copies & set(paths)) == 1, paths  # one slot for the two copies
    first = hits[0]
    assert first["file_path"] in copies
    assert first["duplicates"] == sorted(copies - {first["file_path"]})
    assert "proj/src/flagparse/other.py" in paths  # the freed slot went to the next chunk
    assert all(h["duplicates"] == [] for h in hits if h["file_path"] not in copies)
    shown = run_cli("search", "adler checksum of a buffer", "--mode", "lexical", "--k", "3",
                    "--db", "rag.db", cwd=repo)
    assert "also in 1 identical file: proj/" in shown.stdout


# -- --exclude -------------------------------------------------------------------------------

def _unit(values: list[float]) -> bytes:
    vector = np.zeros(384, dtype=np.float32)
    vector[: len(values)] = values
    return to_int8(vector / np.linalg.norm(vector)).tobytes()


def test_exclude_applies_inside_both_legs(tmp_path: Path) -> None:
    """The 30 nearest windows and best BM25 matches are in a.md, which is excluded; with 5
    candidates per leg, both legs must rank among b.go's chunks inside their search (a filter
    applied afterwards would leave nothing)."""
    conn = connect(tmp_path / "rag.db", create=True)
    with conn:
        conn.execute("INSERT INTO files (id, path, sha256, size, kind, n_chars, indexed_at) "
                     "VALUES (1, 'p/docs/a.md', 'a', 0, 'markdown', 0, ''), "
                     "(2, 'p/src/b.go', 'b', 0, 'go', 0, '')")
        for chunk_id in range(1, 41):
            file_id = 1 if chunk_id <= 30 else 2
            body = "lora adapter" if file_id == 1 else "lora"
            conn.execute("INSERT INTO chunks (id, file_id, first_char, last_char, start_line, "
                         "end_line, kind, text) VALUES (?, ?, ?, ?, 1, 1, 'section', ?)",
                         (chunk_id, file_id, chunk_id * 100, chunk_id * 100 + 50, body))
            conn.execute("INSERT INTO chunks_fts (rowid, path, context, body) "
                         "VALUES (?, '', '', ?)", (chunk_id, body))
            near = [1.0, 0.01 * chunk_id] if file_id == 1 else [1.0, 0.1 * (chunk_id - 25)]
            conn.execute("INSERT INTO chunk_vectors (vector_id, chunk_id, embedding) "
                         "VALUES (?, ?, vec_int8(?))", (chunk_id * 1000, chunk_id, _unit(near)))
    params = SearchParams(depth=5, windows_per_chunk=1).as_sql()
    for filters in (Filters.of(excludes="docs/*"), Filters.of(excludes=["*.md", "*.rs"]),
                    Filters.of(paths="p/*", excludes="p/docs/a.md")):
        rows = conn.execute(sql("search_hybrid"), {
            **params, "match": '"lora" OR "adapter"', "query_vector": _unit([1.0, 0.0]),
            "k": 5, **filters.as_sql()}).fetchall()
        assert [row[0] for row in rows] == [31, 32, 33, 34, 35], filters
        dense = conn.execute(sql("search_dense"), {
            **params, "query_vector": _unit([1.0, 0.0]), "k": 3, "knn_depth": 3,
            **filters.as_sql()}).fetchall()
        assert [row[0] for row in dense] == [31, 32, 33], filters
        lexical = conn.execute(sql("search_lexical"), {
            **params, "match": '"lora" OR "adapter"', "k": 3, **filters.as_sql()}).fetchall()
        assert [row[1] for row in lexical] == ["p/src/b.go"] * 3, filters


def test_exclude_on_the_cli_search_answer_and_search_dataset(vector_repo: Path) -> None:
    question = "How are command-line words split into flags and values?"
    everything, _ = _search_json(vector_repo, question, "--k", "10")
    assert "proj/docs/flags.md" in [h["file_path"] for h in everything]
    hits, _ = _search_json(vector_repo, question, "--k", "10", "--exclude", "docs/*",
                           "--exclude", "tests/*")
    paths = [h["file_path"] for h in hits]
    assert paths and not [p for p in paths if "/docs/" in p or "/tests/" in p]
    for mode in ("dense", "lexical"):
        hits, _ = _search_json(vector_repo, question, "--mode", mode, "--exclude", "*.md")
        assert not [h for h in hits if h["file_path"].endswith(".md")], mode

    answered = run_cli("answer", question, "--exclude", "docs/*", "--style", "extractive",
                       "--save_directory", "answers", "--db", "rag.db", cwd=vector_repo)
    assert answered.returncode == 0, answered.stderr
    sources = answered.stdout.split("Sources:")[1]
    assert "proj/" in sources and "docs/flags.md" not in sources

    dataset = vector_repo / "questions.json"
    dataset.write_text(json.dumps({"rag_questions": [
        {"question_id": "q1", "question": question}]}))
    done = run_cli("search-dataset", "--dataset_path", str(dataset), "--k", "5",
                   "--save_directory", "out", "--exclude", "docs/*", "--db", "rag.db",
                   cwd=vector_repo)
    assert done.returncode == 0, done.stderr
    found = json.loads((vector_repo / "out" / "questions.json").read_text())
    got = [s["file_path"] for s in found["search_results"][0]["retrieved_sources"]]
    assert got and "proj/docs/flags.md" not in got


def test_a_bad_exclude_is_one_line(repo: Path) -> None:
    done = run_cli("search", "flags", "--exclude", "x" * 1001, "--db", "rag.db", cwd=repo)
    assert done.returncode != 0
    assert done.stderr.strip().startswith("ragdb: ") and "Traceback" not in done.stderr


# -- dense search on code without vectors --------------------------------------------------

def test_dense_mode_says_code_has_no_vectors(vector_repo: Path) -> None:
    hits, stderr = _search_json(vector_repo, "split words into flags", "--mode", "dense")
    assert "warning: code has no vectors in this index" in stderr
    assert hits and all(h["language"] == "markdown" for h in hits)
    _, stderr = _search_json(vector_repo, "split words into flags")  # hybrid finds code
    assert "warning" not in stderr
    _, stderr = _search_json(vector_repo, "split words into flags", "--mode", "lexical")
    assert "warning" not in stderr


# -- fusion: a kind without vectors --------------------------------------------------------

def _kinds_corpus(path: Path, rows: list[tuple[str, str, str]], doc_vector: list[float]
                  ) -> Any:
    """A rag.db of one chunk per file (`rows`: path, language, body; ids 1, 2, ...) in which
    only markdown is embedded, and only chunk 2 has a vector: its window at `doc_vector`."""
    conn = connect(path, create=True)
    with conn:
        conn.execute("INSERT INTO settings (key, value) VALUES ('embed_policy', ?)",
                     (json.dumps({"docs": ["markdown"], "code": []}),))
        for chunk_id, (path_, kind, body) in enumerate(rows, 1):
            conn.execute("INSERT INTO files (id, path, sha256, size, kind, n_chars, indexed_at) "
                         "VALUES (?, ?, ?, 0, ?, 0, '')", (chunk_id, path_, str(chunk_id), kind))
            conn.execute("INSERT INTO chunks (id, file_id, first_char, last_char, start_line, "
                         "end_line, kind, text) VALUES (?, ?, 0, 10, 1, 1, 'section', ?)",
                         (chunk_id, chunk_id, body))
            conn.execute("INSERT INTO chunks_fts (rowid, path, context, body) "
                         "VALUES (?, '', '', ?)", (chunk_id, body))
        conn.execute("INSERT INTO chunk_vectors (vector_id, chunk_id, embedding) "
                     "VALUES (2000, 2, vec_int8(?))", (_unit(doc_vector),))
    return conn


def _two_kinds(path: Path, doc_vector: list[float]) -> Any:
    """A code chunk BM25 ranks first (no vector: code is not embedded) and a doc chunk BM25
    ranks second whose window sits at `doc_vector` from the query [1, 0]."""
    return _kinds_corpus(path, [("p/src/lora.py", "python", "lora lora adapter"),
                                ("p/docs/lora.md", "markdown", "lora adapter")], doc_vector)


def test_a_kind_without_vectors_is_not_outvoted(tmp_path: Path) -> None:
    """Far docs (distance ~0.55) and code the stronger BM25 match: the code gate opens and
    the code chunk stays first. Without the rule (w_absent 0) the doc's dense term lifts it."""
    conn = _two_kinds(tmp_path / "far.db", [1.0, 1.5])
    query = _unit([1.0, 0.0])
    searcher = Searcher(conn, use_cache=False)
    searcher._refresh()
    assert searcher._dense_kinds == '["markdown"]'
    base = {"match": '"lora" OR "adapter"', "query_vector": query, "k": 2,
            "dense_kinds": searcher._dense_kinds}
    ranked = conn.execute(sql("search_hybrid"), {
        **SearchParams().as_sql(), **Filters().as_sql(), **base}).fetchall()
    assert [row[0] for row in ranked] == [1, 2]
    off = conn.execute(sql("search_hybrid"), {
        **SearchParams(w_absent=0.0).as_sql(), **Filters().as_sql(), **base}).fetchall()
    assert [row[0] for row in off] == [2, 1]


def test_close_docs_keep_their_dense_lift(tmp_path: Path) -> None:
    """The doc's window is the query itself (distance 0): the gate stays shut, docs win."""
    conn = _two_kinds(tmp_path / "near.db", [1.0, 0.0])
    ranked = conn.execute(sql("search_hybrid"), {
        **SearchParams().as_sql(), **Filters().as_sql(), "match": '"lora" OR "adapter"',
        "query_vector": _unit([1.0, 0.0]), "k": 2, "dense_kinds": '["markdown"]'}).fetchall()
    assert [row[0] for row in ranked] == [2, 1]


def test_the_code_gate_can_be_forced(tmp_path: Path) -> None:
    """SearchParams.gate_override (benchmarks/bench_code_gate.py's oracle bound): 1 opens the
    gate the close doc keeps shut (code first), 0 shuts the one the far doc opens, ranking and
    scoring as without the lift (w_absent 0); None is the rule."""
    base = {**Filters().as_sql(), "match": '"lora" OR "adapter"',
            "query_vector": _unit([1.0, 0.0]), "k": 2, "dense_kinds": '["markdown"]'}

    def ranked(conn: Any, params: SearchParams) -> list[tuple[int, float]]:
        rows = conn.execute(sql("search_hybrid"), {**params.as_sql(), **base}).fetchall()
        return [(int(row[0]), float(row[7])) for row in rows]

    near = _two_kinds(tmp_path / "near.db", [1.0, 0.0])
    assert [cid for cid, _ in ranked(near, SearchParams())] == [2, 1]
    assert [cid for cid, _ in ranked(near, SearchParams(gate_override=1.0))] == [1, 2]
    assert ranked(near, SearchParams(gate_override=None)) == ranked(near, SearchParams())
    far = _two_kinds(tmp_path / "far.db", [1.0, 1.5])
    assert [cid for cid, _ in ranked(far, SearchParams())] == [1, 2]
    shut, no_lift = ranked(far, SearchParams(gate_override=0.0)), ranked(far, SearchParams(
        w_absent=0.0))
    assert [cid for cid, _ in shut] == [cid for cid, _ in no_lift] == [2, 1]
    assert [score for _, score in shut] == pytest.approx([score for _, score in no_lift])


def _margin_corpus(path: Path) -> Any:
    """A code chunk (no vector) holding all four query terms, a doc chunk holding two of them
    whose window is the query itself (the code gate stays shut), and filler docs."""
    rows = [("p/src/merge.py", "python",
             "merge lora adapter weights: merge each lora adapter into the base weights"),
            ("p/docs/lora.md", "markdown", "a lora adapter")]
    rows += [(f"p/docs/page{n}.md", "markdown", f"installing page {n} guide")
             for n in range(1, 7)]
    return _kinds_corpus(path, rows, [1.0, 0.0])


def test_a_clear_lexical_lead_is_not_hidden_by_ranks(tmp_path: Path) -> None:
    """RRF sees only ranks: the code chunk leads BM25 by far (it holds all four query terms,
    the doc two), yet the doc's dense term (its window is the query) puts it first. The
    lexical margin, the first hit's BM25 over the second's, gives the lead back; off
    (margin_cap 1), the doc wins. A near tie keeps the doc first (the test above)."""
    conn = _margin_corpus(tmp_path / "margin.db")
    params = {**Filters().as_sql(), "match": '"merge" OR "lora" OR "adapter" OR "weights"',
              "query_vector": _unit([1.0, 0.0]), "k": 2, "dense_kinds": '["markdown"]'}
    lexical = conn.execute(sql("search_lexical"), {
        **SearchParams().as_sql(), **params}).fetchall()
    assert [row[0] for row in lexical] == [1, 2] and lexical[0][7] < 1.3 * lexical[1][7]  # < 0
    ranked = conn.execute(sql("search_hybrid"), {**SearchParams().as_sql(), **params})
    assert [row[0] for row in ranked] == [1, 2]
    off = conn.execute(sql("search_hybrid"), {
        **SearchParams(margin_cap=1.0).as_sql(), **params}).fetchall()
    assert [row[0] for row in off] == [2, 1]


# -- several repositories --------------------------------------------------------------------

def test_a_question_naming_a_repository_prefers_it(tmp_path: Path) -> None:
    """Two repositories in one rag.db, the same words in both; the one the question names
    comes first, each way round (roots and the folders of a folder of repositories)."""
    for name in ("alpha", "beta"):
        write_corpus(tmp_path / "repos" / name, {
            "src/cache.py": '"""A cache."""\n\n\ndef evict_oldest(entries: dict) -> None:\n'
                            '    """Evict the oldest cache entry."""\n'
                            "    entries.pop(next(iter(entries)))\n"})
    for roots in (["repos/alpha", "repos/beta"], ["repos"]):
        db = f"rag-{len(roots)}.db"
        done = run_cli("index", *roots, "--no-vectors", "--db", db, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        for name in ("alpha", "beta"):
            found = run_cli("search", f"How does {name.title()} evict the oldest cache entry?",
                            "--json", "--db", db, cwd=tmp_path)
            assert found.returncode == 0, found.stderr
            first = json.loads(found.stdout)[0]["file_path"]
            assert first == f"repos/{name}/src/cache.py", (roots, name)


# -- HTTP --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(vector_repo: Path) -> Iterator[str]:
    """A real `ragdb serve` on a loopback port over the index with vectors."""
    port = free_port()
    log_path = vector_repo / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragdb", "serve", "--port", str(port), "--db", "rag.db"],
            cwd=vector_repo, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(process, base, log_path, 90, 0.3)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _get(base: str, path: str, params: list[tuple[str, str]]) -> Any:
    with urlopen(f"{base}{path}?{urlencode(params)}", timeout=60) as response:
        return json.loads(response.read())


def test_http_search_and_search_dataset_take_exclude(server: str) -> None:
    question = "How are command-line words split into flags and values?"
    everything = _get(server, "/-/ragdb/search", [("q", question), ("k", "10")])
    assert "proj/docs/flags.md" in [s["file_path"] for s in everything["sources"]]
    for mode in ("hybrid", "dense"):
        body = _get(server, "/-/ragdb/search", [("q", question), ("k", "10"), ("mode", mode),
                                                ("exclude", "docs/*"), ("exclude", "*.rs")])
        assert body["exclude"] == ["*.rs", "docs/*"]
        assert not [s for s in body["sources"] if "/docs/" in s["file_path"]], mode
    dense = _get(server, "/-/ragdb/search", [("q", question), ("mode", "dense")])
    assert dense["warnings"] and "code has no vectors" in dense["warnings"][0]
    assert _get(server, "/-/ragdb/search", [("q", question)])["warnings"] == []
    posted = Request(
        f"{server}/-/ragdb/search-dataset?k=5&exclude=docs/*",
        data=json.dumps({"rag_questions": [{"question_id": "q1", "question": question}]}
                        ).encode(), headers={"Content-Type": "application/json"},
        method="POST")
    with urlopen(posted, timeout=60) as response:
        found = json.loads(response.read())
    got = [s["file_path"] for s in found["search_results"][0]["retrieved_sources"]]
    assert got and "proj/docs/flags.md" not in got


# -- the bridge leg: plain words reach code through the docs that name it -------------------

BRIDGE_FILES = {
    "docs/retries.md": (
        "# Retries\n\n"
        "When a request fails, the client waits before trying the request again. The wait "
        "doubles after every failure, starting at half a second and never longer than thirty "
        "seconds; the schedule comes from `compute_backoff` in the transport module.\n"
    ),
    "docs/install.md": "# Install\n\nInstall the package with pip and import it in Python.\n",
    "docs/logging.md": "# Logging\n\nEvery response is logged with its status and duration.\n",
    "src/netclient/transport.py": (
        '"""Sending requests over the network."""\n\n\n'
        "def compute_backoff(attempt: int) -> float:\n"
        '    """Seconds to wait before attempt number `attempt`."""\n'
        "    return min(30.0, 0.5 * 2 ** attempt)\n"
    ),
    "src/netclient/queue.py": (
        '"""Requests waiting for a free connection."""\n\n\n'
        "def wait_for_slot(client: object, request: object) -> None:\n"
        '    """The client request waits here until a connection is free, then tries again;\n'
        '    a request that fails to get one is tried again later."""\n'
        "    while not getattr(client, 'free', True):\n"
        "        pass\n"
    ),
    "src/netclient/log.py": (
        '"""Response logging."""\n\n\n'
        "def log_response(status: int, duration: float) -> str:\n"
        "    return f'{status} in {duration:.3f}s'\n"
    ),
    "src/netclient/install.py": (
        '"""Package metadata."""\n\n\n'
        "def package_version() -> str:\n"
        "    return '1.0'\n"
    ),
}
BRIDGE_QUESTION = "How long does the client wait before trying a failed request again?"


@pytest.fixture(scope="module")
def bridge_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose docs page names the function behind what it describes."""
    work = tmp_path_factory.mktemp("bridge")
    write_corpus(work / "proj", BRIDGE_FILES)
    done = run_cli("index", "proj", "--db", "rag.db", cwd=work)
    assert done.returncode == 0, done.stderr
    return work


def _ranks(db: Path, params: SearchParams) -> list[str]:
    hits = Searcher(connect(db), params, use_cache=False).search(BRIDGE_QUESTION, 10)
    return [hit.file_path.split("/", 1)[1] for hit in hits]


def test_docs_naming_a_function_bring_a_plain_words_question_to_it(bridge_repo: Path) -> None:
    """The question shares its words with the queue helper, not with `compute_backoff`; the
    docs page that answers it names `compute_backoff`, and the bridge leg ranks that code above
    the helper whose words merely match. Without the leg the helper stays above it."""
    db = bridge_repo / "rag.db"
    with_bridge = _ranks(db, SearchParams())
    without = _ranks(db, SearchParams(w_bridge=0.0))
    implementation, helper = "src/netclient/transport.py", "src/netclient/queue.py"
    assert with_bridge[0] == "docs/retries.md"
    assert with_bridge.index(implementation) < with_bridge.index(helper)
    assert implementation not in without or without.index(implementation) > without.index(helper)
    # the leg keeps to the filters like the others: an excluded file does not come back by it
    excluded = Searcher(connect(db), SearchParams(), use_cache=False).search(
        BRIDGE_QUESTION, 10, Mode.hybrid, Filters.of(excludes=["*/transport.py"]))
    assert excluded and all(not hit.file_path.endswith("transport.py") for hit in excluded)


def test_named_identifiers_are_the_code_names_of_prose() -> None:
    from ragdb.tokenize import named_identifiers

    text = ("Call `compute_backoff` (or `pids`) from the TransportClient; plain Words and "
            "`a` are not names, and exit_code joins.\n\n```python\nimport retry\n"
            "retry.run(max_tries=3)\n```\n")
    assert named_identifiers(text) == ["computebackoff", "pids", "transportclient", "exitcode",
                                       "maxtries"]


# -- callee first ---------------------------------------------------------------------------------

CALLER = (
    "import {{ buildSelector }} from '../lib/buildSelector';\n\n"
    "// Attribution: the selector string of the element, for the attribution report.\n"
    "export const attributeNode{n} = (node: Node): string => {{\n"
    "  // attribution selector string: the attribution selector string of this node\n"
    "  const selectorString = buildSelector(node);\n"
    "  return 'attribution selector string ' + selectorString;\n"
    "}};\n"
)
DEFINITION = (
    "const nameOf = (node: Node): string => node.nodeName.toLowerCase();\n\n"
    "export const buildSelector = (node: Node | null, limit = 100): string => {\n"
    "  let out = '';\n"
    "  while (node && out.length < limit) {\n"
    "    out = nameOf(node) + (out ? '>' + out : '');\n"
    "    node = node.parentNode;\n"
    "  }\n"
    "  return out;\n"
    "};\n"
)


def test_the_definition_a_question_names_goes_above_its_callers(tmp_path: Path) -> None:
    """Three attribution files call `buildSelector` and say "attribution selector string"
    throughout, so fusion ranks them above the file defining it; the callee-first re-order
    moves the definition just above the first caller, and nothing else changes."""
    files = {f"src/attribution/on{n}.ts": CALLER.format(n=n) for n in ("A", "B", "C")}
    files["src/lib/buildSelector.ts"] = DEFINITION
    files["docs/guide.md"] = "# Guide\n\nThe report holds an attribution for every metric.\n"
    write_corpus(tmp_path / "proj", files)
    done = run_cli("index", "proj", "--db", "rag.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    question = "How does `buildSelector` build the attribution selector string?"
    conn = connect(tmp_path / "rag.db")
    before = Searcher(conn, SearchParams(callee_first=False), use_cache=False).search(
        question, 5, Mode.hybrid)
    after = Searcher(conn, use_cache=False).search(question, 5, Mode.hybrid)
    paths = [hit.file_path.split("/", 1)[1] for hit in before]
    at = paths.index("src/lib/buildSelector.ts")
    assert at > 0 and paths[0].startswith("src/attribution/"), paths  # the caller wins first
    moved = [hit.file_path.split("/", 1)[1] for hit in after]
    assert moved[0] == "src/lib/buildSelector.ts", moved
    assert moved[1:] == paths[:at] + paths[at + 1:]  # the others keep their order
    # A question that names no identifier of the code is left as fusion ranked it.
    plain = "How is the attribution selector string built?"
    assert ([h.chunk_id for h in Searcher(conn, use_cache=False).search(plain, 5, Mode.hybrid)]
            == [h.chunk_id for h in Searcher(conn, SearchParams(callee_first=False),
                                             use_cache=False).search(plain, 5, Mode.hybrid)])


# -- every section a prose chunk holds ------------------------------------------------------------

# An options reference: small sections packed into one chunk (its context is the first's
# heading path), and a longer page that mentions the last option twice in passing.
OPTIONS_PAGE = (
    "# Options\n\n"
    "## OPT_STRICT_LIMIT\n\nEnforce a 53-bit limit on integers.\n\n"
    "## OPT_SORT_FIELDS\n\nWrite the fields of a record in sorted order.\n\n"
    "## OPT_ZULU_TIME\n\nWrite a UTC offset as a trailing letter instead of digits.\n"
)
TIMES_PAGE = (
    "# Times\n\nTimestamps are written with their offset from UTC, and naive ones as they "
    "are. To write the UTC offset as a letter, pass OPT_ZULU_TIME; OPT_ZULU_TIME changes "
    "nothing for naive timestamps, which have no offset to write. " + "Timestamps keep their "
    "precision down to the microsecond, and dates are written as years, months and days. " * 3
    + "\n"
)


def test_a_packed_section_is_found_by_its_own_title(tmp_path: Path) -> None:
    """The `OPT_ZULU_TIME` section is packed into the chunk of `OPT_STRICT_LIMIT`: its title
    is in the context column with the first one's path, so the chunk documenting it ranks
    above the page that only mentions it (which writes the name more often). Before, the
    context held the first section's heading path only and the mention came first."""
    write_corpus(tmp_path / "proj", {"docs/options.md": OPTIONS_PAGE,
                                     "docs/times.md": TIMES_PAGE})
    done = run_cli("index", "proj", "--no-vectors", "--db", "rag.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    conn = connect(tmp_path / "rag.db")
    rows = conn.execute(
        "SELECT c.context, t.context FROM chunks AS c JOIN chunks_fts AS t ON t.rowid = c.id "
        "JOIN files AS f ON f.id = c.file_id WHERE f.path LIKE '%options.md'").fetchall()
    assert len(rows) == 1  # one chunk: the sections are packed
    shown, indexed = str(rows[0][0]), str(rows[0][1]).split()
    assert shown == "Options"  # what a reader sees is unchanged: the first heading's path
    assert "optzulutime" in indexed and "optsortfields" in indexed
    hits, _ = _search_json(tmp_path, "What does OPT_ZULU_TIME do?", "--mode", "lexical",
                           "--k", "2")
    assert [hit["file_path"].rsplit("/", 1)[-1] for hit in hits] == ["options.md", "times.md"]


# -- letters and digits ----------------------------------------------------------------------------

P98 = (
    '"""Interaction summaries."""\n\n\n'
    "def estimate_p98(durations: list[float]) -> float:\n"
    '    """Only the ten longest durations are kept; the p98 is one of them."""\n'
    "    longest = sorted(durations, reverse=True)[:10]\n"
    "    p98 = longest[min(len(longest) - 1, len(durations) // 50)]\n"
    "    return p98\n"
)
MEDIAN = (
    '"""Middle values."""\n\n\n'
    "def estimate_median(durations: list[float]) -> float:\n"
    '    """The median, a percentile estimated from a sorted copy."""\n'
    "    ordered = sorted(durations)\n"
    "    return ordered[len(ordered) // 2]\n"
)


def test_a_number_written_apart_finds_the_identifier_that_holds_it(tmp_path: Path) -> None:
    """Prose writes "98th percentile", code `p98`: both give the term 98 (tokenizer
    ragdb-split-6), so the function computing the p98 ranks above the one that only shares
    the plain words. Before, `p98` and `98th` were one term each and matched nothing."""
    others = {f"metrics/unit{i}.py": f"def unit_{i}(value: float) -> str:\n"
              f"    return f'{{value}} unit {i}'\n" for i in range(6)}  # for the IDF
    write_corpus(tmp_path / "proj", {"metrics/tail.py": P98, "metrics/middle.py": MEDIAN,
                                     **others})
    done = run_cli("index", "proj", "--no-vectors", "--db", "rag.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    indexed = connect(tmp_path / "rag.db").execute(
        "SELECT t.body FROM chunks_fts AS t JOIN chunks AS c ON c.id = t.rowid "
        "JOIN files AS f ON f.id = c.file_id WHERE f.path LIKE '%tail.py'").fetchall()
    terms = " ".join(str(row[0]) for row in indexed).split()
    assert {"p", "98", "p98", "estimatep98"} <= set(terms)  # the runs and the whole words
    hits, _ = _search_json(tmp_path, "How is the 98th percentile estimated?",
                           "--mode", "lexical", "--k", "2")
    assert [hit["file_path"].rsplit("/", 1)[-1] for hit in hits] == ["tail.py", "middle.py"]


TEMPLATED_PAGE = (
    "# Deploying\n\n## Per-stage endpoints\n\n"
    "Each stage reads its endpoint from `MYAPP_{STAGE}_URL`, the stage's name in capitals.\n"
)
STAGES_PAGE = (
    "# Stages\n\n## Naming\n\n"
    "A stage is named once. The stage URL of a stage is shown on the stage page, and myapp "
    "lists every stage with its URL.\n"
)


def test_a_placeholder_inside_an_identifier_is_part_of_it(tmp_path: Path) -> None:
    """`MYAPP_{STAGE}_URL` is indexed as `MYAPP_STAGE_URL` (tokenizer ragdb-split-6), so the
    question that writes that name finds the page defining it first. Before, the braces cut
    it into `MYAPP`, `STAGE` and `URL`, and the page repeating the plain words came first."""
    write_corpus(tmp_path / "proj", {"docs/deploy.md": TEMPLATED_PAGE,
                                     "docs/stages.md": STAGES_PAGE,
                                     **{f"docs/note{i}.md": f"# Note {i}\n\nNothing else.\n"
                                        for i in range(6)}})  # for the IDF
    done = run_cli("index", "proj", "--no-vectors", "--db", "rag.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    hits, _ = _search_json(tmp_path, "What is MYAPP_STAGE_URL for?", "--mode", "lexical",
                           "--k", "2")
    assert [hit["file_path"].rsplit("/", 1)[-1] for hit in hits] == ["deploy.md", "stages.md"]
    shown = (tmp_path / hits[0]["file_path"]).read_text()[
        hits[0]["first_character_index"]:hits[0]["last_character_index"]]
    assert "MYAPP_{STAGE}_URL" in shown  # what a reader sees keeps the braces


# -- issue 37: a version in the root's name ----------------------------------------------------

def _two_letters(i: int) -> str:
    return chr(97 + i // 26) + chr(97 + i % 26)


VERSIONED = {
    "HISTORY.md": "Release History\n===============\n\n2.32.3 (2024-05-29)\n-------------------\n\n"
                  "- Fixed custom SSL contexts in adapter subclasses.\n\n2.31.0 (2023-05-22)\n"
                  "-------------------\n\n- Proxy credentials no longer leak on redirects.\n",
    # Enough chunks for common terms (sql/index_common_terms.sql), none with a digit.
    **{f"src/pkg/part_{_two_letters(i)}.py": f"def helper_{_two_letters(i)}(value):\n"
                                             "    return value\n" for i in range(70)},
}


@pytest.fixture(scope="module")
def versioned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose root folder names its version, indexed lexical-only by the real CLI."""
    work = tmp_path_factory.mktemp("versioned")
    write_corpus(work / "requests-2.32.3", VERSIONED)
    done = run_cli("index", "requests-2.32.3", "--no-vectors", "--db", "rag.db", cwd=work)
    assert done.returncode == 0, done.stderr
    return work


def test_words_of_the_root_folder_name_are_not_common_terms(versioned: Path) -> None:
    """Issue 37: every stored path holds `requests-2.32.3`, which made 2, 32 and 3 terms of
    every chunk: common, dropped, and "2.32.3" found nothing. The full-text path is the path
    below its root (tokenizer ragdb-split-7), so only the changelog holds them."""
    common = {str(row[0]) for row in
              connect(versioned / "rag.db").execute(sql("common_terms")).fetchall()}
    assert not {"2", "32", "3", "request"} & common and {"pkg", "helper"} <= common
    for question in ("2.32.3", "32", "What changed in 2.32.3?"):
        hits, _ = _search_json(versioned, question, "--mode", "lexical", "--k", "3")
        assert hits and hits[0]["file_path"] == "requests-2.32.3/HISTORY.md", question
    indexed = connect(versioned / "rag.db").execute(
        "SELECT t.path FROM chunks_fts AS t JOIN chunks AS c ON c.id = t.rowid "
        "JOIN files AS f ON f.id = c.file_id WHERE f.path LIKE '%part_aa.py'").fetchall()
    assert [row[0] for row in indexed] == ["src pkg part aa partaa py"]


def test_a_question_of_common_terms_only_still_searches(versioned: Path) -> None:
    """Every term of "value" is in over half the chunks: it is searched with all the same."""
    hits, _ = _search_json(versioned, "value", "--mode", "lexical", "--k", "5")
    assert len(hits) == 5 and all(hit["file_path"].endswith(".py") for hit in hits)


# A method whose words are everywhere in `.strip()` calls: tests/test_postgres_search.py checks
# both engines rank its question alike.
AUTH_FILES = {
    "src/web/sessions.py": (
        "class Session:\n"
        "    def should_strip_auth(self, old_url, new_url):\n"
        '        """Whether a redirect drops the Authorization header."""\n'
        "        return urlparse(old_url).hostname != urlparse(new_url).hostname\n"),
    "src/web/headers.py": (
        "def parse_auth(header):\n"
        '    """The scheme and credentials of an auth header, stripped."""\n'
        '    scheme, _, value = header.strip().partition(" ")\n'
        "    return scheme.strip().lower(), value.strip()\n"),
    "src/web/proxies.py": (
        "def proxy_auth(url):\n"
        "    user, _, password = url.strip().partition(':')\n"
        "    return user.strip(), password.strip()  # auth from the proxy URL\n"),
    **{f"src/web/other_{_two_letters(i)}.py": f"def other_{_two_letters(i)}(text):\n"
                                              "    return text.upper()\n" for i in range(8)},
}


def test_an_index_of_the_previous_analysis_is_rebuilt_below_its_roots(tmp_path: Path) -> None:
    """A rag.db made before ragdb-split-7 holds the root in its path column: the next
    `ragdb index` rebuilds it whole, after which the version in the root's name is no
    common term."""
    write_corpus(tmp_path / "requests-2.32.3", VERSIONED)
    done = run_cli("index", "requests-2.32.3", "--no-vectors", "--db", "rag.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with closing(sqlite3.connect(tmp_path / "rag.db")) as old:  # as ragdb-split-6 wrote it
        old.execute("UPDATE settings SET value = 'ragdb-split-6' WHERE key = 'tokenizer'")
        old.execute("UPDATE chunks_fts SET path = 'requests 2 32 3 ' || path")
        old.execute("DELETE FROM fts_common_terms")
        old.execute("INSERT INTO fts_common_terms (term) VALUES ('2'), ('32'), ('3')")
        old.commit()
    done = run_cli("index", "requests-2.32.3", "--no-vectors", "--db", "rag.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "(full rebuild)" in done.stdout
    with closing(sqlite3.connect(tmp_path / "rag.db")) as new:
        assert new.execute("SELECT count(*) FROM chunks_fts WHERE path LIKE 'requests%'"
                           ).fetchone() == (0,)
        assert new.execute("SELECT value FROM settings WHERE key = 'tokenizer'").fetchone() == (
            "ragdb-split-7",)
    hits, _ = _search_json(tmp_path, "2.32.3", "--mode", "lexical", "--k", "1")
    assert hits[0]["file_path"] == "requests-2.32.3/HISTORY.md"
