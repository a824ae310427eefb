"""ragdb inside Datasette: browsing rag.db, a JSON API over the library, and a question page.

Datasette stays what it is (read-only SQL over the file, tables, canned queries); ragdb adds
what SQL alone cannot do (question analysis, embeddings, the answer model) under `/-/ragdb/`.
This module holds the hooks only: `service` (configuration and the per-instance RagDB),
`api` (routes), `metadata` (tables, canned queries, cells), `vec` (sqlite-vec for Datasette's
SQLite) and `serve` (`ragdb serve`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Awaitable, Callable

import click
from datasette import Response, hookimpl
from datasette.utils import add_cors_headers
from datasette.utils.asgi import Base400
from datasette.views.base import DatasetteError
from markupsafe import Markup


from ragdb.datasette_plugin.api import ROUTES
from ragdb.datasette_plugin.metadata import (
    canned_queries_from_files,
    cell_html,
    file_path,
    instance_metadata,
    ragdb_fts_query,
)
from ragdb.datasette_plugin.service import (
    API_PREFIX,
    LOOPBACK_HOSTS,
    PLUGIN,
    PluginConfig,
    existing_service,
    host_allowed,
    service_for,
)
from ragdb.datasette_plugin.vec import datasette_vec_path
from ragdb.errors import RagdbError


@hookimpl
def prepare_connection(conn: Any) -> None:
    """Register ragdb_fts_query() and load (a private copy of) sqlite-vec where the sqlite3
    module allows extensions (pysqlite3 does).

    Connections are put in autocommit mode: the sqlite3 module otherwise opens a transaction
    before a data-changing statement, and when that statement fails (Datasette's connections
    are read-only: `?sql=with x as (select 1) delete from files`) the transaction stays open,
    so that connection keeps reading the index as it was, for ever.
    """
    try:
        conn.isolation_level = None
    except AttributeError:
        pass
    try:
        conn.create_function("ragdb_fts_query", 1, ragdb_fts_query, deterministic=True)
    except (TypeError, AttributeError):  # an sqlite3 module without `deterministic`
        conn.create_function("ragdb_fts_query", 1, ragdb_fts_query)
    if not hasattr(conn, "enable_load_extension"):
        return
    path = datasette_vec_path()
    if path is None:
        return
    try:
        conn.enable_load_extension(True)
        conn.load_extension(path)
        conn.enable_load_extension(False)
    except Exception:  # an old SQLite or a locked-down build: browsing still works without vec0
        pass


@hookimpl
def startup(datasette: Any) -> Callable[[], Awaitable[None]]:
    """Choose ragdb's database, and refuse to start on an index that holds files today's
    rules leave out as secrets (a plain `datasette rag.db` as `ragdb serve`): one line,
    `Error: ... nothing was served`, and exit status 1 (a click error, which the `datasette`
    command prints as such)."""
    async def inner() -> None:
        service = service_for(datasette)
        await service.setup()
        try:
            await service.refuse_held_secrets()
        except RagdbError as exc:
            raise click.ClickException(str(exc)) from None
    return inner


@hookimpl
def get_metadata(datasette: Any, key: str, database: str | None,
                 table: str | None) -> dict[str, Any]:
    """Table descriptions, facets and hidden tables for ragdb's database only, and the
    question page and canned queries linked from the home page."""
    service = existing_service(datasette)
    if service is None or service.db_name is None or not service.is_ragdb:
        return {}
    return instance_metadata(service.ask_url(), datasette.urls, service.db_name,
                             service.hidden_tables)


@hookimpl
def canned_queries(datasette: Any, database: str) -> dict[str, Any] | None:
    """The sql/canned_*.sql files, on ragdb's database only; their SQL folded (`show` opens
    it), so a page starts with its parameters and results."""
    service = existing_service(datasette)
    if service is None or database != service.db_name or not service.is_ragdb:
        return None
    return {
        q.name: {"sql": q.sql, "title": q.title, "description": q.description,
                 "hide_sql": True}
        for q in canned_queries_from_files()
    }


@hookimpl
def extra_css_urls(datasette: Any) -> list[str]:
    """static/ragdb.css (chunk text wrapped in its box, the question link) on every page
    while ragdb's database is served."""
    service = existing_service(datasette)
    if service is None or not service.is_ragdb:
        return []
    return [datasette.urls.static_plugins(_static_name(), "ragdb.css")]


def _static_name() -> str:
    """The name Datasette serves static/ under: the distribution's (`ragdb`) when the entry
    point registered the plugin, the module's when serve.ensure_registered() did."""
    from datasette.plugins import get_plugins

    ours = Path(__file__).with_name("static")
    for plugin in get_plugins():
        if plugin["static_path"] and Path(plugin["static_path"]) == ours:
            return str(plugin["name"])
    return PLUGIN


