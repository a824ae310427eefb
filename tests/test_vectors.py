"""Dense embeddings with the real model (no mocks) and vectors kept in step with chunks."""

from __future__ import annotations

from dataclasses import replace

import json
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import apsw
import numpy as np
import pytest

from ragdb.db import connect, get_setting, scalar
from ragdb.embedder import (
    DEFAULT_MODEL,
    PREFIX_FILE,
    Embedder,
    Prefixes,
    _resolve,
    embedder_identity,
    load_embedder,
)
from ragdb.vectors import (
    DEFAULT_POLICY,
    POLICIES,
    VectorPolicy,
    embedding_text,
    get_policy,
    has_vectors,
    query_blob,
    sync_vectors,
    text_windows,
    to_int8,
    vector_count,
    wants_vector,
)
from ragdb.errors import RagdbError
from tests.conftest import write_corpus


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """HOME and the models folder in a temporary place for the whole module."""
    root = tmp_path_factory.mktemp("embed")
    (root / "home").mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root / "home"))
        mp.setenv("RAGDB_MODELS_DIR", str(root / "models"))
        yield root


@pytest.fixture(scope="module")
def embedder(env: Path) -> Embedder:
    return load_embedder()


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_unit_norm_384(embedder: Embedder, env: Path) -> None:
    vectors = embedder.embed(["paged attention", "a longer sentence about the KV cache", "x"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert embedder.dim == 384
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)
    assert "maxlen=256" in embedder.identity
    # The compiled model was cached, and OpenVINO's telemetry stayed out of HOME.
    assert list((env / "models" / "cache").iterdir())
    assert not (env / "home" / "intel").exists()


def test_paraphrase_is_closer(embedder: Embedder) -> None:
    a, b, c = embedder.embed([
        "serve several fine-tuned adapters at once",
        "use multiple LoRA models simultaneously",
        "the weather in Paris",
    ])
    assert cos(a, b) > cos(a, c) + 0.2
    assert cos(a, b) > cos(b, c) + 0.2


def test_order_is_kept_when_sorted_by_length(embedder: Embedder) -> None:
    texts = [
        "def forward(self, x): return self.linear(x) " * 8,
        "LoRA",
        "The scheduler now supports chunked prefill by default.",
        "tensor parallel size " * 3,
        "a",
    ]
    together = embedder.embed(texts, batch_size=2)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    for i in range(len(texts)):
        assert cos(together[i], alone[i]) > 0.995
    similarity = together @ alone.T
    assert list(similarity.argmax(axis=1)) == list(range(len(texts)))


def test_int8_round_trip(embedder: Embedder) -> None:
    vectors = embedder.embed(["prefix caching", "how to quantize a model to fp8"])
    quantised = to_int8(vectors)
    assert quantised.dtype == np.int8 and quantised.min() >= -127
    for v, q in zip(vectors, quantised):
        assert cos(v, q.astype(np.float32)) > 0.99
    assert to_int8(np.array([[1.5, -1.5, 0.5]])).tolist() == [[127, -127, 64]]
    blob = query_blob(embedder, "prefix caching")
    assert len(blob) == 384 and blob == quantised[0].tobytes()


def test_embedding_text_keeps_meaning_and_drops_noise() -> None:
    code = (
        "# SPDX-License-Identifier: Apache-2.0\nfrom typing import (\n    Any,\n    Optional,\n)\n"
        "import torch\n\n\ndef load_lora(path: str) -> None:\n"
        '    """Load a LoRA adapter from disk."""\n    return None\n'
    )
    text = embedding_text("data/raw/vllm/vllm/lora/models.py", "python",
                          "class LoRAModelManager:", code)
    assert text.startswith("vllm/lora/models.py | class LoRAModelManager:\n")
    assert "SPDX" not in text and "import" not in text and "Optional" not in text
    assert "def load_lora(path: str) -> None:" in text and "Load a LoRA adapter" in text
    doc = embedding_text("docs/features/lora.md", "markdown", "LoRA Adapters\nServing",
                         "## Serving\n\n```bash\nvllm serve\n```\n")
    assert doc == "docs/features/lora.md | LoRA Adapters | Serving\n## Serving\n```bash\nvllm serve"


CODE_HEADS = get_policy("docs+code-head")


def test_vector_policy() -> None:
    assert wants_vector("markdown", "section")
    assert wants_vector("rst", "paragraph")
    assert not wants_vector("python", "function")  # default: docs only (measured)
    assert CODE_HEADS.wants_vector("python", "function")
    assert not CODE_HEADS.wants_vector("python", "statements")
    assert get_policy("all").wants_vector("python", "statements")
    assert CODE_HEADS.max_tokens("python") < CODE_HEADS.max_tokens("text")
    assert CODE_HEADS.key != DEFAULT_POLICY.key
    with pytest.raises(RagdbError, match="unknown vector policy"):
        get_policy("everything")


CHUNKS = [  # (path, file kind, chunk kind, context, text)
    ("docs/lora.md", "markdown", "section", "LoRA Adapters",
     "vLLM serves several LoRA adapters at once. "
     "POST /v1/load_lora_adapter loads one at run time."),
    ("docs/lora.md", "markdown", "paragraph", "LoRA Adapters",
     "Unload an adapter with /v1/unload_lora_adapter."),
    ("docs/quickstart.md", "markdown", "section", "Quickstart",
     "Install vLLM with pip, then start an OpenAI-compatible server with `vllm serve`."),
    ("notes.txt", "text", "paragraph", "",
     "The scheduler now supports chunked prefill by default."),
    ("pkg/layers.py", "python", "class", "",
     'class Gemma2DecoderLayer:\n    """One decoder layer of Gemma 2."""\n'),
    ("pkg/layers.py", "python", "function", "",
     "def trust_remote_code_default() -> bool:\n    # Remote code is never trusted.\n"
     "    return False\n"),
    ("pkg/layers.py", "python", "statements", "def trust_remote_code_default() -> bool:",
     "    x = 1\n    y = 2\n"),
]


def make_db(path: Path) -> apsw.Connection:
    """A real rag.db with files and chunks written directly (no FTS rows: not needed here)."""
    conn = connect(path, create=True)
    with conn:
        file_ids: dict[str, int] = {}
        for file_path, kind, *_ in CHUNKS:
            if file_path not in file_ids:
                file_ids[file_path] = cast(int, conn.execute(
                    "INSERT INTO files (path, sha256, size, kind, n_chars, indexed_at) "
                    "VALUES (:p, 'x', 1, :k, 1, '2025-01-01T00:00:00Z') RETURNING id",
                    {"p": file_path, "k": kind},
                ).fetchall()[0][0])
        for file_path, _, chunk_kind, context, text in CHUNKS:
            add_chunk(conn, file_ids[file_path], chunk_kind, context, text)
    return conn


def add_chunk(conn: apsw.Connection, file_id: int, kind: str, context: str, text: str) -> int:
    return cast(int, conn.execute(
        "INSERT INTO chunks (file_id, first_char, last_char, start_line, end_line, kind, "
        "context, text) VALUES (:f, 0, :n, 1, 1, :k, :c, :t) RETURNING id",
        {"f": file_id, "n": len(text), "k": kind, "c": context, "t": text},
    ).fetchall()[0][0])


def knn(conn: apsw.Connection, embedder: Embedder, query: str, k: int = 3) -> list[int]:
    rows = conn.execute(
        "SELECT chunk_id, distance FROM chunk_vectors "
        "WHERE embedding MATCH vec_int8(:v) AND k = :k ORDER BY distance",
        {"v": query_blob(embedder, query), "k": k},
    ).fetchall()
    return [cast(int, row[0]) for row in rows]


def test_sync_vectors(embedder: Embedder, tmp_path: Path) -> None:
    conn = make_db(tmp_path / "rag.db")
    assert not has_vectors(conn)
    calls: list[tuple[int, int]] = []
    stats = sync_vectors(conn, embedder, batch_size=2, policy=CODE_HEADS,
                         progress=lambda done, total: calls.append((done, total)))
    wanted = len(CHUNKS) - 1  # the statements chunk is left to lexical search
    assert (stats.embedded, stats.total) == (wanted, wanted)
    assert calls[0] == (0, wanted) and calls[-1] == (wanted, wanted)
    assert vector_count(conn) == wanted and has_vectors(conn)
    assert get_setting(conn, "embedder") == embedder.identity

    # Sensible neighbours through sqlite-vec's KNN over the int8 vectors.
    assert knn(conn, embedder, "how do I load a LoRA adapter while the server runs?")[0] in (1, 2)
    assert knn(conn, embedder, "pip install and start the server")[0] == 3

    again = sync_vectors(conn, embedder, policy=CODE_HEADS)
    assert (again.embedded, again.removed, again.total) == (0, 0, wanted)

    # Deleting a chunk leaves an orphan vector; a new chunk is the only one embedded.
    with conn:
        conn.execute("DELETE FROM chunks WHERE id = 2")
        new_id = add_chunk(conn, 1, "paragraph", "LoRA Adapters", "Adapters can be swapped.")
    step = sync_vectors(conn, embedder, policy=CODE_HEADS)
    assert (step.embedded, step.removed, step.total) == (1, 1, wanted)
    assert new_id in knn(conn, embedder, "swap adapters", k=7)

    # Another embedder (here: another max length) makes old vectors incomparable.
    other = Embedder(embedder.compiled, embedder.tokenizer, "another", max_length=128)
    reset = sync_vectors(conn, other, policy=CODE_HEADS)
    assert reset.reset and (reset.embedded, reset.removed, reset.total) == (wanted, wanted, wanted)
    assert get_setting(conn, "embedder") == other.identity
    # ... and so does another policy.
    docs_only = sync_vectors(conn, other, policy=get_policy("docs"))
    assert (docs_only.embedded, docs_only.total) == (4, 4)


def test_interrupted_sync_resumes(embedder: Embedder, tmp_path: Path) -> None:
    conn = make_db(tmp_path / "rag.db")

    def stop_after_first_batch(done: int, total: int) -> None:
        if done:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sync_vectors(conn, embedder, batch_size=2, progress=stop_after_first_batch,
                     policy=CODE_HEADS)
    assert vector_count(conn) == 2  # the first batch was committed
    conn.close()
    conn = connect(tmp_path / "rag.db")
    resumed = sync_vectors(conn, embedder, batch_size=2, policy=CODE_HEADS)
    assert (resumed.embedded, resumed.removed, resumed.total) == (4, 0, 6)


def test_text_windows_cover_the_text() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * (20 + 7 * i) for i in range(12)]
    text = "\n\n".join(paragraphs)
    windows = text_windows(text, 400)
    assert len(windows) > 3 and all(len(w) <= 400 for w in windows)
    assert "".join(windows).replace("\n", "").replace(" ", "") == text.replace(
        "\n", "").replace(" ", "")
    assert text_windows(text, 0) == [text]
    assert text_windows("x" * 1000, 400) == ["x" * 400, "x" * 400, "x" * 200]


