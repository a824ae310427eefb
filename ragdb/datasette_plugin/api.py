"""ragdb's HTTP routes under /-/ragdb/: request parsing, the JSON API, server-sent events and
the question page. Every failure is JSON `{"error": "..."}`, never a traceback."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import traceback
from functools import cache
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence, TypeVar
from urllib.parse import parse_qsl

import apsw
from datasette import Response
from pydantic import ValidationError

from ragdb import evaluate as evaluation
from ragdb.answering import answer_json
from ragdb.datasette_plugin.service import (
    API_PREFIX,
    DEFAULT_DATASET_K,
    DEFAULT_ANSWER_K,
    DEFAULT_K,
    MAX_DATASET_QUESTIONS,
    ApiError,
    Cancelled,
    RagdbService,
    service_for,
)
from ragdb.errors import MissingIndexError, RagdbError, UnavailableError
from ragdb.generate.style import Style
from ragdb.input_rules import MAX_K, check_dataset_questions, check_k, check_question
from ragdb.retrieve import (
    NO_FILTERS,
    Filters,
    Hit,
    Mode,
    search_results,
    source_json,
)
from ragdb.schemas import RagDataset, SearchFilters, describe, first_problem

_PACKAGE = Path(__file__).resolve().parent


#: Seconds a client may take between two pieces of a request body.
BODY_TIMEOUT_S = 30.0


def content_type(request: Any) -> str:
    return str(request.headers.get("content-type", "")).split(";", 1)[0].strip().lower()


def check_post(request: Any, bare: bool = False) -> None:
    """State-changing requests come as JSON, or as a form with Datasette's CSRF token.

    A cross-site page can send a form or text/plain body without a CORS preflight, and
    Datasette's CSRF check only runs for requests that carry cookies; application/json needs a
    preflight that is never granted. A form is accepted only with the `csrftoken` cookie, which
    Datasette's check then matched against the form's token.

    `bare`: a POST without Content-Type (`curl -X POST`) is accepted too where no browser sent
    it: every browser names the page's Origin on a POST, and a page could send such a POST
    without a preflight.
    """
    kind = content_type(request)
    if kind == "application/json":
        return
    if bare and not kind and "origin" not in request.headers:
        return
    if kind == "application/x-www-form-urlencoded":
        if "ds_csrftoken" in request.cookies:
            return  # asgi-csrf has compared the form's csrftoken with the cookie
        raise ApiError(403, "a form post needs Datasette's CSRF token (csrftoken); API "
                            "clients send application/json")
    raise ApiError(415, "send the request body as application/json"
                        + (f" (got {kind})" if kind else " (no Content-Type was given)"))


async def read_body(request: Any, limit: int, timeout: float | None = None) -> bytes:
    """The request body, refusing anything over `limit` bytes before reading it all, and
    giving up on a client that stalls for `timeout` seconds [BODY_TIMEOUT_S]."""
    timeout = BODY_TIMEOUT_S if timeout is None else timeout
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body too large (limit {limit} bytes)")
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            message = await asyncio.wait_for(request.receive(), timeout)
        except asyncio.TimeoutError:
            raise ApiError(408, f"the request body did not arrive within {timeout:g} s") from None
        if message["type"] == "http.disconnect":
            raise ApiError(400, "the client disconnected before sending the whole body")
        piece = message.get("body", b"")
        size += len(piece)
        if size > limit:
            raise ApiError(413, f"request body too large (limit {limit} bytes)")
        chunks.append(piece)
        if not message.get("more_body", False):
            return b"".join(chunks)


def parse_json(body: bytes, what: str = "request body") -> Any:
    try:
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise ApiError(400, f"{what} is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise ApiError(400, f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise ApiError(400, f"{what} is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise ApiError(400, f"{what} is not acceptable JSON: {str(exc)[:120]}") from None


async def request_params(request: Any, limit: int) -> dict[str, Any]:
    """Query-string parameters, overridden by a JSON object or form body when there is one."""
    try:  # Datasette's request.args replace undecodable bytes; the question rule refuses them
        parse_qsl(request.query_string, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise ApiError(400, "the query string is not valid UTF-8 (percent-encoded bytes that "
                            "are not text)") from None
    params: dict[str, Any] = {key: request.args.get(key) for key in request.args.keys()}
    for key in LIST_PARAMS:  # repeatable: ?lang=go&lang=rust
        if key in params:
            params[key] = request.args.getlist(key)
    if request.method != "POST":
        return params
    body = await read_body(request, limit)
    if not body.strip():
        return params
    if content_type(request) == "application/x-www-form-urlencoded":
        try:
            pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, errors="strict")
            params.update(pairs)
            for key in LIST_PARAMS:
                values = [value for name, value in pairs if name == key]
                if values:
                    params[key] = values
        except UnicodeDecodeError:
            raise ApiError(400, "request body is not UTF-8") from None
        return params
    data = parse_json(body)
    if not isinstance(data, dict):
        raise ApiError(400, "the JSON body must be an object, e.g. {\"q\": \"...\", \"k\": 5}")
    params.update(data)
    return params


def parse_question(raw: object) -> str:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise ApiError(400, "q is required: the question to search for")
    try:
        return check_question(raw, what="q")  # the library's rule, as on every door
    except RagdbError as exc:
        raise ApiError(400, str(exc)) from None


def parse_k(raw: object, default: int, maximum: int = MAX_K) -> int:
    """ragdb's one k rule (`check_k`); a missing k takes the route's default."""
    if raw is None or raw == "":
        return default
    try:
        return check_k(raw, high=maximum)
    except RagdbError as exc:
        raise ApiError(400, str(exc)) from None


LIST_PARAMS = ("path", "lang", "exclude")


def parse_filters(params: dict[str, Any]) -> Filters:
    """`path` and `exclude` (GLOBs) and `lang` (languages): a string, a list of strings, or
    repeated; anything else is a 400 that names the field (schemas.SearchFilters)."""
    try:
        given = SearchFilters.model_validate({key: params.get(key) for key in LIST_PARAMS})
    except ValidationError as exc:
        raise ApiError(400, first_problem(exc)) from None
    try:
        return Filters.of(given.path, given.lang, given.exclude)
    except RagdbError as exc:
        raise ApiError(400, f"path, lang and exclude must be strings or lists of strings "
                            f"({exc})") from None


Choice = TypeVar("Choice", Mode, Style)


def parse_choice(raw: object, name: str, default: Choice) -> Choice:
    """One of an enum's values (`mode`, `style`); missing means the default."""
    if raw is None or raw == "":
        return default
    try:
        return type(default)(raw)
    except ValueError:
        choices = ", ".join(c.value for c in type(default))
        raise ApiError(400, f"{name} must be one of {choices}, got {raw!r}") from None


