"""The benchmarks' question sets: the held-out repos3 and repos4 sets join bench_repos and the
answer samples without changing what the earlier sets hold, and repos5, repos6 and repos7 are
reached only by name (real dataset files, no index needed)."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from benchmarks import bench_accept
from benchmarks import bench_blocks
from benchmarks.common import (BY_NAME, HELD_OUT, REPOS3, REPOS4, REPOS5, REPOS6, REPOS7,
                               HeldOut, accept_sample, evaluated_sets, repo_questions)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
needs_shared = pytest.mark.skipif(not (SHARED / "datasets" / "repos").is_dir(),
                                  reason="../shared/datasets is not here")


@pytest.fixture(autouse=True)
def _project_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmarks name their files relative to the project root, as `make` runs them."""
    monkeypatch.chdir(REPO)


def test_held_out_sets_have_their_shape_and_own_ids() -> None:
    seen: set[str] = set()
    for held in HELD_OUT:
        questions = repo_questions(held.folder, held.names)
        assert len(questions) == 20 * len(held.names) == 60
        shape = collections.Counter((q.set_name, q.kind, q.difficulty) for q in questions)
        assert shape == {(name, kind, diff): n for name in held.names for kind in ("docs", "code")
                         for diff, n in (("identifier", 4), ("paraphrase", 3), ("conceptual", 3))}
        halves = collections.Counter((q.set_name, q.kind, q.half) for q in questions)
        assert set(halves.values()) == {5}  # 5 + 5 of each package's docs and code
        assert all(src[0].startswith(f"{held.root}/{q.set_name}/")
                   for q in questions for src in q.sources)
        ids = {q.question_id for q in questions}
        assert len(ids) == 60 and not ids & seen
        seen |= ids
    assert len({held.db for held in HELD_OUT}) == len({held.root for held in HELD_OUT}) == 3
    assert [held.name for held in HELD_OUT] == ["repos2", "repos3", "repos4"]


