"""One question: `ragdb search` prints the places that answer it, `ragdb answer` the answer
citing them (streamed on a terminal) and saves its record."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ragdb.cli.shared import (
    DbOption,
    ExcludeOption,
    KOption,
    LangOption,
    ModelOption,
    ModeOption,
    PathOption,
    RerankerOption,
    RerankOption,
    StyleOption,
    err,
    mode_warning,
    open_rag,
)
from ragdb.db import answers_dir
from ragdb.errors import RagdbError
from ragdb.generate.style import Style
from ragdb.input_rules import MAX_K, check_k, check_question, one_line
from ragdb.jsonfiles import check_writable, write_json_atomic
from ragdb.retrieve import Mode
from ragdb.tokenize import analyse_terms, query_terms


def search_command(
    question: str = typer.Argument(..., help="What to look for."),
    k: int = KOption,
    mode: Mode = ModeOption,
    path: Optional[list[str]] = PathOption,
    lang: Optional[list[str]] = LangOption,
    exclude: Optional[list[str]] = ExcludeOption,
    as_json: bool = typer.Option(False, "--json", help="Print the sources as JSON."),
    with_text: bool = typer.Option(False, "--text", help="With --json: each source's text."),
    rerank: Optional[bool] = RerankOption,
    reranker: Optional[str] = RerankerOption,
    db: Optional[str] = DbOption,
) -> None:
    """Print the k most relevant places for a question: `path:start-end` (lines, as `answer`
    and grep print them) and the chunk's lines that match the question best."""
    from ragdb.retrieve import Filters

    check_k(k)
    rag = open_rag(db, rerank=rerank, reranker=reranker)
    hits = rag.search(question, k, mode, Filters.of(path, lang, exclude))
    mode_warning(rag, mode)
    coverage = rag.dense_coverage() if mode is not Mode.lexical else None
    if coverage is not None and coverage < 1:  # stderr: --json output stays one document
        if rag.index_running():
            err(f"the dense leg covers {coverage:.0%} of the chunks it will: vectors are "
                "still being computed by an index run (the lexical index is complete)")
        else:
            err(f"the dense leg covers {coverage:.0%} of the chunks it will: vectors are "
                "incomplete and no index run is computing them; `ragdb index` completes them")
    if not hits:  # why, on stderr with --json too (its `[]` says nothing of a bad filter)
        why = rag.why_nothing_found(question, Filters.of(path, lang, exclude))
        typer.echo("no sources found" + (f": {why}" if why else ""), err=True)
    if as_json:
        terms = query_terms(question)
        typer.echo(json.dumps([_source(h, with_text, terms) for h in hits], indent=2))
        return
    if not hits:
        return
    terms = query_terms(question)
    for rank, hit in enumerate(hits, 1):
        typer.echo(f"{rank:2}. {one_line(hit.file_path)}:{hit.start_line}-{hit.end_line}")
        for number, line in best_lines(hit.text, hit.start_line, terms):
            typer.echo(f"    {number}: {one_line(line)}")
        if hit.duplicates:
            typer.echo(f"    also in {len(hit.duplicates)} identical "
                       f"file{'s' if len(hit.duplicates) > 1 else ''}: "
                       + ", ".join(one_line(p) for p in hit.duplicates[:3])
                       + (", ..." if len(hit.duplicates) > 3 else ""))


#: Lines of a chunk `ragdb search` shows under its path, and the characters kept of each.
SNIPPET_LINES = 3
SNIPPET_WIDTH = 120


def best_lines(text: str, start_line: int, terms: list[str],
               n: int = SNIPPET_LINES) -> list[tuple[int, str]]:
    """The n lines of a chunk holding most of the question's distinct terms, as (line number,
    line) in file order: a listing shows where in the chunk the match is, as grep does.

    Terms are matched as the index analyses text (identifiers split), so `load_lora_adapter`
    matches a line that says loadLoraAdapter. A chunk no line of which matches (a dense hit)
    shows its first non-blank lines. Lines lose their common indentation and are cut to
    SNIPPET_WIDTH characters."""
    wanted = set(terms)
    lines = text.split("\n")  # as the index counts lines: start_line + i is line i's number
    scored = [(len(wanted.intersection(analyse_terms(line))), i)
              for i, line in enumerate(lines) if line.strip()]
    if any(score for score, _ in scored):
        scored = [(score, i) for score, i in scored if score]
        chosen = sorted(i for _, i in sorted(scored, key=lambda s: (-s[0], s[1]))[:n])
    else:
        chosen = [i for _, i in scored[:n]]
    shown = [lines[i].expandtabs(4).rstrip() for i in chosen]
    indent = min((len(line) - len(line.lstrip()) for line in shown), default=0)
    out = []
    for i, line in zip(chosen, shown):
        line = line[indent:]
        if len(line) > SNIPPET_WIDTH:
            line = line[:SNIPPET_WIDTH - 3] + "..."
        out.append((start_line + i, line))
    return out


def _source(hit: Any, with_text: bool, terms: list[str]) -> dict[str, Any]:
    """A hit for `ragdb search --json`: enough for a program to show path:line, and the lines
    the listing shows (`snippet`)."""
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
        "snippet": [{"line": number, "text": line}
                    for number, line in best_lines(hit.text, hit.start_line, terms)],
    }
    if with_text:
        out["text"] = hit.text
    return out


