"""The real CLI as a subprocess: the main flow, and one clear line for every bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import DATASETS, REPO, run_cli


def _one_line_error(result: object, pattern: str) -> None:
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.returncode != 0, stderr  # type: ignore[attr-defined]
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert re.search(pattern, lines[0], re.IGNORECASE), lines[0]


@pytest.fixture
def indexed(project: Path) -> Path:
    result = run_cli("index", "data/raw", "--db", "rag.db", cwd=project)
    assert result.returncode == 0, result.stderr
    return project


def test_index_reports_summary_and_stores_relative_paths(indexed: Path) -> None:
    again = run_cli("index", "data/raw", "--db", "rag.db", cwd=indexed)
    assert again.returncode == 0
    assert re.search(r"4 files: 0 indexed, 4 unchanged, 0 removed, 0 skipped", again.stdout)
    found = run_cli("search", "load_lora_adapter", "--db", "rag.db", "--json", cwd=indexed)
    sources = json.loads(found.stdout)
    assert sources[0]["file_path"] == "data/raw/proj/docs/features/lora.md"
    text = (indexed / sources[0]["file_path"]).read_text()
    span = text[sources[0]["first_character_index"]:sources[0]["last_character_index"]]
    assert "/v1/load_lora_adapter" in span


def test_search_prints_ranked_paths_with_line_ranges_and_best_lines(indexed: Path) -> None:
    """`path:start-end` as `answer` and grep print places, then the chunk's lines that match
    the question best, each with its line number in the file."""
    result = run_cli("search", "trust remote code", "--k", "2", "--mode", "lexical",
                     "--db", "rag.db", cwd=indexed)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    head = re.fullmatch(r" 1\. data/raw/proj/pkg/layers\.py:(\d+)-(\d+)", lines[0])
    assert head is not None, lines[0]
    start, end = int(head.group(1)), int(head.group(2))
    file_lines = (indexed / "data/raw/proj/pkg/layers.py").read_text().splitlines()
    assert 1 <= start <= end <= len(file_lines)
    snippet = [re.fullmatch(r"    (\d+): (.*)", line) for line in lines[1:4]]
    assert all(snippet), lines
    numbers = [int(m.group(1)) for m in snippet if m]
    assert numbers == sorted(numbers) and all(start <= n <= end for n in numbers)
    # The best lines, not the first: the definition and its comment (identifiers split).
    assert [file_lines[n - 1].strip() for n in numbers] == [
        "def trust_remote_code_default() -> bool:", "# Remote code is never trusted unless asked.",
    ]
    assert [m.group(2) for m in snippet if m] == [
        "def trust_remote_code_default() -> bool:",
        "    # Remote code is never trusted unless asked.",
    ]
    assert "[" not in lines[0]  # no character offsets in the listing
    found = json.loads(run_cli("search", "trust remote code", "--k", "2", "--mode", "lexical",
                               "--json", "--db", "rag.db", cwd=indexed).stdout)
    first = found[0]
    assert {"first_character_index", "last_character_index", "start_line", "end_line",
            "file_path", "score", "kind", "language", "duplicates"} <= set(first)
    assert [s["line"] for s in first["snippet"]] == numbers
    text = (indexed / first["file_path"]).read_text()
    span = text[first["first_character_index"]:first["last_character_index"]]
    assert "def trust_remote_code_default" in span
    assert text[:first["first_character_index"]].count("\n") + 1 == first["start_line"]


def test_ragdb_db_environment_variable(indexed: Path) -> None:
    result = run_cli("search", "scheduler prefill", cwd=indexed, env={"RAGDB_DB": "rag.db"})
    assert result.returncode == 0, result.stderr
    assert "notes.txt" in result.stdout


def test_skips_binary_and_undecodable_files(project: Path) -> None:
    raw = project / "data" / "raw" / "proj"
    (raw / "image.md").write_bytes(b"\x89PNG\x00\x00binary")
    (raw / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    result = run_cli("index", "data/raw", "--db", "rag.db", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "2 skipped (1 binary, 1 not UTF-8)" in result.stdout


def test_empty_query_says_so(indexed: Path) -> None:
    result = run_cli("search", "   ", "--db", "rag.db", cwd=indexed)
    _one_line_error(result, "empty")


def test_nonsense_query_finds_nothing_without_error(indexed: Path) -> None:
    result = run_cli("search", "?!?! ... ;;", "--db", "rag.db", cwd=indexed)
    assert result.returncode == 0
    assert "no sources found" in result.stderr
    zz = run_cli("search", "zzqxv wvvqz", "--db", "rag.db", "--json", cwd=indexed)
    assert json.loads(zz.stdout) == []


@pytest.mark.parametrize("k", ["0", "-3", "abc", "2.5", "1000000"])
def test_bad_k(indexed: Path, k: str) -> None:
    result = run_cli("search", "lora", "--k", k, "--db", "rag.db", cwd=indexed)
    _one_line_error(result, r"k")


def test_unknown_language_lists_the_index_languages(indexed: Path) -> None:
    """Issue 37, item 15: `--lang pyhton` said "no sources found" and exited 0."""
    for command in ("search", "answer"):
        result = run_cli(command, "lora", "--lang", "pyhton", "--mode", "lexical",
                         "--db", "rag.db", cwd=indexed)
        _one_line_error(result, r"^ragdb: language 'pyhton' not in this index; its languages: "
                                r"markdown, python, text$")
    two = run_cli("search", "lora", "--lang", "rust", "--lang", "Python", "--lang", "gO",
                  "--db", "rag.db", cwd=indexed)
    _one_line_error(two, "languages 'go', 'rust' not in this index")
    found = run_cli("search", "decoder layer", "--lang", "Python", "--mode", "lexical",
                    "--json", "--db", "rag.db", cwd=indexed)
    assert found.returncode == 0, found.stderr
    assert {s["language"] for s in json.loads(found.stdout)} == {"python"}


def test_a_mistyped_command_is_suggested_once(tmp_path: Path) -> None:
    """Issue 37, item 15: Typer and click both added "Did you mean 'search'?"."""
    for typo, suggested in (("serach", "'search'"), ("idnex", "'index'"),
                            ("models lsit", "'list'")):
        result = run_cli(*typo.split(), cwd=tmp_path)
        assert result.returncode == 2
        _one_line_error(result, f"No such command '{typo.split()[-1]}'")
        assert result.stderr.count("Did you mean") == 1, result.stderr
        assert result.stderr.count(suggested) == 1, result.stderr


def test_missing_index(project: Path) -> None:
    result = run_cli("search", "lora", "--db", "nowhere/rag.db", cwd=project)
    _one_line_error(result, "run `ragdb index` first")
    assert not (project / "nowhere").exists()


def test_ragdb_debug_adds_the_traceback_above_the_one_line(project: Path) -> None:
    """`make debug` sets RAGDB_DEBUG: the error's traceback for whoever chases it, then the
    same one line; without it, the one line alone."""
    plain = run_cli("search", "lora", "--db", "nowhere/rag.db", cwd=project)
    _one_line_error(plain, "run `ragdb index` first")
    debug = run_cli("search", "lora", "--db", "nowhere/rag.db", cwd=project,
                    env={"RAGDB_DEBUG": "1"})
    assert debug.returncode == plain.returncode
    assert "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.rstrip().splitlines()[-1] == plain.stderr.strip()


def test_unreadable_corpus_path(project: Path) -> None:
    result = run_cli("index", "no/such/folder", "--db", "rag.db", cwd=project)
    _one_line_error(result, "no such file or directory")
    assert not (project / "rag.db").exists()


def test_max_chunk_size_above_cap_is_an_error(project: Path) -> None:
    result = run_cli("index", "data/raw", "--max_chunk_size", "2001", "--db", "rag.db", cwd=project)
    _one_line_error(result, "max_chunk_size")


def test_corrupted_database(project: Path) -> None:
    (project / "rag.db").write_bytes(b"this is not a database" * 300)
    result = run_cli("search", "lora", "--db", "rag.db", cwd=project)
    _one_line_error(result, "not a SQLite database|corrupted")


def test_search_dataset_and_evaluate(indexed: Path) -> None:
    dataset = {
        "rag_questions": [
            {"question_id": "q1", "question": "How do I load a LoRA adapter at run time?"},
            {"question_id": "q2", "question": "   "},
        ]
    }
    (indexed / "questions.json").write_text(json.dumps(dataset))
    result = run_cli("search_dataset", "--dataset_path", "questions.json", "--k", "3",
                     "--save_directory", "out", "--db", "rag.db", cwd=indexed)
    assert result.returncode == 0, result.stderr
    saved = json.loads((indexed / "out" / "questions.json").read_text())
    assert saved["k"] == 3
    first, second = saved["search_results"]
    assert first["question_str"] == first["question"]
    assert first["retrieved_sources"][0]["file_path"].endswith("lora.md")
    assert second["retrieved_sources"] == []

    lora = (indexed / "data/raw/proj/docs/features/lora.md").read_text()
    start = lora.index("POST")
    answered = {"rag_questions": [
        {"question_id": "q1", "question": "How do I load a LoRA adapter at run time?",
         "answer": "POST to /v1/load_lora_adapter",
         "sources": [{"file_path": "data/raw/proj/docs/features/lora.md",
                      "first_character_index": start, "last_character_index": start + 60}]},
        {"question_id": "q3", "question": "missing from the results", "answer": "",
         "sources": [{"file_path": "x", "first_character_index": 0,
                      "last_character_index": 5}]},
    ]}
    (indexed / "answered.json").write_text(json.dumps(answered))
    scored = run_cli("evaluate", "--student_search_results_path", "out/questions.json",
                     "--dataset_path", "answered.json", cwd=indexed)
    assert scored.returncode == 0, scored.stderr
    assert "recall@1: 0.500" in scored.stdout  # q1 found, q3 missing counts 0


def test_evaluate_reports_invalid_files(indexed: Path) -> None:
    results = {"k": 1, "search_results": [{
        "question_id": "q1", "question": "x", "question_str": "x",
        "retrieved_sources": [
            {"file_path": "a", "first_character_index": 0, "last_character_index": 2500},
            {"file_path": "a", "first_character_index": 0, "last_character_index": 10},
        ]}]}
    (indexed / "bad_results.json").write_text(json.dumps(results))
    dataset = {"rag_questions": [{"question_id": "q1", "question": "x", "sources": [
        {"file_path": "a", "first_character_index": 0, "last_character_index": 10}]}]}
    (indexed / "d.json").write_text(json.dumps(dataset))
    result = run_cli("evaluate", "--student_search_results_path", "bad_results.json",
                     "--dataset_path", "d.json", cwd=indexed)
    assert result.returncode == 1
    assert "more than k=1" in result.stderr
    assert "2500 characters" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "content, pattern",
    [
        (None, "not found"),
        ("{not json", "not valid JSON"),
        ('{"questions": []}', "expected shape"),
        ('{"rag_questions": [{"question": 3}]}', "expected shape"),
    ],
)
def test_bad_dataset_files(indexed: Path, content: str | None, pattern: str) -> None:
    if content is not None:
        (indexed / "d.json").write_text(content)
    result = run_cli("search_dataset", "--dataset_path", "d.json", "--k", "3",
                     "--save_directory", "out", "--db", "rag.db", cwd=indexed)
    _one_line_error(result, pattern)


def test_search_dataset_k_above_ten(indexed: Path) -> None:
    result = run_cli("search-dataset", "--dataset_path",
                     str(DATASETS / "UnansweredQuestions" / "dataset_docs_public.json"),
                     "--k", "11", "--db", "rag.db", cwd=indexed)
    _one_line_error(result, "from 1 to 10")


def test_every_command_is_documented_in_the_readme() -> None:
    from ragdb.cli import app

    readme = (REPO / "README.md").read_text()
    names = [c.name or (c.callback.__name__ if c.callback else "") for c in
             app.registered_commands if not c.hidden]
    assert names
    for name in names:
        assert f"ragdb {name}" in readme, f"`ragdb {name}` is not documented in README.md"


def test_python_dash_m_and_help() -> None:
    result = run_cli("--help", cwd=REPO)
    assert result.returncode == 0
    assert "search-dataset" in result.stdout


def test_version_names_the_installed_ragdb() -> None:
    from importlib.metadata import version

    result = run_cli("--version", cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ragdb {version('ragdb')}"
