"""The `ragdb` command: a thin layer over the library that turns every failure into one line."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import apsw
import click
import typer

from ragdb import evaluate as evaluation
from ragdb.db import location
from ragdb.errors import RagdbError
from ragdb.generate.styles import Style
from ragdb.indexing import MAX_CHUNK_SIZE
from ragdb.walking import DEFAULT_EXCLUDE, DEFAULT_INCLUDE
from ragdb.jsonfiles import check_writable, load_json, write_json_atomic
from ragdb.retrieve import MAX_K, Mode, check_k, check_question

if TYPE_CHECKING:  # pragma: no cover
    from ragdb.database import RagDB

app = typer.Typer(
    help="Ask questions about a codebase: answers with the exact places they come from.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

MAX_SKIPPED_SHOWN = 20

DbOption = typer.Option(
    None, "--db", help="rag.db to use, or a PostgreSQL database as postgresql://user@host/db "
    "[default: $RAGDB_DB or data/processed/rag.db]."
)


def _rag(db: Optional[str], model: Optional[str] = None) -> "RagDB":
    from ragdb.database import RagDB

    return RagDB(location(db), model=model, warn=_err)


def _err(message: str) -> None:
    typer.echo(f"ragdb: {message}", err=True)


@app.command()
def index(
    paths: list[Path] = typer.Argument(
        None, help="Files or folders to index [default: the roots rag.db records, else data/raw]."
    ),
    db: Optional[str] = DbOption,
    max_chunk_size: Optional[int] = typer.Option(
        None,
        "--max_chunk_size",
        "--max-chunk-size",
        help=f"Largest chunk in characters (at most {MAX_CHUNK_SIZE}) [default: the size "
        f"rag.db was built with, else {MAX_CHUNK_SIZE}].",
        show_default=False,
    ),
    include: list[str] = typer.Option(
        list(DEFAULT_INCLUDE), "--include",
        help="Also index files this glob names, even those the default rule leaves out "
        "(lockfiles, generated, minified, .env and keys; repeatable). A glob with a '/' "
        "matches the path under the root, else the file name.",
    ),
    exclude: list[str] = typer.Option(
        list(DEFAULT_EXCLUDE), "--exclude",
        help="Leave out files this glob names, unless an --include names them too "
        "(repeatable; --exclude '*' --include '*.go': only Go).",
    ),
    no_ignore: bool = typer.Option(
        False, "--no-ignore", help="Index files that .gitignore or .git/info/exclude leave out."
    ),
    hidden: bool = typer.Option(
        False, "--hidden", help="Walk into folders whose name starts with a dot."
    ),
    watch: bool = typer.Option(
        False, "--watch", help="After indexing, re-index on every change until Ctrl-C."
    ),
    vectors: bool = typer.Option(
        True, "--vectors/--no-vectors", help="Embed chunks for dense and hybrid search."
    ),
    embedder: Optional[str] = typer.Option(
        None, "--embedder",
        help="Embedding model: a local OpenVINO IR or ONNX folder, or a hub id "
        "[default: all-MiniLM-L6-v2 from the installed package].",
    ),
    into_existing: bool = typer.Option(
        False, "--into-existing",
        help="Add ragdb's tables to an existing SQLite database that is not a ragdb index "
        "(refused otherwise, so another application's database is never changed).",
    ),
    follow_symlinks: bool = typer.Option(
        False, "--follow-symlinks",
        help="Follow symlinks (files and folders) whose target lies outside the indexed root "
        "[default: skip them and count them as skipped].",
    ),
) -> None:
    """Index files into rag.db: only new or changed files are re-chunked."""
    rag = _rag(db)
    roots: list[Path] = list(paths or [])
    walk_given = bool(include) or bool(exclude) or no_ignore or hidden or follow_symlinks
    recorded: list[Path] = []
    if not roots:
        try:
            recorded = [Path(r.path) for r in rag.roots()] if rag.exists() else []
        except RagdbError:  # not an index yet (or a foreign file: index() says so)
            recorded = []
        roots = recorded or [Path("data/raw")]
    options: dict[str, Any] = dict(
        max_chunk_size=max_chunk_size, include=include, exclude=exclude, ignore=not no_ignore,
        hidden=hidden,
        follow_symlinks=follow_symlinks, vectors=vectors, embedder_name=embedder,
        into_existing=into_existing,
    )
    # Every recorded root, each walked as its own last run was, unless told otherwise.
    own_options = bool(recorded) and not walk_given
    _index_once(rag, [] if own_options else roots, options)
    if watch:
        from ragdb.watch import watch_roots

        watch_roots(rag, roots, options, report=_index_summary, recorded=own_options)


def _index_once(rag: "RagDB", roots: list[Path], options: dict[str, Any]) -> None:
    show_bar = sys.stderr.isatty()
    with _progress(show_bar, "indexing") as files_bar, \
            _progress(show_bar, "embedding", "chunks") as bar:

        def on_embedded(count: int, total: int) -> None:
            if bar.bar is None:
                bar.total(total)
            bar.step(count - bar.count)
            bar.count = count

        result = rag.index(
            roots, progress=files_bar.step, on_files=files_bar.total, on_embedded=on_embedded,
            **options,
        )
    typer.echo(_index_summary(result))


def _index_summary(result: Any) -> str:
    """One line: what an index run did."""
    stats, vstats = result.stats, result.vectors
    vector_note = ""
    if vstats is not None:
        vector_note = (
            f"; {vstats.embedded} chunks embedded, {vstats.total} vectors"
            f" ({vstats.seconds:.1f} s"
            + (f", {vstats.windows} windows, {vstats.windows_per_s:.0f}/s" if vstats.windows
               else "")
            + ")"
        )
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(stats.skipped.items()))
    for path, why in stats.skipped_paths[:MAX_SKIPPED_SHOWN]:
        _err(f"skipped {_shown(path)}: {why}")
    if len(stats.skipped_paths) > MAX_SKIPPED_SHOWN:
        _err(f"... and {len(stats.skipped_paths) - MAX_SKIPPED_SHOWN} more skipped")
    for path in stats.fallback_paths[:MAX_SKIPPED_SHOWN]:
        _err(f"parse fallback {_shown(path)}: its syntax tree was mostly errors, cut as text")
    if len(stats.fallback_paths) > MAX_SKIPPED_SHOWN:
        _err(f"... and {len(stats.fallback_paths) - MAX_SKIPPED_SHOWN} more parse fallbacks")
    fallbacks = (f"; {stats.parse_fallbacks} parse fallbacks (cut as text)"
                 if stats.parse_fallbacks else "")
    languages = ", ".join(f"{lang} {n}" for lang, n in sorted(
        stats.languages.items(), key=lambda item: (-item[1], item[0])))
    return (
        f"{stats.files_seen} files: {stats.files_indexed} indexed, {stats.files_unchanged} "
        f"unchanged, {stats.files_removed} removed, {stats.files_skipped} skipped"
        + (f" ({skipped})" if skipped else "")
        + (f"; by language: {languages}" if languages else "")
        + f"; {stats.chunks_written} chunks written, {stats.chunks_total} in the index"
        + (" (full rebuild)" if stats.full_rebuild else "")
        + fallbacks
        + f"; {stats.seconds:.1f} s"
        + vector_note
    )


@app.command("roots")
def roots_command(
    remove: Optional[str] = typer.Option(
        None, "--remove", help="Delete this root's files, chunks and vectors from rag.db.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the roots as JSON."),
    db: Optional[str] = DbOption,
) -> None:
    """List the indexed roots with their file and chunk counts, or remove one."""
    rag = _rag(db)
    if remove is not None:
        removed = rag.remove_root(remove)
        typer.echo(f"removed {remove}: {removed} files")
        return
    roots = rag.roots()
    if as_json:
        typer.echo(json.dumps([dataclasses.asdict(r) for r in roots], indent=2))
        return
    if not roots:
        typer.echo("no roots indexed", err=True)
    for root in roots:
        typer.echo(f"{_shown(root.path)}  {root.files} files, {root.chunks} chunks, "
                   f"last indexed {root.last_indexed_at}")


@app.command("copy")
def copy_command(
    source: str = typer.Argument(..., help="The index to copy: a rag.db or a PostgreSQL URL."),
    target: str = typer.Argument(
        ..., help="Where to copy it: a PostgreSQL URL (postgresql://...) or a new rag.db."),
    replace: bool = typer.Option(
        False, "--replace", help="Replace the index the target already holds."),
    lexical: str = typer.Option(
        "postings", "--lexical",
        help="PostgreSQL's lexical leg: postings (exact BM25, as rag.db) or pg_textsearch."),
    vectors: str = typer.Option(
        "exact", "--vectors", help="PostgreSQL's vector leg: exact (as rag.db) or hnsw."),
    ef_search: int = typer.Option(
        400, "--ef-search", help="With --vectors hnsw: the HNSW scan's candidates (1-1000)."),
) -> None:
    """Copy a whole index from a rag.db to a PostgreSQL database, or back into a rag.db."""
    from ragdb.copying import copy_index, masked
    from ragdb.pg_search import PgRanking

    ranking = PgRanking(lexical, vectors, ef_search)
    quiet = not sys.stderr.isatty()
    stats = copy_index(source, target, replace=replace, ranking=ranking,
                       progress=(lambda _m: None) if quiet else (lambda m: _err(m)))
    typer.echo(f"copied {masked(source)} -> {masked(target)}: {stats.files} files, "
               f"{stats.chunks} chunks, {stats.vectors} vectors"
               + (f", {stats.postings} postings" if stats.postings else "")
               + (f" ({stats.rebuilt_fts} chunks' analysed text made again)"
                  if stats.rebuilt_fts else "")
               + f"; {stats.seconds:.1f} s")


@app.command("legs")
def legs_command(
    lexical: Optional[str] = typer.Option(
        None, "--lexical",
        help="The lexical leg: postings (exact BM25, as rag.db) or pg_textsearch."),
    vectors: Optional[str] = typer.Option(
        None, "--vectors", help="The vector leg: exact (as rag.db) or hnsw."),
    ef_search: Optional[int] = typer.Option(
        None, "--ef-search", help="With --vectors hnsw: the HNSW scan's candidates (1-1000)."),
    db: Optional[str] = DbOption,
) -> None:
    """Show or choose the legs a PostgreSQL index ranks with (builds or drops their indexes)."""
    rag = _rag(db)
    if lexical is None and vectors is None and ef_search is None:
        legs = rag.legs()
        if legs is None:
            typer.echo("rag.db ranks with FTS5 (exact BM25) and sqlite-vec (exact vectors)")
            return
    else:
        legs = rag.set_legs(lexical, vectors, ef_search)
    typer.echo(f"lexical {legs.lexical}, vectors {legs.vectors}"
               + (f" (ef_search {legs.ef_search})" if legs.vectors == "hnsw" else ""))


class _Progress:
    """A progress bar on a terminal, silence elsewhere (logs and pipes stay clean)."""

    def __init__(self, enabled: bool, label: str, unit: str = "") -> None:
        self.enabled = enabled
        self.label = label
        self.unit = unit  # shown as a rate ("12.3 chunks/s") beside the ETA when set
        self.bar: Any = None
        self.count = 0
        self.started = time.perf_counter()

    def total(self, n: int) -> None:
        if self.enabled and n:
            self.started = time.perf_counter()
            self.bar = click.progressbar(
                length=n, label=self.label, file=sys.stderr, show_eta=True,
                item_show_func=self._rate if self.unit else None,
            )
            self.bar.__enter__()

    def _rate(self, _item: object) -> str:
        elapsed = time.perf_counter() - self.started
        done = self.bar.pos if self.bar is not None else 0
        return f"{done / elapsed:.1f} {self.unit}/s" if elapsed > 0 and done else ""

    def step(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n, current_item=self.unit or None)

    def __enter__(self) -> "_Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _progress(enabled: bool, label: str, unit: str = "") -> _Progress:
    return _Progress(enabled, label, unit)


KOption = typer.Option(5, "--k", "-k", help=f"How many sources (1 to {MAX_K}).")
ModeOption = typer.Option(
    Mode.hybrid, "--mode", help="hybrid (BM25 and vectors fused), lexical (BM25) or dense."
)
PathOption = typer.Option(
    None, "--path",
    help="Only files whose path matches this GLOB, whole or after a '/' (repeatable).",
)
LangOption = typer.Option(
    None, "--lang", help="Only files in this language, e.g. go, rust, python (repeatable)."
)
ExcludeOption = typer.Option(
    None, "--exclude",
    help="Leave out files whose path matches this GLOB, whole or after a '/' (repeatable).",
)


def _mode_warning(rag: "RagDB", mode: Mode) -> None:
    """On stderr, what this mode cannot find in this index (dense search without code vectors)."""
    warning = rag.mode_warning(mode)
    if warning:
        _err(f"warning: {warning}")


@app.command("search")
def search_command(
    question: str = typer.Argument(..., help="What to look for."),
    k: int = KOption,
    mode: Mode = ModeOption,
    path: Optional[list[str]] = PathOption,
    lang: Optional[list[str]] = LangOption,
    exclude: Optional[list[str]] = ExcludeOption,
    as_json: bool = typer.Option(False, "--json", help="Print the sources as JSON."),
    with_text: bool = typer.Option(False, "--text", help="With --json: each source's text."),
    db: Optional[str] = DbOption,
) -> None:
    """Print the k most relevant places for a question: `path [first:last]` and a preview."""
    from ragdb.retrieve import Filters

    check_k(k)
    rag = _rag(db)
    hits = rag.search(question, k, mode, Filters.of(path, lang, exclude))
    _mode_warning(rag, mode)
    coverage = rag.dense_coverage() if mode is not Mode.lexical else None
    if coverage is not None and coverage < 1:  # stderr: --json output stays one document
        if rag.index_running():
            _err(f"the dense leg covers {coverage:.0%} of the chunks it will: vectors are "
                 "still being computed by an index run (the lexical index is complete)")
        else:
            _err(f"the dense leg covers {coverage:.0%} of the chunks it will: vectors are "
                 "incomplete and no index run is computing them; `ragdb index` completes them")
    if as_json:
        typer.echo(json.dumps([_source(h, with_text) for h in hits], indent=2))
        return
    if not hits:
        typer.echo("no sources found", err=True)
        return
    for rank, hit in enumerate(hits, 1):
        typer.echo(f"{rank:2}. {_shown(hit.file_path)} [{hit.first}:{hit.last}]  {hit.preview}")
        if hit.duplicates:
            typer.echo(f"    also in {len(hit.duplicates)} identical "
                       f"file{'s' if len(hit.duplicates) > 1 else ''}: "
                       + ", ".join(_shown(p) for p in hit.duplicates[:3])
                       + (", ..." if len(hit.duplicates) > 3 else ""))


def _source(hit: Any, with_text: bool) -> dict[str, Any]:
    """A hit for `ragdb search --json`: enough for a program to show path:line."""
    out = {
        "file_path": hit.file_path,
        "first_character_index": hit.first,
        "last_character_index": hit.last,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "language": hit.language,
        "kind": hit.kind,
        "score": hit.score,
        "duplicates": list(hit.duplicates),
    }
    if with_text:
        out["text"] = hit.text
    return out


def _shown(path: str) -> str:
    """A path on one line: control characters (a newline in a file name) escaped."""
    if path.isprintable():
        return path
    return json.dumps(path)[1:-1]


def _search_dataset(
    dataset_path: Path = typer.Option(
        ..., "--dataset_path", "--dataset-path", help="Questions (RagDataset JSON)."
    ),
    k: int = typer.Option(10, "--k", "-k", help=f"Sources per question (1 to {evaluation.MAX_K})."),
    save_directory: Path = typer.Option(
        Path("data/outputs/search_results"),
        "--save_directory",
        "--save-directory",
        help="Where D/<dataset file name> is written.",
    ),
    mode: Mode = ModeOption,
    path: Optional[list[str]] = PathOption,
    lang: Optional[list[str]] = LangOption,
    exclude: Optional[list[str]] = ExcludeOption,
    db: Optional[str] = DbOption,
) -> None:
    """Search every question of a dataset and save the results in the assignment's format."""
    from ragdb.schemas import RagDataset
    from ragdb.retrieve import Filters

    check_k(k, high=evaluation.MAX_K)
    filters = Filters.of(path, lang, exclude)
    dataset = load_json(dataset_path, RagDataset, "dataset")
    rag = _rag(db)
    started = time.perf_counter()
    results = rag.search_dataset(dataset, k, mode, filters)
    _mode_warning(rag, mode)
    out = save_directory / dataset_path.name
    check_writable(out)
    write_json_atomic(out, results)
    typer.echo(
        f"{len(dataset.rag_questions)} questions searched in "
        f"{time.perf_counter() - started:.2f} s; wrote {_shown(str(out))}"
    )


