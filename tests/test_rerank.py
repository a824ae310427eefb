"""The reranking stage (issue 40): a cross-encoder reorders the fused candidates on every door
and both engines, is off unless asked, keys the query cache by its identity, and turns bad
input into one line. The cross-encoder is a tiny random BERT-shaped model built here with
OpenVINO's opset (tests/rerank_support.py): no torch, no hub."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import anyio
import pytest

from ragdb import RagDB
from ragdb.rerank import RerankParams, combined_score, rerank_order
from ragdb.rerank_models import load_cross_encoder, resolve_reranker
from ragdb.retrieve import Hit
from tests.conftest import (
    free_port,
    index_rows,
    models_dir_without_writer,
    one_line_error,
    run_cli,
    wait_until_serving,
)
from tests.rerank_support import build_cross_encoder

#: The fused order puts the quickstart first; the test reranker favours "scheduler", which only
#: notes.txt holds.
QUESTION = "what is on by default when I install"
FUSED_FIRST = "data/raw/proj/docs/usage/quickstart.md"
RERANKED_FIRST = "data/raw/proj/notes.txt"
HUB_NAME = "cross-encoder/ms-marco-MiniLM-L-6-v2"


@pytest.fixture(scope="session")
def rerankers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny cross-encoders, built once: two good ones that disagree, one that gives NaN and
    one that is not a cross-encoder (an embedder's [batch, hidden] output)."""
    top = tmp_path_factory.mktemp("rerankers")
    return {
        "good": build_cross_encoder(top / "good"),
        "other": build_cross_encoder(top / "other", seed=1, favour="install"),
        "nan": build_cross_encoder(top / "nan", nan=True),
        "embedding": build_cross_encoder(top / "embedding", output="embedding"),
    }


@pytest.fixture
def indexed(project: Path) -> Path:
    """The small corpus indexed into data/processed/rag.db (lexical: fast and exact)."""
    assert run_cli("index", "data/raw", "--no-vectors", cwd=project).returncode == 0
    return project