def test_long_doc_chunk_gets_one_vector_per_window(embedder: Embedder,
                                                   tmp_path: Path) -> None:
    conn = make_db(tmp_path / "rag.db")
    filler = "\n\n".join(f"Section note {i}: " + "tuning the scheduler. " * 12 for i in range(4))
    long_text = filler + "\n\nSpeculative decoding uses a small draft model to propose tokens."
    with conn:
        long_id = add_chunk(conn, 1, "section", "Scheduling", long_text)
    every_window = POLICIES["docs"]  # the lean default keeps only the first windows
    sync_vectors(conn, embedder, policy=every_window)
    windows = scalar(conn, "SELECT count(*) FROM chunk_vectors WHERE chunk_id = :id",
                           {"id": long_id})
    assert windows == len(text_windows(long_text, every_window.doc_window_chars))
    assert windows > 1
    # the last window alone matches the question, and it brings its chunk first
    assert knn(conn, embedder, "draft model proposes tokens", k=1) == [long_id]


def test_local_folder(embedder: Embedder, tmp_path: Path) -> None:
    default_model, default_tokenizer, _, _ = _resolve(DEFAULT_MODEL)
    (tmp_path / "model.onnx").symlink_to(default_model)
    (tmp_path / "tokenizer.json").symlink_to(default_tokenizer)
    local = load_embedder(str(tmp_path))
    assert local.identity != embedder.identity and local.identity.endswith("model.onnx/maxlen=256")
    text = ["continuous batching"]
    assert cos(local.embed(text)[0], embedder.embed(text)[0]) > 0.9999


