"""benchmarks/bench_ablation (issue 40, which hand-set rules earn their place): it runs every
variant on a real index and saves what `report` reads, today's variant ranks as bench_repos
does, and the decision follows the protocol in its docstring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_ablation as ablation
from ragdb.retrieve import SearchParams
from tests.conftest import PROJ_ASKED, indexed_question_set


def test_every_variant_runs_on_a_real_index_and_the_report_reads_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    db, loaded, today = indexed_question_set(tmp_path, PROJ_ASKED[:4])
    out = tmp_path / "ablation"
    going = ablation.run([("proj", db, loaded)], out)

    saved = {json.loads(p.read_text())["variant"] for p in out.glob("*.json")
             if p.name != "decision.json"}
    assert {ablation.TODAY, ablation.EVERYTHING} | {r.name for r in ablation.RULES} <= saved
    assert [r["rank"] for r in ablation.load(ablation.TODAY, out)] == today
    decision = json.loads((out / "decision.json").read_text())
    assert decision["going"] == [rule.name for rule in going]
    assert all(rule.candidate for rule in going)
    ablation.report(out)
    printed = capsys.readouterr().out
    assert "| today |" in printed and "Rules that go:" in printed


def test_the_neutral_values_turn_every_rule_off() -> None:
    off = ablation.everything_off()
    assert (off.margin_cap, off.w_absent, off.prior, off.root_prior, off.w_bridge,
            off.callee_first, off.w_symbol, off.w_path) == (
                1.0, 0.0, 1.0, 1.0, 0.0, False, 0.0, 1.0)
    assert off.max_distance == SearchParams().max_distance  # reported, not a candidate


def _score(code: int, docs: int, vllm: int = 10) -> ablation.Score:
    return ablation.Score(code, docs, vllm, vllm)


def test_the_combination_shrinks_by_the_costliest_single_removal_until_it_passes() -> None:
    names = [rule.name for rule in ablation.RULES]
    singles = {ablation.TODAY: _score(50, 50), names[0]: _score(50, 51), names[3]: _score(50, 50),
               names[5]: _score(52, 50), names[6]: _score(49, 60)}  # names[6] fails on code
    checked: list[list[str]] = []

    def scores(label: str) -> ablation.Score:
        return singles.get(label, _score(0, 0))

    def check(rules: list[ablation.Rule]) -> ablation.Score:
        checked.append([rule.name for rule in rules])
        return _score(50, 50) if len(rules) <= 2 else _score(49, 50)

    going, log = ablation.decide(scores, check)
    # names[3] gains nothing (cost 0, the most), so it leaves first
    assert checked == [[names[0], names[3], names[5]], [names[0], names[5]]]
    assert [rule.name for rule in going] == [names[0], names[5]]
    assert [ok for _, ok in log] == [False, True]


def test_a_lift_that_goes_stands_for_its_gate_and_hands_back_to_it_when_dropped() -> None:
    today = _score(50, 50)

    def scores(label: str) -> ablation.Score:
        return {ablation.TODAY: today, ablation.LIFT: _score(50, 50),
                ablation.GATE: _score(51, 51)}.get(label, _score(0, 0))

    checked: list[list[str]] = []

    def check(rules: list[ablation.Rule]) -> ablation.Score:
        checked.append([rule.name for rule in rules])
        return today if ablation.LIFT not in checked[-1] else _score(49, 49)

    going, _ = ablation.decide(scores, check)
    assert checked == [[ablation.LIFT], [ablation.GATE]]
    assert [rule.name for rule in going] == [ablation.GATE]
