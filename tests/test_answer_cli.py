"""`ragdb answer` and `answer-dataset` through the real CLI, where only the offline model exists:
the default answer is whole blocks of the sources, each cited, and no model is loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli


@pytest.fixture
def indexed(project: Path) -> Path:
    result = run_cli("index", "data/raw", "--db", "rag.db", cwd=project)
    assert result.returncode == 0, result.stderr
    return project


def _saved(project: Path, stderr: str) -> dict:  # type: ignore[type-arg]
    path = stderr.strip().splitlines()[-1].removeprefix("saved ")
    return json.loads((project / path).read_text())


def test_answer_is_blocks_of_the_sources_by_default(indexed: Path) -> None:
    result = run_cli("answer", "How do I load a LoRA adapter at run time?", "--k", "3",
                     "--db", "rag.db", cwd=indexed, env={"HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr
    answer, _, sources = result.stdout.partition("\nSources:\n")
    assert "/v1/load_lora_adapter" in answer
    assert answer.startswith("[1] `data/raw/proj/docs/features/lora.md:")  # its place first
    assert "*[1] data/raw/proj/docs/features/lora.md:" in sources
    saved = _saved(indexed, result.stderr)
    assert saved["model"].startswith("blocks")
    assert saved["search_results"][0]["answer"].strip() == answer.strip()
    assert "warning" not in result.stderr  # no "cannot get Qwen" when no model is used


def test_answer_with_no_source_or_k_zero_says_so(indexed: Path) -> None:
    for args, said in ((["zyzzyva quixotic", "--mode", "lexical"], "No sources were found"),
                       (["lora", "--k", "0"], "No sources were asked for (k = 0)")):
        result = run_cli("answer", *args, "--db", "rag.db", cwd=indexed)
        assert result.returncode == 0, result.stderr
        assert said in result.stdout


def test_unknown_style_is_one_line(indexed: Path) -> None:
    result = run_cli("answer", "lora", "--style", "poem", "--db", "rag.db", cwd=indexed)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "poem" in result.stderr


def test_answer_dataset_extractive_skips_sources_gone_from_the_index(indexed: Path) -> None:
    results = {"k": 2, "search_results": [{
        "question_id": "q1", "question": "How do I start a server?",
        "question_str": "How do I start a server?",
        "retrieved_sources": [
            {"file_path": "data/raw/proj/docs/gone.md", "first_character_index": 0,
             "last_character_index": 40},
            {"file_path": "data/raw/proj/docs/usage/quickstart.md",
             "first_character_index": 0, "last_character_index": 80},
        ]}]}
    (indexed / "results.json").write_text(json.dumps(results))

    def answer_dataset(out: str) -> str:
        result = run_cli("answer-dataset", "--student_search_results_path", "results.json",
                         "--save_directory", out, "--style", "extractive", "--db", "rag.db",
                         cwd=indexed)
        assert result.returncode == 0, result.stderr
        assert "no longer in the index" in result.stderr
        saved = json.loads((indexed / out / "results.json").read_text())
        assert saved["model"].startswith("blocks")
        return str(saved["search_results"][0]["answer"])

    answer = answer_dataset("out")
    # Cited by the rank it holds among the retrieved sources.
    assert answer.startswith("[2] `data/raw/proj/docs/usage/quickstart.md:")
    assert "vllm serve" in answer
    # The file changed on disk since indexing: its lines are not shown, the answer says why.
    quickstart = indexed / "data/raw/proj/docs/usage/quickstart.md"
    quickstart.write_text("# Replaced\n\nNothing about servers here any more.\n")
    answer = answer_dataset("out2")
    assert "`data/raw/proj/docs/usage/quickstart.md` changed since it was indexed" in answer
    assert "vllm serve" not in answer and "Nothing about servers" not in answer


def test_answer_keeps_html_tags_written_as_inline_code(tmp_path: Path) -> None:
    # Issue 37: the extractive answer showed "with the ` ` tag" for a README's `<br>`.
    readme = tmp_path / "data" / "raw" / "proj" / "README.md"
    readme.parent.mkdir(parents=True)
    readme.write_text("# Formatting\n\nYou can insert a line break with the `<br>` tag, and "
                      "fold a section with `<details>`.\n\n## Other\n\nNothing else.\n")
    assert run_cli("index", "data/raw", "--db", "rag.db", cwd=tmp_path).returncode == 0
    result = run_cli("answer", "How do I insert a line break?", "--k", "1", "--mode",
                     "lexical", "--db", "rag.db", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # The page is one short section with its subsection: shown whole (lines 3-7).
    assert ("[1] `data/raw/proj/README.md:3-7` (Formatting):\nYou can insert a line break "
            "with the `<br>` tag, and fold a section with `<details>`.\n") in result.stdout


def test_a_written_answer_of_the_offline_model_is_checked_before_it_is_shown(
        indexed: Path) -> None:
    # Issue 37: `--style generate` with only SmolLM2 printed its answer unchecked ("According
    # to [1], [2] and [3],,,,,,"). It is checked like any writer's: shown only where it passed,
    # else the blocks of the sources alone, and one line on stderr says why.
    result = run_cli("answer", "How do I load a LoRA adapter at run time?", "--k", "3",
                     "--style", "generate", "--model", "offline", "--db", "rag.db",
                     cwd=indexed, timeout=300)
    assert result.returncode == 0, result.stderr
    answer = result.stdout.partition("\nSources:\n")[0].strip()
    summary = [line for line in result.stderr.splitlines() if "written sentences" in line]
    assert len(summary) == 1, result.stderr
    assert ",,," not in answer and "According to" not in answer, answer
    # The blocks are shown verbatim, after the sentences that passed or alone.
    assert "[1] `data/raw/proj/docs/features/lora.md:" in answer, answer
    assert "/v1/load_lora_adapter" in answer, answer
    if "the written answer was not shown (" in summary[0]:
        assert answer.startswith("[1] `"), answer
        assert _saved(indexed, result.stderr)["model"].startswith("blocks")
    else:
        assert "followed by the blocks it was written from" in summary[0]
        assert not answer.startswith("[1] `"), answer