def test_a_folder_names_its_query_and_document_prefixes(
        embedder: Embedder, tmp_path: Path) -> None:
    """A model trained with prefixes (nomic-embed: `search_query: `) gets them on every query
    and every document, and vectors made with other prefixes have another identity."""
    default_model, default_tokenizer, _, _ = _resolve(DEFAULT_MODEL)
    (tmp_path / "model.onnx").symlink_to(default_model)
    (tmp_path / "tokenizer.json").symlink_to(default_tokenizer)
    plain = load_embedder(str(tmp_path))
    (tmp_path / PREFIX_FILE).write_text(json.dumps(
        {"query_prefix": "search_query: ", "document_prefix": "search_document: "}))
    prefixed = load_embedder(str(tmp_path))
    assert prefixed.prefixes == Prefixes("search_query: ", "search_document: ")
    assert prefixed.identity != plain.identity
    assert embedder_identity(str(tmp_path)) == prefixed.identity
    text = "continuous batching"
    assert cos(prefixed.embed_queries([text])[0],
               plain.embed([f"search_query: {text}"])[0]) > 0.9999
    assert cos(prefixed.embed([text])[0], plain.embed([f"search_document: {text}"])[0]) > 0.9999
    assert cos(embedder.embed_queries([text])[0], embedder.embed([text])[0]) > 0.9999
    (tmp_path / PREFIX_FILE).write_text('["not", "an object"]')
    with pytest.raises(RagdbError, match="is not a JSON object"):
        load_embedder(str(tmp_path))


