"""The answer-bearing passage choice end to end: a small corpus of its own indexed by the real
`ragdb index`, answered by `ragdb answer --style extractive` and the RagDB front door, with
the real chunker and embedder. What a reader asked for comes whole, verbatim and cited."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragdb import RagDB
from tests.conftest import run_cli, write_corpus
from tests.test_extractive_choice import CPU_COUNT_RST, EXCEPTIONS_MD, GAUDI_MD

CORPUS = {
    "docs/getting_started/installation/gaudi.md": GAUDI_MD,
    "docs/index.rst": CPU_COUNT_RST,
    "docs/exceptions.md": EXCEPTIONS_MD,
    "docs/usage/quickstart.md": ("# Quickstart\n\nInstall vLLM with pip, then start a server "
                                 "with `vllm serve`.\n"),
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("choice")
    write_corpus(root / "data" / "raw" / "proj", CORPUS)
    result = run_cli("index", "data/raw", "--db", "rag.db", cwd=root)
    assert result.returncode == 0, result.stderr
    return root


@pytest.fixture(scope="module")
def rag(indexed: Path) -> Iterator[RagDB]:
    with RagDB(indexed / "rag.db", use_cache=False) as db:
        yield db


def test_cli_answers_a_list_question_with_the_whole_list(indexed: Path) -> None:
    result = run_cli("answer", "What are the system requirements for Intel Gaudi?",
                     "--style", "extractive", "--k", "3", "--db", "rag.db", cwd=indexed,
                     env={"HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr
    answer, _, sources = result.stdout.partition("\nSources:\n")
    assert "Requirements" in answer and "- Python: 3.10" in answer
    assert "- Intel Gaudi software version 1.18.0" in answer
    assert "gaudi.md" in sources and answer.rstrip().endswith("]")


def test_a_doctest_is_shown_as_code_from_an_indexed_rst_file(rag: RagDB) -> None:
    answer = rag.answer("What does psutil.cpu_count return on a system with 2 cores and "
                        "Hyper Threading?", k=3, style="extractive")
    assert "```\n>>> import psutil\n>>> psutil.cpu_count()\n4\n" in answer.text
    assert ">>> import psutil >>>" not in answer.text
    # Every line of code shown is a line of the cited source.
    cited = [s.text for s in answer.prompt_sources]
    for line in answer.text.split("```")[1].strip("\n").split("\n"):
        assert any(line.strip() in text for text in cited)


def test_a_table_row_comes_under_its_header_from_an_indexed_file(rag: RagDB) -> None:
    answer = rag.answer("What does Click do when the user presses Ctrl+C in standalone mode?",
                        k=3, style="extractive")
    lines = answer.text.split("\n")
    header = "How the command ends | Standalone mode | `standalone_mode=False`"
    assert header in lines
    row = next(line for line in lines if line.startswith("The user pressed `Ctrl+C`"))
    assert lines.index(header) < lines.index(row)