app.command("search-dataset")(_search_dataset)
app.command("search_dataset", hidden=True)(_search_dataset)


def _evaluate(
    student_search_results_path: Path = typer.Option(
        ...,
        "--student_search_results_path",
        "--student-search-results-path",
        help="A search-dataset output.",
    ),
    dataset_path: Path = typer.Option(
        ..., "--dataset_path", "--dataset-path", help="The dataset with reference sources."
    ),
) -> None:
    """Recall@1/3/5/10 of a results file against a dataset's reference sources."""
    from ragdb.schemas import RagDataset, StudentSearchResults

    results = load_json(student_search_results_path, StudentSearchResults, "results file")
    dataset = load_json(dataset_path, RagDataset, "dataset")
    if not any(q.sources for q in dataset.rag_questions):
        raise RagdbError(f"dataset {dataset_path} has no reference sources to evaluate against")
    report = evaluation.evaluate(results, dataset)
    typer.echo(f"questions: {report.questions} ({report.answered} in the results file)")
    for k, value in report.recall.items():
        typer.echo(f"recall@{k}: {value:.3f}")
    if report.problems:
        for problem in report.problems[:20]:
            _err(f"invalid: {_shown(problem)}")
        raise RagdbError(f"the results file is invalid ({len(report.problems)} problems)")