@pytest.mark.parametrize("name", ["/no/such/folder", "not a model", "sentence-transformers/x"])
def test_bad_name(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  env: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the hub path fails fast instead of timing out
    monkeypatch.setenv("RAGDB_MODELS_DIR", str(env / "models"))
    with pytest.raises(RagdbError, match=f"cannot load embedder '{name}'") as info:
        load_embedder(name)
    assert "\n" not in str(info.value)


def test_folder_without_model(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(RagdbError, match="no OpenVINO IR"):
        load_embedder(str(tmp_path))


def test_no_op_index_run_loads_no_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing to embed means no model load: the embedder's identity is known without it."""
    from ragdb import indexing

    write_corpus(tmp_path / "proj")
    conn = connect(tmp_path / "rag.db", create=True)
    _, first = indexing.update_index(conn, [tmp_path / "proj"])
    assert first is not None and first.embedded > 0

    def refuse(name: str | None = None) -> Embedder:
        raise AssertionError("a no-op run loaded the embedder")

    monkeypatch.setattr(indexing, "load_embedder", refuse)
    stats, again = indexing.update_index(conn, [tmp_path / "proj"])
    assert stats.files_unchanged == 4 and again is not None
    assert again.embedded == 0 and again.total == first.total
    (tmp_path / "proj" / "notes.txt").write_text("A new paragraph about schedulers.\n")
    with pytest.raises(AssertionError, match="loaded the embedder"):
        indexing.update_index(conn, [tmp_path / "proj"])  # now there is something to embed


def test_lean_policy_windows_skips_and_dedupe() -> None:
    lean = POLICIES["docs-lean"]
    text = "\n\n".join(f"Paragraph {i}: " + "words about scheduling. " * 15 for i in range(6))
    picked = lean.windows("markdown", text)
    assert [n for n, _ in picked] == [0, 1, 2]  # only the first max_windows
    assert lean.windows("markdown", "tiny") == [(0, "tiny")]  # a chunk keeps one window
    short_last = "\n\n".join(["word " * 70, "word " * 70, "tiny"])
    assert [n for n, _ in lean.windows("markdown", short_last)] == [0, 1]
    assert not lean.wants_vector("markdown", "section", "data/raw/p/docs/api/README.md")
    assert lean.wants_vector("markdown", "section", "data/raw/p/docs/features/lora.md")
    assert lean.key != POLICIES["docs"].key
    old_docs_key = (  # what indexes made before issue 8 store: they keep their vectors
        '{"code": [], "code_tokens": 64, "doc_tokens": 256, "doc_window": 400, '
        '"docs": ["markdown", "rst", "text"], "text": 1}')
    assert POLICIES["docs"].key == old_docs_key
    assert VectorPolicy().key == lean.key
    # AsciiDoc, Org and RDoc came later: embedded by default without changing the key, and a
    # policy that leaves them out says so in its key.
    assert {"asciidoc", "org", "rdoc"} <= lean.doc_kinds
    first_kinds = replace(lean, doc_kinds=frozenset({"markdown", "rst", "text"}))
    assert first_kinds.key != lean.key and '"later_docs": []' in first_kinds.key


def test_dedupe_embeds_each_text_once(embedder: Embedder, tmp_path: Path) -> None:
    conn = make_db(tmp_path / "rag.db")
    same = "Licence: this text is repeated in many files of the corpus, word for word, " * 2
    with conn:
        first = add_chunk(conn, 1, "section", "", same)
        second = add_chunk(conn, 1, "section", "", same)
    calls: list[str] = []
    real_embed = embedder.embed

    def counting(texts: list[str], **kwargs: object) -> object:
        calls.extend(texts)
        return real_embed(texts, **kwargs)  # type: ignore[arg-type]

    embedder.embed = counting  # type: ignore[method-assign,assignment]
    try:
        sync_vectors(conn, embedder, policy=POLICIES["docs-lean"])
    finally:
        del embedder.embed
    assert sum("Licence" in text for text in calls) == 1
    for chunk_id in (first, second):
        assert scalar(conn, "SELECT count(*) FROM chunk_vectors WHERE chunk_id = :id",
                            {"id": chunk_id}) == 1