def parse_mode(raw: object) -> Mode:
    return parse_choice(raw, "mode", Mode.hybrid)


def parse_style(raw: object) -> Style:
    return parse_choice(raw, "style", Style.auto)


def parse_flag(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    if raw is None:
        return False
    text = str(raw).strip().lower()
    if text in {"", "0", "false", "no", "off"}:
        return False
    if text in {"1", "true", "yes", "on"}:
        return True
    raise ApiError(400, f"stream must be 1 or 0, got {raw!r}")


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Any:
    return Response.json({"error": message}, status=status, headers=headers)


View = Callable[..., Awaitable[Any]]


def api_view(methods: Sequence[str], bare_post: bool = False) -> Callable[[View], View]:
    """Turn every failure of a handler into JSON: 4xx for the client's mistakes, 503 when there
    is no index, 500 (logged, without a traceback in the response) for anything else.
    `bare_post`: a POST may come without Content-Type (check_post)."""
    def decorate(handler: View) -> View:
        async def view(datasette: Any, request: Any, send: Any) -> Any:
            if request.method not in methods:
                return error_response(
                    405, f"{request.method} is not allowed here; use {' or '.join(methods)}",
                    {"Allow": ", ".join(methods)},
                )
            try:
                if request.method == "POST":
                    check_post(request, bare_post)
                return await handler(service_for(datasette), request, send)
            except ApiError as exc:
                return error_response(exc.status, exc.message, exc.headers)
            except (MissingIndexError, UnavailableError) as exc:
                return error_response(503, str(exc))
            except RagdbError as exc:
                return error_response(400, str(exc))
            except (apsw.BusyError, apsw.LockedError):
                return error_response(503, "the database is busy; try again")
            except Exception as exc:  # noqa: BLE001 - the one place that must catch everything
                traceback.print_exc()
                return error_response(500, f"internal error: {type(exc).__name__}")
        view.__name__ = handler.__name__
        return view
    return decorate


@api_view(["GET", "HEAD", "POST"])
async def search_view(service: RagdbService, request: Any, send: Any) -> Any:
    params = await request_params(request, service.config.max_body_bytes)
    question = parse_question(params.get("q"))
    k = parse_k(params.get("k"), DEFAULT_K)
    mode = parse_mode(params.get("mode"))
    filters = parse_filters(params)
    started = time.perf_counter()
    found = await service.search(question, k, mode, filters)
    hits, generation, coverage, warnings, rerank = found
    warnings = warnings + (rerank or {}).get("rerank_notes", [])
    return Response.json({
        "q": question,
        "k": k,
        "mode": mode.value,
        "path": list(filters.paths),
        "lang": list(filters.langs),
        "exclude": list(filters.excludes),
        "generation": generation,
        "dense_coverage": coverage,
        "warnings": warnings,
        "took_ms": round((time.perf_counter() - started) * 1000, 2),
        "reranker": rerank["reranker"] if rerank else None,
        "timings": {"rerank_ms": rerank["rerank_ms"]} if rerank else {},
        "sources": [source_json(rank, hit, service.chunk_url(hit.chunk_id))
                    for rank, hit in enumerate(hits, 1)],
    })


@api_view(["POST"])
async def search_dataset_view(service: RagdbService, request: Any, send: Any) -> Any:
    k = parse_k(request.args.get("k"), DEFAULT_DATASET_K, evaluation.MAX_K)
    mode = parse_mode(request.args.get("mode"))
    filters = parse_filters({key: request.args.getlist(key) for key in LIST_PARAMS
                             if key in request.args.keys()})
    body = await read_body(request, service.config.max_body_bytes)
    if not body.strip():
        raise ApiError(400, "send the dataset (RagDataset JSON) as the request body")
    data = parse_json(body, "the dataset")
    try:
        dataset = RagDataset.model_validate(data)
    except ValidationError as exc:
        raise ApiError(400, f"the dataset does not have the expected shape ({describe(exc)})")
    questions = dataset.rag_questions
    if len(questions) > MAX_DATASET_QUESTIONS:
        raise ApiError(413, f"the dataset has {len(questions)} questions, at most "
                            f"{MAX_DATASET_QUESTIONS} per request: send it in parts")
    texts = check_dataset_questions(questions)
    gone = asyncio.Event()

    async def watch_disconnect() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        gone.set()

    watcher = asyncio.create_task(watch_disconnect())
    try:
        found = await service.search_many(texts, k, mode, filters, stop=gone.is_set)
    except Cancelled:  # nobody is left to read the results
        raise ApiError(400, "the client disconnected before the results were ready") from None
    finally:
        watcher.cancel()
    return Response.json(search_results(questions, found, k).model_dump())


@api_view(["POST"], bare_post=True)
async def index_view(service: RagdbService, request: Any, send: Any) -> Any:
    body = await read_body(request, service.config.max_body_bytes)  # nothing in it is used
    if body.strip() and not content_type(request):
        parse_json(body)  # without Content-Type: empty, or JSON
    try:
        outcome = await service.run_index()
    except MissingIndexError:
        raise
    except RagdbError as exc:  # a configured root is gone: the server's problem, not the client's
        raise ApiError(503, str(exc)) from None
    return Response.json({
        "roots": outcome.roots,
        "generation": outcome.generation,
        "stats": outcome.stats,
        "vectors": outcome.vectors,
    })


#: The reads of definitions and references: what each takes as its subject.
SYMBOL_SUBJECTS = {"definition": "name", "references": "name", "callers": "name",
                   "callees": "name", "outline": "file", "map": "tokens"}


@api_view(["GET", "HEAD", "POST"])
async def symbols_view(service: RagdbService, request: Any, send: Any) -> Any:
    """GET /-/ragdb/definition?name=LLM (references, callers, callees: name; outline: file;
    map: tokens), with path, lang, exclude, kind (repeatable), limit and offset."""
    what = request.path.rstrip("/").rsplit("/", 1)[-1]
    params = await request_params(request, service.config.max_body_bytes)
    subject = SYMBOL_SUBJECTS[what]
    arg = params.get(subject)
    if what == "map":
        arg = 1024 if arg in (None, "") else arg
    elif arg is None or arg == "":
        raise ApiError(400, f"{subject} is required" + (
            ": the name of a function, class or variable" if subject == "name" else
            ": a file or folder as the index stores it"))
    options: dict[str, Any] = {"filters": parse_filters(params)}
    if what != "map":
        kinds = request.args.getlist("kind") if request.method != "POST" else params.get("kind")
        options.update(kinds=kinds or None, limit=params.get("limit") or None,
                       offset=params.get("offset") or 0)
    return Response.json(await service.symbols(what, arg, options))


@api_view(["GET", "HEAD"])
async def status_view(service: RagdbService, request: Any, send: Any) -> Any:
    return Response.json(await service.status())


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode("utf-8")


@api_view(["POST"])
async def answer_view(service: RagdbService, request: Any, send: Any) -> Any:
    params = await request_params(request, service.config.max_body_bytes)
    question = parse_question(params.get("q"))
    k = parse_k(params.get("k"), DEFAULT_ANSWER_K)
    mode = parse_mode(params.get("mode"))
    stream = parse_flag(params.get("stream"))
    style = parse_style(params.get("style"))
    filters = parse_filters(params)
    started = time.perf_counter()
    found = await service.search(question, k, mode, filters, remember=False)  # writes nothing
    hits, rerank = found[0], found[4]
    search_ms = (time.perf_counter() - started) * 1000
    if not stream:
        answer = await service.answer(question, k, mode, hits, search_ms, style=style,
                                      filters=filters)
        answer.timings.update(rerank or {})  # what reranking did, in the search worker
        return Response.json(answer_json(answer, service.chunk_url))
    await stream_answer(service, request, send, question, k, mode, hits, search_ms, style,
                        rerank, filters)
    return None


async def stream_answer(service: RagdbService, request: Any, send: Any, question: str, k: int,
                        mode: Mode, hits: list[Hit], search_ms: float,
                        style: Style = Style.auto,
                        rerank: dict[str, Any] | None = None,
                        filters: Filters = NO_FILTERS) -> None:
    """Server-sent events: `sources`, then `token`s as they are generated, then `done` (the
    whole JSON answer) or `error`. Generation runs in a worker thread; tokens cross to the
    event loop through a queue, and a client that goes away stops the generation."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    cancelled = threading.Event()

    def on_token(piece: str) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, ("token", {"text": piece}))

    async def generate() -> None:
        try:
            answer = await service.answer(question, k, mode, hits, search_ms, on_token, cancelled,
                                          style=style, filters=filters)
            answer.timings.update(rerank or {})  # what reranking did, in the search worker
            queue.put_nowait(("done", answer_json(answer, service.chunk_url)))
        except Cancelled:
            queue.put_nowait(("end", None))
        except RagdbError as exc:
            queue.put_nowait(("error", {"error": str(exc)}))
        except Exception as exc:  # noqa: BLE001 - reported to the client as an event
            traceback.print_exc()
            queue.put_nowait(("error", {"error": f"internal error: {type(exc).__name__}"}))

    async def watch_disconnect() -> None:
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                cancelled.set()
                queue.put_nowait(("end", None))
                return

    await send({
        "type": "http.response.start",
        "status": 200,
        "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ],
    })
    await send({"type": "http.response.body", "more_body": True, "body": _sse("sources", [
        {**source_json(rank, hit, service.chunk_url(hit.chunk_id)), "n": rank, "text": hit.text}
        for rank, hit in enumerate(hits, 1)
    ])})
    worker = asyncio.create_task(generate())
    watcher = asyncio.create_task(watch_disconnect())
    try:
        while True:
            event, data = await queue.get()
            if event == "end":
                break
            await send({"type": "http.response.body", "body": _sse(event, data),
                        "more_body": True})
            if event in ("done", "error"):
                break
    finally:
        watcher.cancel()
        if not worker.done():
            cancelled.set()
        await send({"type": "http.response.body", "body": b"", "more_body": False})


@cache
def _asset(name: str) -> str:
    return (_PACKAGE / name).read_text(encoding="utf-8")


async def ask_view(datasette: Any, request: Any) -> Any:
    if request.method not in ("GET", "HEAD"):
        return error_response(405, f"{request.method} is not allowed here; use GET",
                              {"Allow": "GET"})
    service = service_for(datasette)
    template = datasette.jinja_env.from_string(_asset("templates/ragdb_ask.html"))
    body = await datasette.render_template(
        template,
        {
            "q": request.args.get("q") or "",
            "k": request.args.get("k") or str(DEFAULT_ANSWER_K),
            "max_k": MAX_K,
            "answer_url": datasette.urls.path(API_PREFIX + "answer"),
            "script_url": datasette.urls.path(API_PREFIX + "static/ask.js"),
            "database": service.db_name,
        },
        request=request,
        view_name="ragdb-ask",
    )
    # The page asks on load (?q=): no other site may frame it and have it ask.
    return Response.html(body, headers={"X-Frame-Options": "DENY",
                                        "Content-Security-Policy": "frame-ancestors 'none'"})


async def asset_view(request: Any) -> Any:
    name = request.url_vars["name"]
    if name != "ask.js":
        return error_response(404, f"no such ragdb asset: {name}")
    return Response(_asset("static/ask.js"), content_type="text/javascript; charset=utf-8",
                    headers={"Cache-Control": "no-cache"})


async def not_found_view(request: Any) -> Any:
    """A 404 that names the endpoints there are (it named a README section that is not
    there: they are in docs/serving.md, "The HTTP API")."""
    known = ", ".join(_ENDPOINTS)
    return error_response(
        404, f"no such ragdb endpoint: {request.path}; there are {known} "
             "(docs/serving.md, \"The HTTP API\")"
    )


ROUTES: list[tuple[str, Any]] = [
    (r"^/-/ragdb/search$", search_view),
    (r"^/-/ragdb/search-dataset$", search_dataset_view),
    (r"^/-/ragdb/answer$", answer_view),
    (r"^/-/ragdb/index$", index_view),
    (r"^/-/ragdb/status$", status_view),
    (r"^/-/ragdb/definition$", symbols_view),
    (r"^/-/ragdb/references$", symbols_view),
    (r"^/-/ragdb/callers$", symbols_view),
    (r"^/-/ragdb/callees$", symbols_view),
    (r"^/-/ragdb/outline$", symbols_view),
    (r"^/-/ragdb/map$", symbols_view),
    (r"^/-/ragdb/ask$", ask_view),
    (r"^/-/ragdb/static/(?P<name>[^/]+)$", asset_view),
    (r"^/-/ragdb(?:/.*)?$", not_found_view),
]
#: The endpoints a 404 names: the routes above but the assets and the catch-all.
_ENDPOINTS = [pattern.strip("^$") for pattern, _ in ROUTES if "(" not in pattern]