@hookimpl
def menu_links(datasette: Any) -> list[dict[str, str]]:
    service = existing_service(datasette)
    if service is None or not service.is_ragdb:
        return []
    return [{"href": service.ask_url(), "label": "Ask ragdb a question"}]


@hookimpl
def render_cell(row: Any, value: Any, column: str, table: str | None, database: str,
                datasette: Any) -> Markup | Awaitable[Markup | None] | None:
    """Only ragdb's database is touched. A chunk's file_id on its own page (where Datasette
    gives no label) is looked up, so the page names the file."""
    service = existing_service(datasette)
    if service is None or database != service.db_name or not service.is_ragdb:
        return None
    if table == "chunks" and column == "file_id" and isinstance(value, int):
        async def labelled() -> Markup | None:
            path = await file_path(datasette.get_database(database), value)
            return cell_html(row, {"value": value, "label": path}, column, table, database,
                             datasette.urls)
        return labelled()  # Datasette awaits it
    return cell_html(row, value, column, table, database, datasette.urls)


@hookimpl
def skip_csrf(datasette: Any, scope: dict[str, Any]) -> bool | None:
    """JSON requests to the API need no CSRF token: browsers cannot send them cross-site
    without a CORS preflight, which Datasette does not grant."""
    if scope.get("type") != "http":
        return None
    if not str(scope.get("path", "")).startswith(str(datasette.urls.path(API_PREFIX))):
        return None
    headers = dict(scope.get("headers") or [])
    content_type = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
    return content_type == b"application/json" or None


@hookimpl
def register_routes() -> list[tuple[str, Any]]:
    return ROUTES


@hookimpl
def asgi_wrapper(datasette: Any) -> Callable[[Any], Any]:
    """Every HTTP request must name this server in its Host header (loopback names, the bound
    address and `allowed_hosts`): a DNS-rebound page cannot read the index through it."""
    def wrap(app: Any) -> Any:
        allowed: frozenset[str] | None = None

        async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
            nonlocal allowed
            if scope.get("type") != "http":
                await app(scope, receive, send)
                return
            if allowed is None:
                config = PluginConfig.from_metadata(datasette.plugin_config(PLUGIN))
                allowed = LOOPBACK_HOSTS | {h.strip("[]").lower()
                                            for h in config.allowed_hosts or []}
            headers = dict(scope.get("headers") or [])
            host = headers.get(b"host", b"").decode("latin-1")
            server = scope.get("server") or (None, None)
            if not host_allowed(host, allowed, server[1]):
                await _json_error(send, 400, f"Host {host!r} is not served here; add it to "
                                             "the ragdb plugin setting allowed_hosts")
                return
            target = scope.get("raw_path") or str(scope.get("path", "")).encode("utf-8")
            if not target.startswith(b"/"):  # `*`, `nope`: no page has such a name
                await _json_error(send, 400, "the request target must be a path that starts "
                                             "with /")
                return
            if target.startswith(b"//"):  # no route matches; Datasette's 404 would redirect
                await _json_error(send, 404, "no such page: a path cannot start with //")
                return
            await app(scope, receive, send)
        return guarded
    return wrap


async def _json_error(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json; charset=utf-8"),
        (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@hookimpl(wrapper=True)
def handle_exception(datasette: Any, request: Any, exception: Exception) -> Any:
    """Client errors (404 and Datasette's other 4xx) answered as Datasette's default handler
    does, minus its rich traceback with locals: outside an `except` block (a path no route
    matches, `/rag//x`) that print itself raised, and the request got a plain-text 500.

    A DatasetteError is Datasette refusing the request's parameters (`?_sort=nosuch`,
    `_sort` with `_sort_desc`, a bad `_through`): its default status, 500, becomes 400, and any
    client could otherwise fill the log with a traceback per request.

    A wrapper, because Datasette awaits every handler's result, the default's too."""
    results = yield
    if not isinstance(exception, (Base400, DatasetteError)):
        return results
    return [_client_error(datasette, request, exception)]


def _client_error(datasette: Any, request: Any,
                  exception: Exception) -> Callable[[], Awaitable[Any]]:
    async def inner() -> Any:
        status = int(getattr(exception, "status", 400))
        status = status if status < 500 else 400
        message: Any = exception.args[0] if exception.args else f"Error {status}"
        info: dict[str, Any] = {"ok": False, "error": message, "status": status, "title": None}
        if isinstance(exception, DatasetteError):
            info.update(exception.error_dict, error=Markup(exception.message)
                        if exception.message_is_html else exception.message,
                        status=status, title=exception.title)
        headers: dict[str, str] = {}
        if datasette.cors:
            add_cors_headers(headers)
        if request.path.split("?")[0].endswith(".json"):
            return Response.json(info, status=status, headers=headers)
        template = datasette.jinja_env.select_template([f"{status}.html", "error.html"])
        return Response.html(await template.render_async(dict(
            info, urls=datasette.urls, app_css_hash=datasette.app_css_hash(),
            menu_links=lambda: [])), status=status, headers=headers)
    return inner