app.command("evaluate")(_evaluate)


StyleOption = typer.Option(
    Style.auto, "--style",
    help="extractive: the answer is passages of the sources, each cited, no model; generate: "
    "the model writes it from the chosen passages and every sentence is checked against the "
    "source it cites; auto (default): extractive when the model that would answer is the "
    "small offline one, else generate.",
)
ModelOption = typer.Option(
    None, "--model",
    help="Qwen/Qwen3-0.6B (default; OpenVINO IR fetched once into data/models), 'writer' for "
    "Qwen2.5-Coder-1.5B (`ragdb models install writer`; the default where the hub cannot be "
    "reached), a local OpenVINO IR folder, a .gguf file, or 'offline' for the bundled "
    "SmolLM2-135M.",
)


@app.command("answer")
def answer_command(
    question: str = typer.Argument(..., help="The question."),
    k: int = typer.Option(10, "--k", "-k", help=f"Sources to retrieve (0 to {MAX_K})."),
    mode: Mode = ModeOption,
    path: Optional[list[str]] = PathOption,
    lang: Optional[list[str]] = LangOption,
    exclude: Optional[list[str]] = ExcludeOption,
    model: Optional[str] = ModelOption,
    style: Style = StyleOption,
    save_directory: Path = typer.Option(
        Path("data/outputs/answers"), "--save_directory", "--save-directory",
        help="Where the StudentSearchResultsAndAnswer JSON is written.",
    ),
    db: Optional[str] = DbOption,
) -> None:
    """Answer a question from the retrieved sources, citing them as [n]."""
    from ragdb.answering import answer_record, question_id
    from ragdb.retrieve import Filters

    check_k(k, low=0)
    check_question(question, empty_ok=True)  # before its id (a hash of its UTF-8) is taken
    out = save_directory / f"answer-{question_id(question)}.json"
    check_writable(out)  # before generating: a bad --save_directory fails at once
    stream = sys.stdout.isatty()
    streamed: list[str] = []

    def on_token(piece: str) -> None:
        streamed.append(piece)
        typer.echo(piece, nl=False)

    filters = Filters.of(path, lang, exclude)
    rag = _rag(db, model)
    answer = rag.answer(
        question, k, mode, on_token=on_token if stream else None, style=style,
        filters=filters,
    )
    if k:
        _mode_warning(rag, mode)
    if not answer.hits:
        typer.echo(answer.text)
    else:
        if stream:
            typer.echo("\n")
        if stream and "".join(streamed) != answer.text:
            # Too little of the written answer passed the check after some of it was shown.
            typer.echo("Too little of the written answer could be checked against its "
                       "sources; passages of the sources instead:\n")
            typer.echo(answer.text)
        typer.echo(answer.text if not stream else "")
        typer.echo("\nSources:")
        for number, source in enumerate(answer.prompt_sources, 1):
            mark = "*" if number in answer.cited else " "
            typer.echo(f"{mark}[{number}] {_shown(source.file_path)}:"
                       f"{source.start_line}-{source.end_line}")
    if answer.check is not None:
        _err(_check_summary(answer.check))
    write_json_atomic(out, answer_record(answer))
    typer.echo(f"saved {_shown(str(out))}", err=True)