def _search(project: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    done = run_cli("search", QUESTION, "--json", *args, cwd=project, env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return [source["file_path"] for source in json.loads(done.stdout)]


def _cache_rows(project: Path) -> int:
    with closing(sqlite3.connect(project / "data" / "processed" / "rag.db")) as conn:
        return int(conn.execute("SELECT count(*) FROM query_cache").fetchone()[0])


def _hit(n: int) -> Hit:
    return Hit(n, f"f{n}.py", 0, 1, 1, 1, "function", 1.0 / n, "text")


# -- the order -----------------------------------------------------------------------------


def test_combined_order_fuses_ranks_and_keeps_the_rest_below() -> None:
    hits = [_hit(n) for n in range(1, 6)]
    params = RerankParams(depth=3)
    # The reranker puts the third candidate first: (fused 3, reranker 1) ties (1, 3) at weight
    # 1, and a tie goes to the fused order; at weight 2 the reranker's first comes first.
    assert combined_score(3, 1, params) == combined_score(1, 3, params)
    ordered = rerank_order(hits, [0.1, 0.2, 0.9], params)
    assert [h.chunk_id for h in ordered] == [1, 3, 2, 4, 5]
    heavy = rerank_order(hits, [0.1, 0.2, 0.9], RerankParams(depth=3, weight=2.0))
    assert [h.chunk_id for h in heavy] == [3, 2, 1, 4, 5]
    alone = rerank_order(hits, [0.1, 0.2, 0.9], RerankParams(depth=3, order="reranker"))
    assert [h.chunk_id for h in alone] == [3, 2, 1, 4, 5]
    scores = [h.score for h in ordered]
    assert scores == sorted(scores, reverse=True) and len(set(scores[2:])) == 3


def test_cross_encoder_batches_truncates_and_takes_long_questions(
        rerankers: dict[str, Path], tmp_path: Path) -> None:
    encoder = load_cross_encoder(resolve_reranker(str(rerankers["good"]), tmp_path))
    assert encoder.window == 64  # config.json's max_position_embeddings
    passages = [" ".join(["serve adapters scheduler notes"] * (1 + n % 7)) + f" {n}"
                for n in range(40)]
    together = encoder.score("how do i serve adapters", passages)
    alone = [encoder.score("how do i serve adapters", [p])[0] for p in passages]
    assert all(math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5) for a, b in zip(together, alone))
    # Past the window a candidate is cut: any longer, the same score.
    long_a = encoder.score("scheduler", ["scheduler notes " * 40])[0]
    long_b = encoder.score("scheduler", ["scheduler notes " * 4000])[0]
    assert long_a == pytest.approx(long_b, abs=1e-6)
    assert all(len(encoder.tokenizer.encode(q, p).ids) <= 64
               for q, p in [("q " * 4000, "p " * 4000), ("q", "p " * 4000)])
    assert math.isfinite(encoder.score("x" * 4000, ["scheduler"])[0])
    assert math.isfinite(encoder.score("why " * 1000, ["scheduler notes " * 1000])[0])


# -- the doors -----------------------------------------------------------------------------


def test_search_answer_and_dataset_rerank_when_asked(indexed: Path,
                                                     rerankers: dict[str, Path]) -> None:
    good = str(rerankers["good"])
    assert _search(indexed)[0] == FUSED_FIRST  # off by default
    assert _search(indexed, "--reranker", good)[0] == RERANKED_FIRST
    assert _search(indexed, env={"RAGDB_RERANKER": good})[0] == RERANKED_FIRST
    assert _search(indexed, "--no-rerank", env={"RAGDB_RERANKER": good})[0] == FUSED_FIRST
    assert _search(indexed, "--rerank", env={"RAGDB_RERANKER": good})[0] == RERANKED_FIRST
    assert _search(indexed, env={"RAGDB_RERANKER": "off"})[0] == FUSED_FIRST

    dataset = indexed / "questions.json"
    dataset.write_text(json.dumps({"rag_questions": [
        {"question_id": "q1", "question": QUESTION}]}), encoding="utf-8")
    done = run_cli("search-dataset", "--dataset_path", str(dataset), "--save_directory", "out",
                   "--k", "3", "--reranker", good, cwd=indexed)
    assert done.returncode == 0 and "(reranking " in done.stdout, done.stderr
    found = json.loads((indexed / "out" / "questions.json").read_text())
    assert found["search_results"][0]["retrieved_sources"][0]["file_path"] == RERANKED_FIRST

    done = run_cli("answer", QUESTION, "--style", "extractive", "-k", "3", "--reranker", good,
                   cwd=indexed)
    assert done.returncode == 0, done.stderr
    sources = done.stdout.split("Sources:")[1].strip().splitlines()
    assert RERANKED_FIRST in sources[0], done.stdout
    with RagDB(indexed / "data" / "processed" / "rag.db", reranker=good) as rag:
        answer = rag.answer(QUESTION, 3, style="extractive")
        assert answer.hits[0].file_path == RERANKED_FIRST
        assert answer.timings["reranker"].startswith("good@")
        assert answer.timings["rerank_ms"] >= 0 and answer.timings["rerank_notes"] == []
        scorer = rag.block_scorer()
        assert scorer is not None
        first, second = scorer(QUESTION, ["the scheduler", "install vllm with pip"])
        assert first > second
    with RagDB(indexed / "data" / "processed" / "rag.db") as rag:
        assert rag.block_scorer() is None and rag.search(QUESTION, 3)[0].file_path == FUSED_FIRST


def _get(url: str) -> Any:
    with urlopen(url, timeout=120) as response:
        return json.loads(response.read().decode())


def _post(url: str, body: dict[str, Any]) -> Any:
    request = Request(url, data=json.dumps(body).encode(), method="POST",
                      headers={"content-type": "application/json"})
    with urlopen(request, timeout=120) as response:
        return json.loads(response.read().decode())


def test_http_and_mcp_rerank_with_the_environment_setting(
        indexed: Path, rerankers: dict[str, Path]) -> None:
    env = {**os.environ, "RAGDB_MODELS_DIR": str(models_dir_without_writer()),
           "RAGDB_RERANKER": str(rerankers["good"])}
    port = free_port()
    log = indexed / "serve.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([sys.executable, "-m", "ragdb", "serve", "--port", str(port)],
                                  cwd=indexed, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(server, base, log)
        found = _get(f"{base}/-/ragdb/search?q={QUESTION.replace(' ', '+')}&k=3")
        assert found["sources"][0]["file_path"] == RERANKED_FIRST, found
        assert found["reranker"].startswith("good@") and found["timings"]["rerank_ms"] >= 0
        answer = _post(f"{base}/-/ragdb/answer", {"q": QUESTION, "k": 3, "style": "extractive"})
        assert answer["sources"][0]["file_path"] == RERANKED_FIRST
        assert answer["timings"]["reranker"].startswith("good@"), answer["timings"]
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    assert "Traceback" not in log.read_text(errors="replace")

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def call() -> Any:
        params = StdioServerParameters(command=sys.executable, args=["-m", "ragdb", "mcp"],
                                       env=env, cwd=indexed)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("search", {"query": QUESTION, "k": 3})

    result = anyio.run(call).structured_content
    assert result["sources"][0]["file_path"] == RERANKED_FIRST, result
    assert result["reranker"].startswith("good@") and "rerank_ms" in result["timings"]


def test_postgresql_reranks_to_the_same_order(indexed: Path, pg_url: str,
                                              rerankers: dict[str, Path]) -> None:
    assert run_cli("index", "data/raw", "--no-vectors", "--db", pg_url, cwd=indexed
                   ).returncode == 0
    good = str(rerankers["good"])
    lite = RagDB(indexed / "data" / "processed" / "rag.db", reranker=good)
    post = RagDB(pg_url, reranker=good)
    try:
        for question in (QUESTION, "how do i load a lora adapter", "gemma decoder layer"):
            a = [(h.file_path, h.first, h.last, h.score) for h in lite.search(question, 5)]
            b = [(h.file_path, h.first, h.last, h.score) for h in post.search(question, 5)]
            assert a == b and a, question
        assert post.search(QUESTION, 5)[0].file_path == RERANKED_FIRST
        assert post.last_rerank is not None and post.last_rerank["rerank_ms"] == 0  # cached
    finally:
        lite.close()
        post.close()


# -- the cache -----------------------------------------------------------------------------


def test_cache_never_serves_one_models_results_for_another(
        indexed: Path, rerankers: dict[str, Path], tmp_path: Path) -> None:
    db = indexed / "data" / "processed" / "rag.db"
    swap = tmp_path / "swap"
    shutil.copytree(rerankers["good"], swap)

    def run(spec: str | None, use_cache: bool = True) -> tuple[list[str], float]:
        with RagDB(db, reranker=spec, use_cache=use_cache) as rag:
            hits = rag.search(QUESTION, 5)
            spent = rag.last_rerank["rerank_ms"] if rag.last_rerank else -1.0
            return [h.file_path for h in hits], spent

    fused, _ = run(None)
    good, spent = run(str(swap))
    assert spent > 0 and good[0] == RERANKED_FIRST
    assert run(str(swap)) == (good, 0.0)  # cached under its identity
    other, _ = run(str(rerankers["other"]), use_cache=False)
    assert other != good
    for name in ("openvino_model.xml", "openvino_model.bin", "tokenizer.json"):
        shutil.copyfile(rerankers["other"] / name, swap / name)  # the same folder, new model
    after, spent = run(str(swap))
    assert spent > 0 and after == other
    assert run(None)[0] == fused  # the fused order's own entry, never a reranked one


def test_nan_scores_keep_the_fused_order_said_once_and_never_cached(
        indexed: Path, rerankers: dict[str, Path]) -> None:
    fused = _search(indexed, "--no-rerank")
    rows = _cache_rows(indexed)
    done = run_cli("search", QUESTION, "--json", "--reranker", str(rerankers["nan"]),
                   cwd=indexed)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert [s["file_path"] for s in json.loads(done.stdout)] == fused
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "NaN" in lines[0] and "the fused order is kept" in lines[0]
    assert _cache_rows(indexed) == rows


def test_k_larger_than_the_reranked_candidates(indexed: Path,
                                               rerankers: dict[str, Path]) -> None:
    db = indexed / "data" / "processed" / "rag.db"
    with RagDB(db) as rag:
        fused = [h.chunk_id for h in rag.search(QUESTION, 10)]
    with RagDB(db, reranker=str(rerankers["good"]),
               rerank_params=RerankParams(depth=2, order="reranker")) as rag:
        hits = rag.search(QUESTION, 10)
    assert len(fused) >= 3
    assert sorted(h.chunk_id for h in hits[:2]) == sorted(fused[:2])
    assert [h.chunk_id for h in hits[2:]] == fused[2:]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    done = run_cli("search", QUESTION, "-k", "50", "--json", "--reranker",
                   str(rerankers["good"]), cwd=indexed)
    assert done.returncode == 0 and len(json.loads(done.stdout)) == len(fused), done.stderr


# -- bad input -----------------------------------------------------------------------------


def test_a_question_of_4000_characters_is_reranked(indexed: Path,
                                                   rerankers: dict[str, Path]) -> None:
    long = ((QUESTION + " ") * 200)[:4000]
    done = run_cli("search", long, "--json", "--reranker", str(rerankers["good"]), cwd=indexed)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads(done.stdout)[0]["file_path"] == RERANKED_FIRST


def _broken(kind: str, rerankers: dict[str, Path], tmp_path: Path) -> Path:
    folder = tmp_path / kind
    if kind == "missing":
        return folder
    if kind == "a file":
        folder.write_text("not a model")
        return folder
    shutil.copytree(rerankers["good"], folder)
    if kind == "no tokenizer":
        (folder / "tokenizer.json").unlink()
    elif kind == "no weights":
        (folder / "openvino_model.bin").unlink()
    elif kind == "truncated":
        data = (folder / "openvino_model.bin").read_bytes()
        (folder / "openvino_model.bin").write_bytes(data[: len(data) // 2])
    elif kind == "bad tokenizer":
        (folder / "tokenizer.json").write_text('{"version": "1.0", "model": ')
    return folder


@pytest.mark.parametrize("kind, says", [
    ("missing", "not found: no such folder"),
    ("a file", "is not a folder"),
    ("no tokenizer", "has no tokenizer.json"),
    ("no weights", "holds no cross-encoder"),
    ("truncated", "cannot load reranker"),
    ("bad tokenizer", "cannot load reranker"),
    ("embedding", "is not a cross-encoder"),
])
def test_a_bad_reranker_is_one_line_and_the_index_is_kept(
        indexed: Path, rerankers: dict[str, Path], tmp_path: Path, kind: str,
        says: str) -> None:
    folder = (rerankers["embedding"] if kind == "embedding"
              else _broken(kind, rerankers, tmp_path))
    before = index_rows(indexed / "data" / "processed" / "rag.db")
    rows = _cache_rows(indexed)
    error = one_line_error(run_cli("search", QUESTION, "--reranker", str(folder), cwd=indexed))
    assert says in error and str(folder) in error, error
    assert index_rows(indexed / "data" / "processed" / "rag.db") == before
    assert _cache_rows(indexed) == rows


def test_rerank_without_a_reranker_and_a_hub_name_without_a_hub(indexed: Path) -> None:
    error = one_line_error(run_cli("search", QUESTION, "--rerank", cwd=indexed))
    assert error.startswith("ragdb: --rerank needs a reranker: --reranker FOLDER"), error
    error = one_line_error(run_cli("search", QUESTION, "--reranker", HUB_NAME, cwd=indexed,
                                   env={"HF_HUB_OFFLINE": "1"}))
    assert error == (f"ragdb: cannot get reranker {HUB_NAME}: HF_HUB_OFFLINE is set, and it "
                     "is not a local folder"), error
    port = free_port()  # nothing listens there
    error = one_line_error(run_cli("search", QUESTION, "--reranker", HUB_NAME, cwd=indexed,
                                   env={"HF_ENDPOINT": f"http://127.0.0.1:{port}"}))
    assert f"cannot get reranker {HUB_NAME}: cannot connect to 127.0.0.1:{port}" in error
    error = one_line_error(run_cli("search", QUESTION, "--reranker", "no/such/thing",
                                   cwd=indexed))
    assert "not a hub name (owner/name)" in error, error


# -- a hub -----------------------------------------------------------------------------------


class _Hub(BaseHTTPRequestHandler):
    """The few routes huggingface_hub's snapshot_download reads: a repository's file list,
    then each file (HEAD for its metadata, GET for its bytes)."""

    files: dict[str, bytes] = {}
    repo = HUB_NAME
    sha = "0123456789abcdef0123456789abcdef01234567"
    requests: list[str] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        self.requests.append(self.path)
        path = self.path.split("?")[0]
        if path.startswith(f"/api/models/{self.repo}"):
            info = {"id": self.repo, "modelId": self.repo, "sha": self.sha,
                    "siblings": [{"rfilename": name} for name in sorted(self.files)]}
            self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"})
            return
        prefix = f"/{self.repo}/resolve/"
        if path.startswith(prefix):
            name = path[len(prefix):].split("/", 1)[1]
            if name in self.files:
                body = self.files[name]
                self._send(200, body, {"X-Repo-Commit": self.sha,
                                       "ETag": f'"{hashlib.sha256(body).hexdigest()}"',
                                       "Content-Type": "application/octet-stream"})
                return
        self._send(404, b'{"error": "not found"}',
                   {"Content-Type": "application/json", "X-Error-Code": "EntryNotFound"})


@pytest.fixture
def hub(rerankers: dict[str, Path]) -> Iterator[str]:
    """A model hub on 127.0.0.1 holding HUB_NAME as the cross-encoder repositories publish it:
    the OpenVINO export in openvino/, the tokenizer and config at the top (and torch weights,
    never fetched)."""
    source = rerankers["good"]
    _Hub.files = {
        "openvino/openvino_model.xml": (source / "openvino_model.xml").read_bytes(),
        "openvino/openvino_model.bin": (source / "openvino_model.bin").read_bytes(),
        "tokenizer.json": (source / "tokenizer.json").read_bytes(),
        "config.json": (source / "config.json").read_bytes(),
        "pytorch_model.bin": b"torch weights: never fetched",
    }
    _Hub.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_hub_reranker_is_fetched_once_and_kept_in_the_models_folder(
        indexed: Path, hub: str, tmp_path: Path) -> None:
    models = tmp_path / "models"
    env = {"HF_ENDPOINT": hub, "RAGDB_MODELS_DIR": str(models), "HF_HOME": str(tmp_path / "hf")}
    assert _search(indexed, "--reranker", HUB_NAME, env=env)[0] == RERANKED_FIRST
    kept = models / "rerankers" / HUB_NAME.replace("/", "--")
    assert sorted(p.name for p in kept.iterdir()) == [
        "config.json", "openvino_model.bin", "openvino_model.xml", "tokenizer.json"]
    assert not any("pytorch_model" in path for path in _Hub.requests)
    offline = {**env, "HF_HUB_OFFLINE": "1"}
    assert _search(indexed, "--reranker", HUB_NAME, "-k", "4", env=offline)[0] == RERANKED_FIRST
