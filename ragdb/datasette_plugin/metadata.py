"""What plain `datasette rag.db` gets too: the ragdb_fts_query() SQL function, canned queries
from sql/canned_*.sql, table descriptions and facets, and chunk text shown as code."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any, Iterable

from markupsafe import Markup

from ragdb.resources import resource_dir, sql
from ragdb.input_rules import MAX_QUESTION_CHARS, one_line
from ragdb.tokenize import fts_query, query_terms


def ragdb_fts_query(question: object) -> str:
    """An FTS5 MATCH expression with ragdb's identifier splitting, for plain SQL clients.

    A question with no searchable term gives `""`, which matches nothing instead of failing
    with an FTS5 syntax error (Datasette runs canned queries with empty parameters).

    A question over the question rule's length is an error: the function runs in Python,
    where Datasette's SQL time limit (a progress handler) never reaches, and 60 MB of text
    took 10 s.
    """
    if not isinstance(question, str):
        return '""'
    if len(question) > MAX_QUESTION_CHARS:
        raise ValueError(f"ragdb_fts_query: the question is too long ({len(question)} "
                         f"characters, at most {MAX_QUESTION_CHARS})")
    return fts_query(query_terms(question)) or '""'


@dataclass(frozen=True)
class CannedQuery:
    name: str
    title: str
    description: str
    sql: str


@cache
def canned_queries_from_files() -> tuple[CannedQuery, ...]:
    """`sql/canned_<name>.sql` files; `-- title:` and `-- description:` header lines name them."""
    found = []
    for path in sorted(resource_dir("sql").glob("canned_*.sql")):
        header: dict[str, str] = {}
        body: list[str] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            match = re.match(r"--\s*(title|description):\s*(.*)$", line)
            if match and not body:
                header[match.group(1)] = match.group(2).strip()
            else:
                body.append(line)
        name = path.stem[len("canned_"):]
        text = "\n".join(body).strip().rstrip(";").strip()
        found.append(CannedQuery(name, header.get("title", name), header.get("description", ""),
                                 text))
    return tuple(found)


def intro_html(ask_url: str, urls: Any, database: str) -> Markup:
    """The question page as the first thing to see, then the pages worth browsing: the home
    and database pages of Datasette otherwise list tables and a SQL box only."""
    links = [(urls.query(database, "search_chunks"), "Full-text search"),
             (urls.table(database, "files"), "Files"),
             (urls.table(database, "chunks"), "Chunks")]
    links += [(urls.query(database, q.name), q.title) for q in canned_queries_from_files()
              if q.name not in ("search_chunks", "chunks_of_file")]
    items = Markup(" &middot; ").join(
        Markup('<a href="{}">{}</a>').format(href, label) for href, label in links
    )
    return Markup(
        '<p class="ragdb-intro"><a class="ragdb-ask-link" href="{}">Ask a question</a> '
        "about the indexed code: an answer that cites its sources.</p>"
        '<p class="ragdb-browse">Browse: {}</p>'
    ).format(ask_url, items)


def instance_metadata(ask_url: str, urls: Any, database: str,
                      hidden: Iterable[str]) -> dict[str, Any]:
    """Datasette metadata for ragdb's database and for the home page."""
    intro = intro_html(ask_url, urls, database)
    return {
        "description_html": str(intro),
        "databases": {database: table_metadata(str(intro), hidden)},
    }


