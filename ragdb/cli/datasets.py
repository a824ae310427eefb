"""The dataset commands: `ragdb search-dataset` and `ragdb answer-dataset` run every question
of a file and write the assignment's JSON; `ragdb evaluate` scores a results file's recall."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer

from ragdb import evaluate as evaluation
from ragdb.cli.shared import (
    DbOption,
    ExcludeOption,
    LangOption,
    ModelOption,
    ModeOption,
    PathOption,
    Progress,
    RerankerOption,
    RerankOption,
    StyleOption,
    err,
    mode_warning,
    open_rag,
)
from ragdb.errors import RagdbError
from ragdb.generate.style import Style
from ragdb.input_rules import check_k, one_line
from ragdb.jsonfiles import check_not_input, check_writable, load_json, write_json_atomic
from ragdb.retrieve import Mode


def search_dataset_command(
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
    rerank: Optional[bool] = RerankOption,
    reranker: Optional[str] = RerankerOption,
    db: Optional[str] = DbOption,
) -> None:
    """Search every question of a dataset and save the results in the assignment's format."""
    from ragdb.schemas import RagDataset
    from ragdb.retrieve import Filters

    check_k(k, high=evaluation.MAX_K)
    filters = Filters.of(path, lang, exclude)
    dataset = load_json(dataset_path, RagDataset, "dataset")
    out = save_directory / dataset_path.name
    check_not_input(out, dataset_path, "--save_directory")
    check_writable(out)
    rag = open_rag(db, rerank=rerank, reranker=reranker)
    started = time.perf_counter()
    results = rag.search_dataset(dataset, k, mode, filters)
    mode_warning(rag, mode)
    write_json_atomic(out, results)
    reranked = (f" (reranking {rag.last_rerank['rerank_ms'] / 1000:.2f} s)"
                if rag.last_rerank is not None else "")
    typer.echo(
        f"{len(dataset.rag_questions)} questions searched in "
        f"{time.perf_counter() - started:.2f} s{reranked}; wrote {one_line(str(out))}"
    )


def evaluate_command(
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
            err(f"invalid: {one_line(problem)}")
        raise RagdbError(f"the results file is invalid ({len(report.problems)} problems)")


def answer_dataset_command(
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
    rag = open_rag(db, model)
    rag.conn  # a missing or foreign index fails before any answer
    out = save_directory / student_search_results_path.name
    check_not_input(out, student_search_results_path, "--save_directory")
    check_writable(out)
    started = time.perf_counter()
    with Progress(sys.stderr.isatty(), "answering") as bar:
        def on_progress(done: int, total: int) -> None:
            if bar.bar is None:
                bar.total(total)
            bar.step(done - bar.count)
            bar.count = done

        answered = rag.answer_dataset(results, out, progress=on_progress, style=style)
    typer.echo(
        f"{len(answered.search_results)} questions answered in "
        f"{time.perf_counter() - started:.1f} s with {answered.model or 'no model'}; "
        f"wrote {one_line(str(out))}"
    )