def test_repos5_has_the_shape_and_is_reached_only_by_name(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    questions = repo_questions(REPOS5.folder, REPOS5.names)
    shape = collections.Counter((q.set_name, q.kind, q.difficulty) for q in questions)
    assert shape == {(name, kind, diff): n for name in REPOS5.names for kind in ("docs", "code")
                     for diff, n in (("identifier", 4), ("paraphrase", 3), ("conceptual", 3))}
    earlier = {q.question_id for held in HELD_OUT
               for q in repo_questions(held.folder, held.names)}
    assert len({q.question_id for q in questions}) == 60
    assert not {q.question_id for q in questions} & earlier
    assert REPOS5 not in HELD_OUT and BY_NAME["repos5"] is REPOS5
    assert {bench_blocks.set_group(name) for name in REPOS5.names} == {"repos5"}
    # evaluated_sets lists repos5 only when it is named (its rag.db stood in by an empty file)
    monkeypatch.setattr("benchmarks.common.REPOS5", REPOS5.__class__(
        REPOS5.name, REPOS5.folder, REPOS5.root, REPOS5.names, tmp_path / "repos5.db"))
    (tmp_path / "repos5.db").touch()
    assert "repos5" not in [name for name, _, _ in evaluated_sets()]
    assert [name for name, _, _ in evaluated_sets(["repos5"])] == ["repos5"]


@pytest.mark.parametrize("held", [REPOS6, REPOS7], ids=lambda held: held.name)
def test_later_sets_have_the_shape_and_are_reached_only_by_name(
        held: HeldOut, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    questions = repo_questions(held.folder, held.names)
    shape = collections.Counter((q.set_name, q.kind, q.difficulty) for q in questions)
    assert shape == {(name, kind, diff): n for name in held.names for kind in ("docs", "code")
                     for diff, n in (("identifier", 4), ("paraphrase", 3), ("conceptual", 3))}
    assert all(src[0].startswith(f"{held.root}/{q.set_name}/")
               for q in questions for src in q.sources)
    others = {q.question_id for other in (*HELD_OUT, REPOS5, REPOS6, REPOS7) if other is not held
              for q in repo_questions(other.folder, other.names)}
    assert len({q.question_id for q in questions}) == 60
    assert not {q.question_id for q in questions} & others
    assert held not in HELD_OUT and BY_NAME[held.name] is held
    assert {bench_blocks.set_group(name) for name in held.names} == {held.name}
    # evaluated_sets lists the set only when it is named (its rag.db stood in by an empty file)
    monkeypatch.setattr(f"benchmarks.common.{held.name.upper()}", HeldOut(
        held.name, held.folder, held.root, held.names, tmp_path / f"{held.name}.db"))
    (tmp_path / f"{held.name}.db").touch()
    assert held.name not in [name for name, _, _ in evaluated_sets()]
    assert [name for name, _, _ in evaluated_sets([held.name])] == [held.name]


@needs_shared
def test_accept_sample_appends_repos7_only_when_asked() -> None:
    before = accept_sample(repos3=True, repos4=True, repos6=True)
    with_repos7 = accept_sample(repos3=True, repos4=True, repos6=True, repos7=True)
    assert with_repos7[:len(before)] == before and len(with_repos7) == len(before) + 60
    added = with_repos7[len(before):]
    assert {db for _, _, db in added} == {REPOS7.db}
    assert {q.set_name for q, _, _ in added} == set(REPOS7.names)


@needs_shared
def test_accept_sample_appends_repos3_and_keeps_the_190() -> None:
    before = accept_sample()
    with_repos3 = accept_sample(repos3=True)
    assert len(before) == 190
    assert with_repos3[:190] == before  # the existing sets hold the same questions, in order
    added = with_repos3[190:]
    assert len(added) == 60
    assert {db for _, _, db in added} == {REPOS3.db}
    assert {q.set_name for q, _, _ in added} == set(REPOS3.names)
    assert not {q.set_name for q, _, _ in before} & set(REPOS3.names)
    answers = {}
    for name in REPOS3.names:
        path = REPOS3.folder / "AnsweredQuestions" / f"dataset_{name}.json"
        answers.update({q["question_id"]: q["answer"]
                        for q in json.loads(path.read_text())["rag_questions"]})
    assert all(reference == answers[q.question_id] for q, reference, _ in added)


@needs_shared
def test_accept_sample_appends_repos4_after_repos3() -> None:
    with_repos3 = accept_sample(repos3=True)
    both = accept_sample(repos3=True, repos4=True)
    assert both[:250] == with_repos3  # repos4 comes last; what came before is unchanged
    added = both[250:]
    assert len(added) == 60
    assert {db for _, _, db in added} == {REPOS4.db}
    assert {q.set_name for q, _, _ in added} == set(REPOS4.names)
    assert accept_sample(repos4=True)[190:] == added  # without repos3 it follows the 190
    with_repos5 = accept_sample(repos3=True, repos4=True, repos5=True)
    assert with_repos5[:310] == both and len(with_repos5) == 370  # repos5 only when asked
    assert {bench_blocks.set_group(name) for name in REPOS4.names} == {"repos4"}
    assert bench_blocks.set_group("click") == "repos"


@needs_shared
def test_accept_report_tallies_repos3_apart(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    answers = [{"id": f"q{i}", "set": name, "seconds": 0.1}
               for i, name in enumerate(("click", "fastify", "ent", "starlette"))]
    verdicts = [{"id": a["id"], "exam": True, "satisfied": "yes", "unsupported": False}
                for a in answers]
    (tmp_path / "answers_extractive.json").write_text(json.dumps(answers))
    (tmp_path / "verdicts_extractive.json").write_text(json.dumps(verdicts))
    bench_accept.report(tmp_path)
    rows = {line.split(" | ")[1]: int(line.split(" | ")[2])
            for line in capsys.readouterr().out.splitlines() if line.startswith("| extractive")}
    assert rows == {"repos": 1, "the 130": 1, "later 65": 1, "repos2": 1, "repos3": 2,
                    "all": 4}