def table_metadata(intro: str, hidden: Iterable[str]) -> dict[str, Any]:
    """Labels, descriptions and facets of ragdb's tables, as Datasette metadata.

    chunk_vectors is hidden: its rows are embeddings, and the database page's SQL box starts
    on the first table shown (`select * from chunks`, not the vectors)."""
    tables: dict[str, Any] = {
        "files": {
            "description": (
                "One row per indexed file: path relative to where `ragdb index` ran, SHA-256 "
                "(a changed hash means re-chunking), size in bytes, kind and length in "
                "characters. The path links to the file's chunks."
            ),
            "label_column": "path",
            "facets": ["kind"],
        },
        "chunks": {
            "description": (
                "The retrievable pieces of each file: text == file_text[first_char:last_char] "
                "(Python character offsets, last exclusive), start_line..end_line for people, "
                "and the enclosing signatures or headings as context. Search here matches the "
                "analysed full-text index."
            ),
            "facets": ["kind"],
            "fts_table": "chunks_fts",
            "fts_pk": "id",
        },
        "index_runs": {
            "description": "Every index run: its roots, settings, counts and duration.",
            "sort_desc": "id",
        },
        "settings": {
            "description": (
                "What the index was built with (chunk size, tokenizer and embedder versions) and "
                "its generation, bumped by every run that changed something."
            ),
        },
        "chunk_vectors": {
            "description": (
                "int8 all-MiniLM-L6-v2 embeddings of the chunks (sqlite-vec vec0), one or more "
                "per chunk (chunk_id links to it); used by dense and hybrid search."
            ),
            "hidden": True,
        },
    }
    for name in hidden:
        tables.setdefault(name, {})["hidden"] = True
    return {
        "description_html": (
            "<p>ragdb's index of a codebase: files, their chunks, the full-text index and the "
            "embeddings.</p>" + intro
        ),
        "tables": tables,
    }


def code_html(text: str) -> Markup:
    """Chunk text as an escaped <pre><code> block (Markup.format escapes its arguments);
    static/ragdb.css wraps its lines inside the box."""
    return Markup('<pre class="ragdb-code"><code>{}</code></pre>').format(text)


def path_html(path: str) -> Markup:
    """A path that may wrap after each `/` (escaped): a long path otherwise sets the width of
    its column, and the chunk text beside it ran off the page."""
    return Markup("/<wbr>").join(one_line(path).split("/"))


def _row_value(row: Any, name: str) -> Any:
    try:
        return row[name]
    except (IndexError, KeyError, TypeError):
        return None


def cell_html(row: Any, value: Any, column: str, table: str | None, database: str,
              urls: Any) -> Markup | None:
    """A cell of ragdb's tables as HTML; everything is escaped by Markup.format."""
    if column == "text" and table in ("chunks", None) and isinstance(value, str):
        return code_html(value)
    if table == "chunks" and column == "file_id":
        file_id = value.get("value") if isinstance(value, dict) else value
        label = value.get("label") if isinstance(value, dict) else None
        if not isinstance(file_id, int):
            return None
        file_link = urls.row(database, "files", str(file_id))
        others = urls.query(database, "chunks_of_file") + f"?file_id={file_id}"
        return Markup('<a href="{}">{}</a> &middot; <a href="{}">all chunks</a>').format(
            file_link, path_html(label) if isinstance(label, str) else file_id, others
        )
    if column == "path" and isinstance(value, str) and table in ("files", None):
        file_id = _row_value(row, "id" if table == "files" else "file_id")
        if not isinstance(file_id, int):
            return path_html(value)
        others = urls.query(database, "chunks_of_file") + f"?file_id={file_id}"
        return Markup('<a href="{}" title="chunks of this file">{}</a>').format(
            others, path_html(value)
        )
    if table in (None, "chunk_vectors") and column == "chunk_id" and isinstance(value, int):
        return Markup('<a href="{}">{}</a>').format(
            urls.row(database, "chunks", str(value)), value
        )
    if table is None and column == "file_id" and isinstance(value, int):
        return Markup('<a href="{}">{}</a>').format(urls.row(database, "files", str(value)),
                                                    value)
    if table is None and column == "dir" and isinstance(value, str):
        from urllib.parse import quote

        href = urls.table(database, "files") + "?path__startswith=" + quote(value, safe="")
        return Markup('<a href="{}">{}</a>').format(href, value or "(top level)")
    return None


async def file_path(db: Any, file_id: int) -> str | None:
    """A file's path, for a chunk's page: Datasette expands a foreign key to its label on
    table pages only, and the row page showed the bare file id."""
    rows = (await db.execute(sql("browse_file_path"), {"file_id": file_id})).rows
    return str(rows[0][0]) if rows else None
