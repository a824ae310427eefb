"""Real generation with the offline SmolLM2-135M GGUF through OpenVINO GenAI (no mock)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ragdb.errors import RagdbError
from ragdb.generate.generator import (EMPTY_ANSWER_MESSAGE, NO_SOURCES_MESSAGE, TIME_LIMIT_ENV,
                                      Generator, time_limit_from_env)
from ragdb.generate.models import OFFLINE_NAME
from ragdb.generate.prompt import DEFAULT_TIME_LIMIT_S

from tests.conftest import index_rows, one_line_error, run_cli, write_corpus
from tests.generate_support import LOAD, LORA, QUICK


# ------------------------------------------------------------------------------------------
# Real generation with the offline model


def test_answer_streams_and_cites_only_given_sources(generator: Generator) -> None:
    pieces: list[str] = []
    answer = generator.answer("How do I serve LoRA adapters?", [LORA, LOAD, QUICK],
                              on_token=pieces.append)
    streamed = "".join(pieces)
    assert answer.text and answer.text != EMPTY_ANSWER_MESSAGE
    assert streamed and (answer.text.startswith(streamed) or streamed.startswith(answer.text))
    assert all(1 <= n <= 3 for n in answer.cited)
    assert all(1 <= int(n) <= 3 for n in re.findall(r"\[(\d+)\]", answer.text))
    assert "<think>" not in answer.text and "<|im_end|>" not in answer.text
    assert answer.model == OFFLINE_NAME
    assert 0 < answer.prompt_tokens <= generator.prompt_budget
    assert 0 < answer.new_tokens <= generator.max_new_tokens
    assert 0 < answer.first_token_s <= answer.total_s
    assert answer.sources == [LORA, LOAD, QUICK]


def test_no_citation_is_added(generator: Generator) -> None:
    answer = generator.answer("How do I install vLLM?", [QUICK, LORA])
    assert answer.text and not answer.text.startswith("According to [")
    found = sorted({int(n) for n in re.findall(r"\[(\d+)\]", answer.text)})
    assert found == answer.cited and all(1 <= n <= 2 for n in found)


def test_no_sources_gives_the_fixed_message(generator: Generator) -> None:
    answer = generator.answer("Anything?", [])
    assert (answer.text, answer.cited, answer.new_tokens) == (NO_SOURCES_MESSAGE, [], 0)


def test_ctrl_c_propagates_as_keyboard_interrupt(generator: Generator) -> None:
    def interrupt(piece: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generator.answer("How do I serve LoRA adapters?", [LORA], on_token=interrupt)
    assert generator.answer("How do I serve LoRA adapters?", [LORA]).text  # still usable


def test_writing_stops_at_the_time_limit(generator: Generator) -> None:
    """A limit already past when the first piece comes: the model is stopped there (a few
    tokens, as the streamer gets them), and the answer says so; without the limit the same
    question runs to its end. (Cut like an answer at max_new_tokens; the writer's check then
    drops what has no citation: tests/test_writer.py.)"""
    question, sources = "How do I serve LoRA adapters?", [LORA, LOAD, QUICK]
    whole = generator.answer(question, sources)
    limit = generator.time_limit_s
    generator.time_limit_s = 0.0
    try:
        cut = generator.answer(question, sources)
    finally:
        generator.time_limit_s = limit
    assert cut.stopped_at_time_limit and not whole.stopped_at_time_limit
    assert cut.new_tokens < min(16, whole.new_tokens), (cut.new_tokens, whole.new_tokens)
    assert cut.text and len(cut.text) < len(whole.text)


def test_the_writing_limit_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIME_LIMIT_ENV, raising=False)
    assert time_limit_from_env() == DEFAULT_TIME_LIMIT_S
    for raw, seconds in (("12.5", 12.5), (" 40 ", 40.0), ("0", None)):
        monkeypatch.setenv(TIME_LIMIT_ENV, raw)
        assert time_limit_from_env() == seconds
    for raw in ("soon", "-1", "nan", "inf", "1e999", "x" * 500):
        monkeypatch.setenv(TIME_LIMIT_ENV, raw)
        with pytest.raises(RagdbError, match=TIME_LIMIT_ENV) as caught:
            time_limit_from_env()
        assert len(str(caught.value)) < 120 and "\n" not in str(caught.value)


def test_a_bad_writing_limit_is_one_line_and_the_index_is_kept(tmp_path: Path) -> None:
    write_corpus(tmp_path / "proj")
    built = run_cli("index", "proj", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    before = index_rows(tmp_path / "rag.db")
    done = run_cli("answer", "How do I load a LoRA adapter?", "--db", "rag.db", "--style",
                   "generate", "--model", "offline", cwd=tmp_path,
                   env={TIME_LIMIT_ENV: "ten"}, timeout=120)
    assert TIME_LIMIT_ENV in one_line_error(done)
    assert index_rows(tmp_path / "rag.db") == before