def answer_command(
    question: str = typer.Argument(
        ..., help="The question; - reads questions from stdin, one a line, and answers each "
        "as it comes, loading the model once (with --json: one JSON object a line)."),
    k: int = typer.Option(10, "--k", "-k", help=f"Sources to retrieve (0 to {MAX_K})."),
    mode: Mode = ModeOption,
    path: Optional[list[str]] = PathOption,
    lang: Optional[list[str]] = LangOption,
    exclude: Optional[list[str]] = ExcludeOption,
    model: Optional[str] = ModelOption,
    style: Style = StyleOption,
    save_directory: Optional[Path] = typer.Option(
        None, "--save_directory", "--save-directory",
        help="Where the StudentSearchResultsAndAnswer JSON is written [default: outputs/answers "
        "beside rag.db; ~/.cache/ragdb/outputs/answers where that cannot be written].",
        show_default=False,
    ),
    rerank: Optional[bool] = RerankOption,
    reranker: Optional[str] = RerankerOption,
    as_json: bool = typer.Option(
        False, "--json", help="Print the answer as one JSON object (the HTTP API's): the "
        "answer, its sources, the style tried and shown and why, the blocks shown with their "
        "path:start-end, and timings (first token, total, model load)."),
    db: Optional[str] = DbOption,
) -> None:
    """Answer a question from the retrieved sources, citing them as [n]."""
    from ragdb.answering import question_id
    from ragdb.retrieve import Filters

    check_k(k, low=0)
    batch = question == "-"
    if not batch:
        check_question(question, empty_ok=True)  # before its id (a hash of its UTF-8) is taken
    rag = open_rag(db, model, rerank=rerank, reranker=reranker)
    folder = save_directory if save_directory is not None else answers_dir(rag.path)
    check_writable(folder / f"answer-{question_id(question)}.json")  # fail before generating
    one = _OneAnswer(rag, folder, k, mode, Filters.of(path, lang, exclude), style, as_json)
    if not batch:
        one(question)
        return
    failed = 0
    for number, line in enumerate(sys.stdin.buffer, 1):
        text = line.decode("utf-8", errors="replace").rstrip("\r\n")
        if not text.strip():
            continue
        try:
            check_question(text, what=f"question {number}")
        except RagdbError as exc:  # one bad line does not end the run
            failed += 1
            err(str(exc))
            if as_json:
                typer.echo(json.dumps({"question": text, "error": str(exc)}))
            continue
        one(text, batch=True)
        sys.stdout.flush()  # a program feeding questions one by one reads each answer now
    if failed:
        raise typer.Exit(1)


class _OneAnswer:
    """One question answered, printed and saved: what `ragdb answer` does for its argument
    and for each line of stdin, with the model loaded once for all of them."""

    def __init__(self, rag: Any, folder: Path, k: int, mode: Mode, filters: Any,
                 style: Style, as_json: bool) -> None:
        self.rag, self.folder, self.k, self.mode = rag, folder, k, mode
        self.filters, self.style, self.as_json = filters, style, as_json
        self.warned = False

    def __call__(self, question: str, batch: bool = False) -> None:
        from ragdb.answering import answer_json, answer_record, question_id

        out = self.folder / f"answer-{question_id(question)}.json"
        stream = sys.stdout.isatty() and not self.as_json
        streamed: list[str] = []

        def on_token(piece: str) -> None:
            streamed.append(piece)
            typer.echo(piece, nl=False)

        if batch and not self.as_json:
            typer.echo(f"> {one_line(question)}\n")
        answer = self.rag.answer(
            question, self.k, self.mode, on_token=on_token if stream else None,
            style=self.style, filters=self.filters,
        )
        if self.k and not self.warned:
            mode_warning(self.rag, self.mode)
            self.warned = True
        why = None if answer.hits or not self.k else self.rag.why_nothing_found(
            question, self.filters)
        if self.as_json:
            shown = answer_json(answer, lambda _chunk: None)
            typer.echo(json.dumps(shown) if batch else json.dumps(shown, indent=2))
            if why:  # stderr: the JSON stays one document
                err(why)
        elif not answer.hits:
            typer.echo(answer.text)
            if why:
                err(why)
        else:
            if stream:
                typer.echo("\n")
            if stream and "".join(streamed) != answer.text:
                # The written answer gave way to the blocks after some of it was shown.
                why = answer.fallback_reason or "too little of it passed the check"
                typer.echo(f"The written answer is not shown ({one_line(why)}); the blocks "
                           "of the sources alone instead:\n")
                typer.echo(answer.text)
            typer.echo(answer.text if not stream else "")
            typer.echo("\nSources:")
            for number, source in enumerate(answer.prompt_sources, 1):
                mark = "*" if number in answer.cited else " "
                typer.echo(f"{mark}[{number}] {one_line(source.file_path)}:"
                           f"{source.start_line}-{source.end_line}")
            if batch:
                typer.echo("")
        if answer.check is not None:
            err(_check_summary(answer.check))
        write_json_atomic(out, answer_record(answer))
        typer.echo(f"saved {one_line(str(out))}", err=True)


def _check_summary(check: dict[str, Any]) -> str:
    """One line on stderr: what the claim check of a written answer kept and dropped."""
    dropped = check.get("dropped") or []
    if check.get("fallback") and not check.get("sentences"):
        # Nothing was written to check: the model's endpoint failed (generate/remote.py).
        why = check.get("fallback_reason") or "nothing was written"
        return f"no written answer ({one_line(why)}): the blocks of the sources alone"
    line = (f"checked {check.get('sentences', 0)} written sentences against their sources: "
            f"{check.get('kept', 0)} kept, {len(dropped)} dropped")
    if dropped:
        line += f" (first: {dropped[0]['reason']})"
    if check.get("recited"):
        line += f"; {len(check['recited'])} cited to the given source that says it"
    if check.get("evidence_from"):
        line += "; followed by the blocks it was written from"
    if check.get("stopped_at_time_limit"):
        line += "; the writer was stopped at its time limit"
    if check.get("fallback"):
        why = check.get("fallback_reason") or "too little survived"
        line += f"; the written answer was not shown ({why}): the blocks alone instead"
    return line
