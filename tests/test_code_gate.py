"""benchmarks/bench_code_gate (issue 39, a learned code gate): the question-form features read
the text only, the gate's own inputs come from a real index as its search sees them, the model
is the one the saved probabilities came from, and the variants force the gate per question
(today's variant ranks as bench_repos does)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import bench_code_gate as gate
from tests.conftest import PROJ_ASKED, indexed_question_set


def test_the_question_form_features() -> None:
    assert gate.text_features("How do I load an adapter at run time?") == {
        "ident": 0.0, "path": 0.0, "backticks": 0.0, "words": 9.0}
    # A mixed-case product name reads as CamelCase (as measured; the features are frozen).
    assert gate.text_features("How do I load a LoRA adapter?")["ident"] == 1.0
    for written in ("What does max_model_len limit?", "Which class is SamplingParams?",
                    "What does Context.ensure_object do?", "What does generate( return?"):
        assert gate.text_features(written)["ident"] == 1.0, written
    named = gate.text_features("What does `config.py` in vllm/engine hold?")
    assert (named["ident"], named["path"], named["backticks"]) == (0.0, 1.0, 1.0)


def test_the_gate_inputs_and_their_missing_cases() -> None:
    both = gate.gate_inputs(0.3, -12.0, -6.0, 0.6)
    assert both["near"] == 0.3 and both["log_ratio"] == pytest.approx(np.log(2.0))
    assert (both["no_code"], both["no_docs"]) == (0.0, 0.0)
    assert gate.gate_inputs(None, None, -6.0, 0.6) == {
        "near": 0.6, "log_ratio": 0.0, "no_code": 1.0, "no_docs": 0.0}
    assert gate.gate_inputs(0.5, -3.0, None, 0.6)["no_docs"] == 1.0


def test_the_fit_separates_what_can_be_separated() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    y = (x[:, 0] - 0.5 * x[:, 1] > 0).astype(float)
    w = gate.fit(x, y)
    assert ((np.hstack([np.ones((200, 1)), x]) @ w > 0) == (y == 1)).mean() > 0.95
    assert w[1] > 0 > w[2]


def test_every_variant_runs_on_a_real_index_and_the_report_reads_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    db, loaded, today = indexed_question_set(tmp_path, PROJ_ASKED)
    out = tmp_path / "code_gate"
    model = gate.run([("proj", db, loaded)], [], out)

    saved = json.loads((out / "features.json").read_text())
    assert {r["id"] for r in saved["rows"]} == {q.question_id for q in loaded}
    for row in saved["rows"]:
        assert set(row["features"]) == set(gate.FEATURES)
        assert 0.0 <= row["features"]["near"] <= 0.6
        assert row["p"] == pytest.approx(model.probability(row["features"]))
    assert [r["rank"] for r in gate.load(gate.TODAY, out)] == today
    for variant in (gate.OPEN, gate.ORACLE, *gate.CANDIDATES):
        assert len(gate.load(variant, out)) == len(loaded)
    gate.report(out)
    printed = capsys.readouterr().out
    assert "| today |" in printed and "| oracle gate |" in printed and "Ships:" in printed