def _check_summary(check: dict[str, Any]) -> str:
    """One line on stderr: what the claim check of a written answer kept and dropped."""
    dropped = check.get("dropped") or []
    line = (f"checked {check.get('sentences', 0)} written sentences against their sources: "
            f"{check.get('kept', 0)} kept, {len(dropped)} dropped")
    if dropped:
        line += f" (first: {dropped[0]['reason']})"
    if check.get("replaced_code"):
        line += f"; {len(check['replaced_code'])} code replaced by the source's own lines"
    if check.get("recited"):
        line += f"; {len(check['recited'])} cited to the given source that says it"
    if check.get("completed_with_code_of"):
        line += "; followed by the code lines it was read from"
    if check.get("fallback"):
        line += "; too little survived, so the answer is passages of the sources"
    return line


def _answer_dataset(
    student_search_results_path: Path = typer.Option(
        ..., "--student_search_results_path", "--student-search-results-path",
        help="A search-dataset output whose sources are reused.",
    ),
    save_directory: Path = typer.Option(
        Path("data/outputs/answers"), "--save_directory", "--save-directory",
        help="Where D/<input file name> is written.",
    ),
    model: Optional[str] = ModelOption,
    style: Style = StyleOption,
    db: Optional[str] = DbOption,
) -> None:
    """Answer every question of a search-dataset output; a rerun resumes where it stopped."""
    from ragdb.schemas import StudentSearchResults

    results = load_json(student_search_results_path, StudentSearchResults, "results file")
    rag = _rag(db, model)
    rag.conn  # a missing or foreign index fails before any answer
    out = save_directory / student_search_results_path.name
    check_writable(out)
    started = time.perf_counter()
    with _progress(sys.stderr.isatty(), "answering") as bar:
        def on_progress(done: int, total: int) -> None:
            if bar.bar is None:
                bar.total(total)
            bar.step(done - bar.count)
            bar.count = done

        answered = rag.answer_dataset(results, out, progress=on_progress, style=style)
    typer.echo(
        f"{len(answered.search_results)} questions answered in "
        f"{time.perf_counter() - started:.1f} s with {answered.model or 'no model'}; "
        f"wrote {_shown(str(out))}"
    )


