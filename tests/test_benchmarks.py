"""The benchmarks that remain start, share one harness and read what data/bench holds: every
module parses its arguments (`--help`, and the Makefile's bench rules as written), none imports
another in a cycle, the harness ranks a real index, and every tracked file under data/bench is
one a benchmark command reads (past readings nothing reproduces live in git history)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench_accept, bench_blocks, bench_cleaning, bench_writer
from benchmarks.bench_repos import run
from benchmarks.common import ACCEPT_DIR, cell, repo_questions
from ragdb import RagDB
from ragdb.retrieve import Mode
from tests.conftest import write_corpus, write_question_set

REPO = Path(__file__).resolve().parents[1]
needs_shared = pytest.mark.skipif(not (REPO.parent / "shared" / "datasets" / "public").is_dir(),
                                  reason="../shared/datasets is not here")
MODULES = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py")
                 if p.stem not in ("__init__", "common", "set_verify"))  # libraries
SCRIPTS = sorted(str(p.relative_to(REPO)) for p in (REPO / "benchmarks").glob("*/verify.py"))
FETCHERS = sorted(str(p.relative_to(REPO)) for p in (REPO / "benchmarks").glob("*/fetch.sh"))

# Runs a module as `python -m` does, but stops once its arguments are parsed: imports, the
# parser and the arguments are checked, and nothing is measured.
PARSE_ONLY = """
import argparse, runpy, sys
parse = argparse.ArgumentParser.parse_args
def parse_only(self, args=None, namespace=None):
    parse(self, args, namespace)
    raise SystemExit(0)
