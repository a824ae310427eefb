"""Datasette as ragdb's window: routes through Datasette's own client against a real rag.db.

One Datasette (one Searcher, one Generator) serves the whole module, as one server would: the
index is built from the small corpus with vectors, answers come from the real offline SmolLM2.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from ragdb.db import bump_generation, connect, set_setting
from ragdb.embedder import DEFAULT_MODEL, load_embedder
from ragdb.indexing import index_paths
from ragdb.vectors import sync_vectors
from ragdb import worker
from ragdb.datasette_plugin.metadata import code_html, path_html, ragdb_fts_query
from ragdb.datasette_plugin.serve import make_datasette
from ragdb.datasette_plugin.service import MAX_BODY_BYTES, PluginConfig, service_for
from ragdb.errors import RagdbError
from ragdb.generate.generator import NO_SOURCES_MESSAGE
from ragdb.schemas import StudentSearchResults
from tests.conftest import write_corpus

pytestmark = pytest.mark.asyncio(loop_scope="module")

HOSTILE = '# Escaping\n\n<script>alert("ragdb")</script> and </code></pre><b>bold</b>\n'


def _build_index(root: Path) -> None:
    """What `ragdb index data/raw --db rag.db` does, through the library."""
    conn = connect(root / "rag.db", create=True)
    index_paths(conn, [Path("data/raw")])
    sync_vectors(conn, load_embedder())
    with conn:
        set_setting(conn, "embedder_name", DEFAULT_MODEL)
        bump_generation(conn)
    conn.close()


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project folder, the current directory for the module (stored paths are relative)."""
    root = tmp_path_factory.mktemp("site")
    write_corpus(root / "data" / "raw" / "proj")
    (root / "data" / "raw" / "proj" / "docs" / "escaping.md").write_text(HOSTILE, "utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setenv("HOME", str(root / "home"))
        patch.setenv("HF_HUB_OFFLINE", "1")  # the default model falls back to SmolLM2
        patch.setenv("RAGDB_MODELS_DIR", str(root / "models"))
        patch.setenv(worker.HOLD_ENV, str(root / "hold"))  # inherited by the index worker
        _build_index(root)
        yield root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ds(site_dir: Path) -> AsyncIterator[Any]:
    datasette = make_datasette(Path("rag.db"), corpus_roots=[Path("data/raw")])
    await datasette.invoke_startup()
    yield datasette


async def _get_json(ds: Any, path: str, status: int = 200) -> Any:
    response = await ds.client.get(path)
    assert response.status_code == status, response.text
    return response.json()


def _assert_json_error(response: Any, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and body["error"], body
    assert "Traceback" not in response.text
    return str(body["error"])


# --------------------------------------------------------------------------------------------
# Search


async def test_search_returns_ranked_sources_with_links(ds: Any) -> None:
    body = await _get_json(ds, "/-/ragdb/search?q=How+do+I+load+a+LoRA+adapter&k=2")
    assert body["k"] == 2 and body["mode"] == "hybrid"
    sources = body["sources"]
    assert 1 <= len(sources) <= 2  # dense matches past the distance cut-off are dropped
    top = sources[0]
    assert top["file_path"] == "data/raw/proj/docs/features/lora.md"
    for key in ("first_character_index", "last_character_index", "start_line", "end_line",
                "score", "preview", "url", "chunk_id"):
        assert key in top
    text = Path(top["file_path"]).read_text("utf-8")
    chunk_text = text[top["first_character_index"]:top["last_character_index"]]
    assert top["preview"] and top["preview"] in chunk_text
    page = await ds.client.get(top["url"])
    assert page.status_code == 200 and "load_lora_adapter" in page.text


async def test_search_by_post_json_and_form(ds: Any) -> None:
    response = await ds.client.post(
        "/-/ragdb/search", json={"q": "Gemma2DecoderLayer", "k": 1, "mode": "lexical"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["sources"][0]["file_path"].endswith("pkg/layers.py")
    form = {"q": "serve several fine-tuned adapters at once", "k": "3", "mode": "dense"}
    response = await ds.client.post("/-/ragdb/search", data=form)  # no CSRF token: refused
    assert "CSRF" in _assert_json_error(response, 403)
    response = await ds.client.post("/-/ragdb/search", json={**form, "k": 3})
    assert response.status_code == 200, response.text
    sources = response.json()["sources"]
    assert response.json()["mode"] == "dense" and 1 <= len(sources) <= 3
    assert sources[0]["file_path"].endswith("lora.md")


async def test_json_api_needs_no_csrf_token_even_with_cookies(ds: Any) -> None:
    response = await ds.client.post(
        "/-/ragdb/search", json={"q": "lora"}, cookies={"ds_csrftoken": "anything"}
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "query, fragment",
    [
        ("", "q is required"),
        ("q=", "q is required"),
        ("q=%20%20", "q is required"),
        ("q=lora&k=0", "k must be"),
        ("q=lora&k=-1", "k must be"),
        ("q=lora&k=abc", "k must be"),
        ("q=lora&k=1.5", "k must be"),
        ("q=lora&k=101", "k must be"),
        ("q=lora&k=99999999999999999999", "k must be"),
        ("q=lora&mode=fuzzy", "mode must be one of"),
        ("q=" + "x" * 4001, "too long"),
    ],
)
async def test_search_rejects_bad_parameters_with_400(ds: Any, query: str, fragment: str) -> None:
    message = _assert_json_error(await ds.client.get(f"/-/ragdb/search?{query}"), 400)
    assert fragment in message


@pytest.mark.parametrize(
    "body, content_type",
    [
        (b'{"q": "lora",', "application/json"),
        (b"[1, 2]", "application/json"),
        (b'{"q": 42}', "application/json"),
        (b'{"q": "lora", "k": true}', "application/json"),
        (b'\xff\xfe{"q": "x"}', "application/json"),
    ],
)
async def test_malformed_bodies_are_400(ds: Any, body: bytes, content_type: str) -> None:
    response = await ds.client.post(
        "/-/ragdb/search", content=body, headers={"content-type": content_type}
    )
    _assert_json_error(response, 400)


@pytest.mark.parametrize(
    "method, path, status",
    [
        ("get", "/-/ragdb/nope", 404),
        ("get", "/-/ragdb/search/", 404),
        ("get", "/-/ragdb", 404),
        ("get", "/-/ragdb/static/secret.txt", 404),
        ("get", "/-/ragdb/answer", 405),
        ("get", "/-/ragdb/index", 405),
        ("get", "/-/ragdb/search-dataset", 405),
        ("post", "/-/ragdb/status", 405),
        ("put", "/-/ragdb/search", 405),
    ],
)
async def test_unknown_paths_and_methods(ds: Any, method: str, path: str, status: int) -> None:
    response = await ds.client.request(method.upper(), path)
    _assert_json_error(response, status)
    if status == 405:
        assert response.headers["allow"]


async def test_ask_page_rejects_post(ds: Any) -> None:
    _assert_json_error(await ds.client.post("/-/ragdb/ask", json={}), 405)


@pytest.mark.parametrize("path", ["/-/ragdb/search", "/-/ragdb/search-dataset",
                                  "/-/ragdb/answer"])
async def test_oversized_bodies_are_413(ds: Any, path: str) -> None:
    blob = json.dumps({"q": "x" * (MAX_BODY_BYTES + 10)}).encode()
    response = await ds.client.post(path, content=blob,
                                    headers={"content-type": "application/json"})
    assert "too large" in _assert_json_error(response, 413)


# --------------------------------------------------------------------------------------------
# search-dataset


def _dataset(*questions: str) -> dict[str, Any]:
    return {"rag_questions": [
        {"question_id": f"q{i}", "question": q} for i, q in enumerate(questions, 1)
    ]}


async def test_search_dataset_takes_the_dataset_in_the_body(ds: Any) -> None:
    response = await ds.client.post(
        "/-/ragdb/search-dataset?k=3&mode=lexical",
        json=_dataset("How do I unload a LoRA adapter?", "What is chunked prefill?"),
    )
    assert response.status_code == 200, response.text
    results = StudentSearchResults.model_validate(response.json())
    assert results.k == 3 and [r.question_id for r in results.search_results] == ["q1", "q2"]
    first, second = results.search_results
    assert first.retrieved_sources[0].file_path.endswith("lora.md")
    assert second.retrieved_sources[0].file_path.endswith("notes.txt")
    assert all(len(r.retrieved_sources) <= 3 for r in results.search_results)


@pytest.mark.parametrize(
    "query, body, fragment",
    [
        ("", {"questions": []}, "expected shape"),
        ("", {"rag_questions": [{"question": "no id"}]}, "question_id"),
        ("", None, "send the dataset"),
        ("?k=11", {"rag_questions": []}, "k must be"),
        ("?mode=x", {"rag_questions": []}, "mode must be"),
    ],
)
async def test_search_dataset_rejects_bad_input(ds: Any, query: str, body: Any,
                                                fragment: str) -> None:
    content = b"" if body is None else json.dumps(body).encode()
    response = await ds.client.post(f"/-/ragdb/search-dataset{query}", content=content,
                                    headers={"content-type": "application/json"})
    assert fragment in _assert_json_error(response, 400)


# --------------------------------------------------------------------------------------------
# Browsing: canned queries, cells, metadata


async def test_canned_queries_run(ds: Any) -> None:
    rows = await _get_json(ds, "/rag/search_chunks.json?q=trust_remote_code&_shape=array")
    assert rows and rows[0]["path"].endswith("pkg/layers.py")
    rows = await _get_json(ds, "/rag/search_chunks.json?q=gemma2+decoder+layer&_shape=array")
    assert rows[0]["path"].endswith("pkg/layers.py")
    assert await _get_json(ds, "/rag/search_chunks.json?q=&_shape=array") == []
    chunk = await _get_json(ds, f"/rag/chunks/{rows[0]['chunk_id']}.json?_shape=array")
    rows = await _get_json(ds, f"/rag/chunks_of_file.json?file_id={chunk[0]['file_id']}"
                               "&_shape=array")
    assert [r["path"] for r in rows] == ["data/raw/proj/pkg/layers.py"] * len(rows)
    runs = await _get_json(ds, "/rag/index_runs.json?_shape=array")
    assert runs and json.loads(runs[0]["roots"]) == ["data/raw"]
    largest = await _get_json(ds, "/rag/largest_files.json?_shape=array")
    assert largest[0]["size"] >= largest[-1]["size"] and largest[0]["chunks"] >= 1
    dirs = await _get_json(ds, "/rag/directories.json?_shape=array")
    assert {"dir": "data/raw/proj/docs/features/", "files": 1} in [
        {"dir": d["dir"], "files": d["files"]} for d in dirs
    ]
    page = await ds.client.get("/rag/search_chunks?q=LoRA+adapters")
    assert page.status_code == 200 and "ragdb-code" in page.text


async def test_canned_queries_fold_their_sql_and_link_paths_to_the_file_chunks(ds: Any) -> None:
    """A canned query's page starts with its parameters and results: its SQL is folded
    (`show` opens it); a result's path links to the file's chunk list."""
    rows = await _get_json(ds, "/rag/search_chunks.json?q=trust_remote_code&_shape=array")
    file_id = rows[0]["file_id"]
    assert rows[0]["path"] == "data/raw/proj/pkg/layers.py"
    for path in ("/rag/search_chunks?q=trust_remote_code", f"/rag/chunks_of_file?file_id={file_id}",
                 "/rag/largest_files", "/rag/directories", "/rag/index_runs"):
        page = (await ds.client.get(path)).text
        assert 'id="sql-query"' not in page and 'id="sql-editor"' not in page, path
        assert "_show_sql=1" in page, path
    page = (await ds.client.get("/rag/search_chunks?q=trust_remote_code")).text
    assert (f'<a href="/rag/chunks_of_file?file_id={file_id}" title="chunks of this file">'
            "data/<wbr>raw/<wbr>proj/<wbr>pkg/<wbr>layers.py</a>") in page
    shown = (await ds.client.get(f"/rag/chunks_of_file?file_id={file_id}&_show_sql=1")).text
    assert "WHERE c.file_id = :file_id" in shown


async def test_home_and_database_pages_lead_to_the_question_page(ds: Any) -> None:
    """The question page is a visible link on the home and database pages, with the canned
    queries worth browsing; the database page's SQL box starts on the chunks, not on the
    embeddings (chunk_vectors is hidden)."""
    home = (await ds.client.get("/")).text
    assert '<a class="ragdb-ask-link" href="/-/ragdb/ask">Ask a question</a>' in home
    for href in ("/rag/search_chunks", "/rag/files", "/rag/chunks", "/rag/largest_files",
                 "/rag/directories", "/rag/index_runs"):
        assert f'href="{href}"' in home, href
    database = (await ds.client.get("/rag")).text
    assert 'class="ragdb-ask-link" href="/-/ragdb/ask"' in database
    assert "select * from chunk_vectors" not in database
    assert "select * from chunks</textarea>" in database
    tables = {t["name"]: t for t in (await _get_json(ds, "/rag.json"))["tables"]}
    assert tables["chunk_vectors"]["hidden"] and not tables["chunks"]["hidden"]


async def test_pages_load_ragdb_css(ds: Any) -> None:
    """static/ragdb.css, which wraps chunk text in its box, is linked from every page and
    served."""
    hrefs = set()
    for path in ("/", "/rag", "/rag/chunks", "/rag/chunks/1", "/rag/largest_files"):
        page = (await ds.client.get(path)).text
        found = re.findall(r'<link rel="stylesheet" href="([^"]*ragdb\.css)">', page)
        assert found, path
        hrefs.update(found)
    for href in hrefs:
        css = await ds.client.get(href)
        assert css.status_code == 200 and "pre.ragdb-code" in css.text
        assert "white-space: pre-wrap" in css.text


async def test_fts_query_function_splits_identifiers() -> None:
    expected = '"trust" OR "remote" OR "code" OR "trustremotecode"'
    assert ragdb_fts_query("trust_remote_code") == expected
    assert ragdb_fts_query("how do I") == '""'
    assert ragdb_fts_query(None) == '""'


async def test_chunk_text_is_rendered_as_escaped_code(ds: Any) -> None:
    rows = await _get_json(ds, "/rag/search_chunks.json?q=escaping+alert&_shape=array")
    chunk_id = rows[0]["chunk_id"]
    page = (await ds.client.get(f"/rag/chunks/{chunk_id}")).text
    assert '<pre class="ragdb-code"' in page
    assert "&lt;script&gt;alert(&#34;ragdb&#34;)&lt;/script&gt;" in page
    assert '<script>alert("ragdb")' not in page and "<b>bold</b>" not in page
    assert str(code_html("<i>&")) == '<pre class="ragdb-code"><code>&lt;i&gt;&amp;</code></pre>'


async def test_a_chunk_page_names_its_file_and_links_its_chunks(ds: Any) -> None:
    """Datasette gives a foreign key its label on table pages only: a chunk's own page
    showed `file_id` as a bare number."""
    rows = await _get_json(ds, "/rag/search_chunks.json?q=escaping+alert&_shape=array")
    chunk_id, file_id = rows[0]["chunk_id"], rows[0]["file_id"]
    page = (await ds.client.get(f"/rag/chunks/{chunk_id}")).text
    assert (f'<a href="/rag/files/{file_id}">data/<wbr>raw/<wbr>proj/<wbr>docs/<wbr>escaping.md'
            f'</a> &middot; <a href="/rag/chunks_of_file?file_id={file_id}">all chunks</a>'
            ) in page
    listing = (await ds.client.get("/rag/chunks?_search=escaping")).text  # labels expanded
    assert "docs/<wbr>escaping.md</a> &middot;" in listing
    assert str(path_html("a/<b>/c")) == "a/<wbr>&lt;b&gt;/<wbr>c"


async def test_internal_tables_are_hidden_and_tables_described(ds: Any) -> None:
    tables = {t["name"]: t for t in (await _get_json(ds, "/rag.json"))["tables"]}
    for name in ("query_cache", "chunks_fts_data", "chunk_vectors_rowids", "fts_common_terms",
                 "chunk_vectors"):
        assert tables[name]["hidden"], name
    for name in ("files", "chunks", "index_runs", "settings"):
        assert not tables[name]["hidden"], name
    files = await _get_json(ds, "/rag/files.json")
    assert "kind" in files["facet_results"]
    # The generated `language` column shows and filters like a stored one.
    rows = await _get_json(ds, "/rag/files.json?language=markdown&_shape=array")
    assert rows and all(r["language"] == r["kind"] == "markdown" for r in rows)
    page = (await ds.client.get("/rag/files")).text
    assert "chunks_of_file?file_id=" in page and "One row per indexed file" in page
    search = await _get_json(ds, "/rag/chunks.json?_search=load_lora_adapter&_shape=array")
    assert search and all("load_lora_adapter" in row["text"] for row in search)


async def test_plain_datasette_uses_the_first_database(site_dir: Path) -> None:
    """`datasette rag.db` with no configuration: browsing, canned queries and the API work."""
    from datasette.app import Datasette

    plain = Datasette(files=[str(site_dir / "rag.db")])
    await plain.invoke_startup()
    body = await _get_json(plain, "/-/ragdb/search?q=lora&mode=lexical")
    assert body["sources"][0]["url"].startswith("/rag/chunks/")
    await _get_json(plain, "/rag/largest_files.json")


async def test_missing_or_empty_index_is_503(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    empty = tmp_path / "empty.db"
    connect(empty, create=True).close()
    for path, fragment in ((other, "is not a ragdb index"), (empty, "index is empty")):
        site = make_datasette(path)
        await site.invoke_startup()
        response = await site.client.get("/-/ragdb/search?q=lora")
        assert fragment in _assert_json_error(response, 503)
    assert "is not a ragdb index" in _assert_json_error(
        await make_site_and_post(other, "/-/ragdb/index"), 503
    )
    with sqlite3.connect(other) as conn:  # the other database was left alone
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0


async def make_site_and_post(path: Path, route: str) -> Any:
    site = make_datasette(path, corpus_roots=[path.parent])
    await site.invoke_startup()
    return await site.client.post(route, json={})


async def test_plugin_config_is_checked() -> None:
    with pytest.raises(RagdbError, match="vectors"):
        PluginConfig.from_metadata({"vectors": "yes"})
    with pytest.raises(RagdbError, match="corpus_roots"):
        PluginConfig.from_metadata({"corpus_roots": "data/raw"})
    config = PluginConfig.from_metadata({"db": "x.db", "corpus_roots": ["a", "b"]})
    assert config.db == Path("x.db") and config.corpus_roots == [Path("a"), Path("b")]


# --------------------------------------------------------------------------------------------
# The question page and answers (the real offline model, loaded once for the module)


async def test_ask_page_and_script(ds: Any) -> None:
    page = await ds.client.get("/-/ragdb/ask?q=%3Cscript%3E")
    assert page.status_code == 200
    html = page.text
    assert 'name="viewport"' in html and 'id="ragdb-form"' in html
    assert "&lt;script&gt;</textarea>" in html  # the prefilled question is escaped
    assert 'data-answer-url="/-/ragdb/answer"' in html
    script = await ds.client.get("/-/ragdb/static/ask.js")
    assert script.status_code == 200 and "getReader" in script.text


async def test_answer_as_json_cites_sources_that_link_to_chunks(ds: Any) -> None:
    response = await ds.client.post(
        "/-/ragdb/answer", json={"q": "How do I load a LoRA adapter at run time?", "k": 3}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    # Only the small offline model exists here: the default answer is whole blocks of the
    # sources, each under its [n] `path:start-end`, its lines the source's own.
    assert body["style"] == "extractive" and body["model"].startswith("blocks")
    assert 1 <= len(body["sources"]) <= 3
    assert body["sources"][0]["file_path"].endswith("lora.md")
    assert "/v1/load_lora_adapter" in body["answer"] and body["cited"], body["answer"]
    assert body["shown"]["variant"] == "blocks"
    for block in body["shown"]["blocks"]:
        title = f"[{block['n']}] `{block['file_path']}:{block['start_line']}-{block['end_line']}`"
        assert title in body["answer"]
    assert (await _get_json(ds, "/-/ragdb/status"))["model"] is None  # no model was loaded
    for citation in body["citations"]:
        assert f"[{citation['n']}]" in body["answer"]
        page = await ds.client.get(citation["url"])
        assert page.status_code == 200


async def test_generated_answer_cites_a_given_source(ds: Any) -> None:
    response = await ds.client.post("/-/ragdb/answer", json={
        "q": "How do I load a LoRA adapter at run time?", "k": 3, "style": "generate"})
    assert response.status_code == 200, response.text
    body = response.json()
    # SmolLM2's answer is checked like any writer's: shown where it passed, else the blocks
    # alone with the reason (issue 37).
    assert "SmolLM2" in body["check"]["writer"]
    if body["style"] == "extractive":
        assert body["check"]["fallback"] == "extractive" and body["check"]["fallback_reason"]
    else:
        assert body["style"] == "generate" and "SmolLM2" in body["model"]
    assert body["cited"], body["answer"]
    assert all(1 <= n <= len(body["sources"]) for n in body["cited"])


async def test_extractive_answer_streams_blocks(ds: Any) -> None:
    response = await ds.client.post(
        "/-/ragdb/answer?stream=1", json={"q": "How do I start a server?", "k": 2}
    )
    events = [(block.split("\n")[0].removeprefix("event: "),
               json.loads(block.split("\n", 1)[1].removeprefix("data: ")))
              for block in response.text.strip().split("\n\n")]
    names = [name for name, _ in events]
    assert names[0] == "sources" and names[-1] == "done" and "token" in names, names
    final = events[-1][1]
    assert final["style"] == "extractive"
    assert "".join(d["text"] for n, d in events if n == "token") == final["answer"]


async def test_answer_rejects_an_unknown_style(ds: Any) -> None:
    response = await ds.client.post("/-/ragdb/answer", json={"q": "lora", "style": "poem"})
    assert "style must be one of" in _assert_json_error(response, 400)


async def test_answer_streams_server_sent_events(ds: Any) -> None:
    response = await ds.client.post(
        "/-/ragdb/answer?stream=1",
        json={"q": "How do I start a server?", "k": 2, "style": "generate"},
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = []
    for block in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    names = [name for name, _ in events]
    assert names[0] == "sources" and names[-1] == "done", names
    assert "token" in names
    assert all(name == "token" for name in names[1:-1])
    streamed = "".join(data["text"] for name, data in events if name == "token")
    final = events[-1][1]
    assert streamed.strip() and final["answer"].strip()
    assert final["sources"][0]["url"].startswith("/rag/chunks/")
    assert (await _get_json(ds, "/-/ragdb/status"))["model"] == final["check"]["writer"]


async def test_answer_without_sources_does_not_generate(ds: Any) -> None:
    response = await ds.client.post(
        "/-/ragdb/answer", json={"q": "zyzzyva quixotic", "mode": "lexical"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["answer"] == NO_SOURCES_MESSAGE and response.json()["sources"] == []


async def test_answer_rejects_bad_parameters(ds: Any) -> None:
    for body in ({"q": ""}, {"q": "lora", "k": 0}, {"q": "lora", "stream": "maybe"}):
        _assert_json_error(await ds.client.post("/-/ragdb/answer", json=body), 400)


# --------------------------------------------------------------------------------------------
# Re-indexing while serving (last: it changes the corpus)


async def test_index_run_is_picked_up_and_a_concurrent_one_gets_409(
    ds: Any, site_dir: Path
) -> None:
    service = service_for(ds)
    before = await _get_json(ds, "/-/ragdb/status")
    extra = site_dir / "data" / "raw" / "proj" / "extra"
    extra.mkdir()
    for i in range(150):  # enough work that the run is still going when the second one comes
        (extra / f"module_{i}.py").write_text(
            f'"""Helpers number {i}."""\n\n\ndef helper_{i}(x: int) -> int:\n'
            f"    return x + {i}\n", "utf-8")
    (extra / "marsupials.md").write_text("# Quokka\n\nThe quokka scheduler hops.\n", "utf-8")
    assert not (await _get_json(ds, "/-/ragdb/search?q=quokka&mode=lexical"))["sources"]

    first = asyncio.create_task(ds.client.post("/-/ragdb/index", json={}))
    for _ in range(500):
        if service.indexing:
            break
        await asyncio.sleep(0.01)
    assert service.indexing
    second = await ds.client.post("/-/ragdb/index", json={})
    assert "already in progress" in _assert_json_error(second, 409)
    # Searches are still served meanwhile, and their query-cache writes must not break the run.
    during = await asyncio.gather(*(
        ds.client.get(f"/-/ragdb/search?q={q}&k=2")
        for q in ("lora+adapter", "vllm+serve", "sampling+params", "hidden+size", "prefill")
    ))
    assert [r.status_code for r in during] == [200] * 5
    response = await first
    assert response.status_code == 200, response.text
    run = response.json()
    assert run["stats"]["files_indexed"] == 151 and run["roots"] == ["data/raw"]
    assert run["vectors"]["embedded"] > 0
    assert run["generation"] > before["generation"]

    found = await _get_json(ds, "/-/ragdb/search?q=quokka&k=1")
    assert found["sources"][0]["file_path"].endswith("extra/marsupials.md")
    assert found["generation"] == run["generation"]
    rows = await _get_json(ds, "/rag/search_chunks.json?q=quokka&_shape=array")
    assert rows and rows[0]["path"].endswith("marsupials.md")
    assert os.path.exists(site_dir / "rag.db")


async def test_searches_during_a_run_do_not_break_it(ds: Any, site_dir: Path) -> None:
    """A run that changes nothing reads for a long while before its one write at the end; query
    cache rows committed meanwhile would make that write fail (SQLITE_BUSY_SNAPSHOT). The run
    is held in flight (worker.HOLD_ENV) while searches come in."""
    service = service_for(ds)
    hold = site_dir / "hold"
    hold.touch()
    try:
        run = asyncio.create_task(ds.client.post("/-/ragdb/index", json={}))
        for _ in range(500):
            if service.indexing:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(1.0)  # the worker has opened its transaction and is reading
        for q in ("adapter+unload", "pip+install", "tanh", "release+notes", "decoder+gemma"):
            response = await ds.client.get(f"/-/ragdb/search?q={q}&k=1&mode=lexical")
            assert response.status_code == 200, response.text
        assert not run.done()  # still held: the searches really ran during the run
        hold.unlink()
        response = await run
    finally:
        hold.unlink(missing_ok=True)
    assert response.status_code == 200, response.text
    assert response.json()["stats"]["files_indexed"] == 0