app.command("answer-dataset")(_answer_dataset)
app.command("answer_dataset", hidden=True)(_answer_dataset)


models_app = typer.Typer(
    help="Answer models on this machine: list them, install the offline writer.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)
app.add_typer(models_app, name="models")


@models_app.command("list")
def models_list(
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON."),
) -> None:
    """What answer models are installed, where, and how to get the missing ones."""
    from ragdb.generate.models import model_inventory
    from ragdb.resources import models_dir

    inventory = model_inventory(models_dir())
    if as_json:
        typer.echo(json.dumps(inventory, indent=2))
        return
    for item in inventory:
        where = f"  {_shown(item['path'])}" if item["path"] else ""
        typer.echo(f"{item['name']}: {item['state']}{where}")
        if item.get("hint"):
            typer.echo(f"  {item['hint']}")


@models_app.command("install")
def models_install(
    name: str = typer.Argument(..., help="The model to install: writer."),
    force: bool = typer.Option(False, "--force", help="Assemble and re-quantise again."),
) -> None:
    """Install the offline writer (Qwen2.5-Coder-1.5B-Instruct) from its installed parts:
    assembled, SHA-256 checked and re-quantised once into data/models (or $RAGDB_MODELS_DIR)."""
    from ragdb.generate.install import WRITER_NAME, install_writer
    from ragdb.resources import models_dir

    if name.strip().lower() not in ("writer", "qwen2.5-coder", "qwen2.5-coder-1.5b"):
        raise RagdbError(f"unknown model {name!r}: only 'writer' can be installed")
    folder = models_dir()
    bars: dict[str, _Progress] = {}
    shown: dict[str, int] = {}
    tty = sys.stderr.isatty()

    def progress(stage: str, done: int, total: int) -> None:
        if tty:
            bar = bars.get(stage)
            if bar is None:
                for other in bars.values():
                    other.__exit__()
                bar = bars[stage] = _Progress(True, stage)
                bar.total(total)
            bar.step(done - bar.count)
            bar.count = done
            return
        quarter = 4 * done // max(1, total)
        if shown.get(stage, -1) < quarter:
            shown[stage] = quarter
            _err(f"{stage}: {25 * quarter}%")

    try:
        result = install_writer(folder, progress=progress, force=force)
    except KeyboardInterrupt:
        _err("interrupted; nothing was installed")
        raise typer.Exit(130) from None
    finally:
        for bar in bars.values():
            bar.__exit__()
    if result.already:
        typer.echo(f"{WRITER_NAME} is already installed: {_shown(str(result.path))} "
                   "(--force installs it again)")
        return
    typer.echo(f"installed {WRITER_NAME}: {_shown(str(result.path))} "
               f"({result.bytes / 1e9:.2f} GB, {result.seconds:.0f} s); "
               "`ragdb answer` uses it where the model hub cannot be reached, "
               "or with --model writer")


INTERRUPTED = "interrupted; rag.db keeps its last complete index"


@app.command("serve")
def serve_command(
    port: int = typer.Option(8001, "--port", help="TCP port."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Interface to bind (loopback unless told otherwise)."
    ),
    model: Optional[str] = ModelOption,
    db: Optional[str] = DbOption,
) -> None:
    """Serve rag.db in Datasette with ragdb's HTTP API and question page (/-/ragdb/ask)."""
    from ragdb.datasette_plugin.serve import serve

    serve(location(db), host=host, port=port, model=model)


@app.command("mcp")
def mcp_command(
    model: Optional[str] = ModelOption,
    db: Optional[str] = DbOption,
) -> None:
    """Run a Model Context Protocol server over stdio: tools search, answer, index, status."""
    from ragdb.mcp_server import run_stdio

    run_stdio(location(db), model=model)


def main(argv: Optional[list[str]] = None) -> None:
    """Run the CLI; any RagdbError, bad option or interrupt ends in one line and a non-zero exit."""
    command = typer.main.get_command(app)
    try:
        status = command.main(args=argv, prog_name="ragdb", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(0)
    except click.UsageError as exc:
        _err(exc.format_message().replace("\n", " "))
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        _err("interrupted")
        sys.exit(130)
    except click.ClickException as exc:
        _err(exc.format_message())
        sys.exit(exc.exit_code)
    except RagdbError as exc:
        _err(str(exc))
        sys.exit(1)
    except KeyboardInterrupt:
        _err(INTERRUPTED)
        sys.exit(130)
    except (apsw.CorruptError, apsw.NotADBError) as exc:
        _err(f"the database is corrupted ({exc}); delete it and run `ragdb index`")
        sys.exit(1)
    except apsw.FullError:
        _err("the disk is full: free some space and try again")
        sys.exit(1)
    except apsw.Error as exc:
        _err(f"database error: {exc}")
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(1)
    except MemoryError:
        _err("out of memory")
        sys.exit(1)
    except OSError as exc:
        where = f": {_shown(str(exc.filename))}" if exc.filename else ""
        _err(f"{exc.strerror or exc}{where}")
        sys.exit(1)
    # Typer turns Ctrl-C into an exit status of 130 that it returns in non-standalone mode.
    if status == 130:
        _err(INTERRUPTED)
        sys.exit(130)
    if isinstance(status, int) and status:
        sys.exit(status)