argparse.ArgumentParser.parse_args = parse_only
sys.argv = sys.argv[1:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("module", MODULES)
def test_every_benchmark_module_starts(module: str) -> None:
    done = _run("-m", f"benchmarks.{module}", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:")


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_question_set_checker_starts(script: str) -> None:
    done = _run(script, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:")


@pytest.mark.parametrize("script", FETCHERS)
def test_every_corpus_fetcher_explains_itself_and_refuses_unknown_options(script: str) -> None:
    """The fetchers share benchmarks/fetch_pinned.sh: --help prints the set's own header (its
    usage line names the script), an unknown option is one line on stderr and exit status 1,
    and nothing is downloaded for either."""
    done = subprocess.run(["bash", script, "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"bash {script} [--no-prune] [TARGET]" in done.stdout
    assert "set -euo" not in done.stdout
    refused = subprocess.run(["bash", script, "--no-such-option"], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "fetch.sh: unknown option: --no-such-option (see --help)"]


def _make_commands() -> list[tuple[str, list[str]]]:
    """(module, arguments) of every `python -m benchmarks.X ...` line of the Makefile."""
    commands = []
    for line in (REPO / "Makefile").read_text().splitlines():
        found = re.search(r"python -m (benchmarks\.\w+)(.*)", line)
        if found:
            args = re.sub(r"\$\(\w+\)", "", found.group(2).split("#")[0]).split()
            commands.append((found.group(1), args))
    return commands


def test_the_makefile_bench_rules_name_modules_and_flags_that_exist() -> None:
    commands = _make_commands()
    assert {module for module, _ in commands} >= {
        "benchmarks.bench", "benchmarks.bench_repos", "benchmarks.bench_answer",
        "benchmarks.bench_accept", "benchmarks.bench_scale"}
    for module, args in commands:
        done = _run("-c", PARSE_ONLY, module, *args)
        assert done.returncode == 0, f"{module} {args}: {done.stderr}"
    bogus = _run("-c", PARSE_ONLY, "benchmarks.bench_repos", "--no-such-flag")
    assert bogus.returncode == 2 and "unrecognized arguments" in bogus.stderr


def _imports(path: Path) -> set[str]:
    """The benchmarks modules a module imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "benchmarks":
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmarks."):
            found.add(node.module.split(".")[1])  # type: ignore[union-attr]
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names
                      if alias.name.startswith("benchmarks.")}
    return found


def test_no_benchmark_imports_another_in_a_cycle() -> None:
    graph = {p.stem: _imports(p) for p in (REPO / "benchmarks").glob("*.py")}
    assert not graph["common"], "the harness imports no benchmark"

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for name in graph.get(start, set()) - seen:
            if name == goal or reaches(name, goal, seen | {name}):
                return True
        return False

    assert [name for name in graph if reaches(name, name, set())] == []


def test_the_harness_ranks_a_real_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A question set laid out as the repository sets are, on a small lexical index: the
    harness's halves, graders' rule and recall cells, as bench_repos and tune_pool use them."""
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path / "data" / "raw" / "proj")
    lora = "data/raw/proj/docs/features/lora.md"
    layers = "data/raw/proj/pkg/layers.py"
    asked = [("docs", "How do I load a LoRA adapter at run time?", lora),
             ("code", "Which class is one decoder layer of Gemma 2?", layers),
             ("docs", "Does the scheduler support chunked prefill?", "data/raw/proj/notes.txt"),
             ("code", "What does tanh return for an empty batch of logits?", lora)]
    folder = write_question_set(tmp_path, asked)
    with RagDB(tmp_path / "rag.db") as rag:
        rag.index(["data/raw/proj"], vectors=False)
        loaded = repo_questions(folder, ("proj",))
        ranks, hits = run(rag, loaded, Mode.lexical)
    assert [q.half for q in loaded] == ["A", "A", "B", "B"]
    assert ranks[:3] == [1, 1, 1] and ranks[3] != 1
    assert hits[0][0].file_path == lora
    assert cell(ranks[:3]) == "1.000 / 1.000 / 1.000"


def test_every_tracked_file_under_data_bench_is_read_by_a_benchmark() -> None:
    listed = subprocess.run(["git", "ls-files", "data/bench"], cwd=REPO, capture_output=True,
                            text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    tracked = set(listed.stdout.split())
    read = {f"{ACCEPT_DIR}/answers_{style}.json" for style in bench_accept.STYLES}
    read |= {str(p.relative_to(REPO)) for style in bench_accept.STYLES
             for p in (REPO / ACCEPT_DIR).glob(f"verdicts_{style}*.json")}
    read |= {str(path) for path in (bench_writer.DRAFTS, bench_writer.LABELS, bench_writer.JUDGED)}
    read.add(str(bench_cleaning.RAW))  # models' raw output, before cleaning
    # The blind comparison of answer variants (issue 39): what `bench_blocks report` reads.
    patterns = ("answers_*.json", "verdicts_*.json", "key.json")
    read |= {str(p.relative_to(REPO)) for folder in bench_blocks.READINGS
             for pattern in patterns for p in (REPO / folder).glob(pattern)}
    assert tracked == read, ("a tracked file no benchmark command reads (a past reading: git "
                             "keeps it), or one a command reads that is not tracked")


@needs_shared  # the sample's questions are read from ../shared/datasets
def test_the_accept_report_tallies_the_saved_sample(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    bench_accept.report()
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()
            if line.startswith("| ")]
    totals = {row[0].strip("| "): int(row[2]) for row in rows if row[1] == "all"}
    assert totals == {"extractive": 250, "writer": 250}


def test_the_claim_check_runs_on_the_saved_drafts() -> None:
    done = _run("-m", "benchmarks.bench_writer", "check")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^65 drafts; fall back to passages: \d+", done.stdout, re.M)


def test_make_clean_keeps_the_tracked_bench_data(tmp_path: Path) -> None:
    bench = tmp_path / "data" / "bench"
    kept = [bench / "accept" / "answers_extractive.json", bench / "writer" / "drafts.json"]
    gone = [bench / "rag.db", bench / "repos.db", bench / "search_results" / "docs.json"]
    for path in kept + gone:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("[]")
    done = subprocess.run(["make", "-f", str(REPO / "Makefile"), "clean"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert all(path.exists() for path in kept)
    assert not any(path.exists() for path in gone)


def test_blocks_compare_pairs_the_changed_answers_blind(tmp_path: Path) -> None:
    """Two saved answer files (two versions of the code): only the changed answers are paired,
    their letters shuffled, the key apart."""
    def row(qid: str, answer: str) -> dict[str, object]:
        return {"id": qid, "kind": "docs", "question": f"q {qid}", "reference_answer": "r",
                "answer": answer, "cited": []}
    before, after = tmp_path / "a.json", tmp_path / "b.json"
    before.write_text(json.dumps([row("1", "same"), row("2", "old"), row("3", "old")]))
    after.write_text(json.dumps([row("1", "same"), row("2", "new"), row("3", "newer")]))
    out = tmp_path / "out"
    assert bench_blocks.compare(before, after, out) == ["2", "3"]
    key = json.loads((out / "key.json").read_text())
    assert sorted(key) == ["2", "3"]
    assert all(sorted(k.values()) == ["after", "before"] for k in key.values())
    blind = json.loads((out / "blind" / "2.json").read_text())
    assert {a["answer"] for a in blind["answers"].values()} == {"old", "new"}
    assert "before" not in (out / "blind" / "2.md").read_text()
    assert [r["id"] for r in json.loads((out / "answers_after.json").read_text())] == ["2", "3"]


def test_the_blocks_report_tallies_the_saved_verdicts(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The blind readers' verdicts on 120 held-out questions map back to their variants."""
    monkeypatch.chdir(REPO)
    bench_blocks.report()
    rows = {tuple(cells[1:4]): cells for line in capsys.readouterr().out.splitlines()
            if (cells := [c.strip() for c in line.strip("|").split("|")])}
    assert rows[("all", "blocks", "120")][5] == "61 / 21 / 38"
    assert rows[("all", "extractive", "120")][5] == "26 / 51 / 43"
