"""answer_dataset: a whole search-dataset output answered, saved after each answer, resumed."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest

from ragdb.answering import answer_dataset
from ragdb.generate.generator import NO_SOURCES_MESSAGE, GeneratedAnswer, Generator
from ragdb.generate.models import OFFLINE_NAME
from ragdb.generate.prompt import PromptSource
from ragdb.schemas import (
    MinimalSearchResults,
    MinimalSource,
    StudentSearchResults,
    StudentSearchResultsAndAnswer,
)

from tests.generate_support import LOAD, LORA, QUICK


# ------------------------------------------------------------------------------------------
# Whole datasets, resumed


TEXTS = {
    ("docs/features/lora.md", 0): LORA,
    ("docs/features/lora.md", 500): LOAD,
    ("docs/usage/quickstart.md", 0): QUICK,
}


def minimal(path: str, first: int) -> MinimalSource:
    return MinimalSource(file_path=path, first_character_index=first,
                         last_character_index=first + 100)


def resolve_text(found: MinimalSource) -> PromptSource | None:
    return TEXTS.get((found.file_path, found.first_character_index))


def question(qid: str, text: str, sources: list[MinimalSource]) -> MinimalSearchResults:
    return MinimalSearchResults(question_id=qid, question=text, question_str=text,
                                retrieved_sources=sources)


DATASET = StudentSearchResults(k=3, search_results=[
    question("q1", "How do I serve LoRA adapters?",
             [minimal("docs/features/lora.md", 0), minimal("docs/usage/quickstart.md", 0)]),
    question("q2", "How do I load an adapter at run time?",
             [minimal("gone/deleted.md", 0), minimal("docs/features/lora.md", 500)]),
    question("q3", "How do I install vLLM?", [minimal("docs/usage/quickstart.md", 0)]),
    question("q4", "Nothing indexed any more?", [minimal("gone/deleted.md", 0)]),
])


def test_answer_dataset_writes_resumes_and_loads_the_model_only_when_needed(
    generator: Generator, tmp_path: Path
) -> None:
    out = tmp_path / "out" / "answers.json"
    factory_calls: list[int] = []
    warnings: list[str] = []
    progress: list[tuple[int, int]] = []

    def factory() -> Generator:
        factory_calls.append(1)
        return generator

    with mock.patch.object(generator, "answer", wraps=generator.answer) as spy:
        record = answer_dataset(DATASET, resolve_text, factory, out,
                                progress=lambda d, t: progress.append((d, t)),
                                warn=warnings.append)
        assert spy.call_count == 3 and len(factory_calls) == 1
        assert progress[0] == (0, 4) and progress[-1] == (4, 4)
        saved = StudentSearchResultsAndAnswer.model_validate_json(out.read_text())
        assert saved == record and saved.model == OFFLINE_NAME and saved.k == 3
        answers = {a.question_id: a for a in saved.search_results}
        assert list(answers) == ["q1", "q2", "q3", "q4"]
        assert answers["q4"].answer == NO_SOURCES_MESSAGE
        assert sum("gone/deleted.md" in w for w in warnings) == 2
        # q2's only usable source is its second retrieved one: no citation says [1].
        assert "[1]" not in answers["q2"].answer
        assert answers["q1"].retrieved_sources == DATASET.search_results[0].retrieved_sources

        # An interrupted run: keep the first answer only, then run again.
        data = json.loads(out.read_text())
        data["search_results"] = data["search_results"][:1]
        out.write_text(json.dumps(data))
        spy.reset_mock()
        again = answer_dataset(DATASET, resolve_text, factory, out, warn=warnings.append)
        assert spy.call_count == 2  # q2 and q3; q1 kept, q4 needs no model
        asked = [c.args[0] for c in spy.call_args_list]
        assert asked == ["How do I load an adapter at run time?", "How do I install vLLM?"]
        assert again.search_results[0] == saved.search_results[0]
        assert [a.question_id for a in again.search_results] == ["q1", "q2", "q3", "q4"]

    # Everything answered already: the model is not even loaded.
    factory_calls.clear()
    done = answer_dataset(DATASET, resolve_text, factory, out, warn=warnings.append)
    assert factory_calls == [] and len(done.search_results) == 4
    assert not (out.parent / "answers.json.tmp").exists()


class _Citing:
    """An answerer that cites the first source it is given, as [1]."""

    model = "citing"

    def answer(self, question: str, sources: list[PromptSource],
               on_token: object = None) -> GeneratedAnswer:
        return GeneratedAnswer(f"{sources[0].text.splitlines()[0]} [1].", [1], self.model, 0,
                               0, 0.0, 0.0, sources)


def test_citations_are_the_ranks_of_the_retrieved_sources(tmp_path: Path) -> None:
    """q2's only usable source is its second retrieved one: its citation says [2], not [1]."""
    only_q2 = StudentSearchResults(k=2, search_results=[DATASET.search_results[1]])
    record = answer_dataset(only_q2, resolve_text, _Citing,  # type: ignore[arg-type]
                            tmp_path / "a.json",
                            warn=lambda message: None)
    answer = record.search_results[0].answer
    assert "[1]" not in answer and answer.endswith("[2].")


def test_answer_dataset_without_any_usable_source_never_loads_a_model(tmp_path: Path) -> None:
    def factory() -> Generator:
        raise AssertionError("the model must not be loaded")

    only_gone = StudentSearchResults(k=1, search_results=[DATASET.search_results[3]])
    record = answer_dataset(only_gone, resolve_text, factory, tmp_path / "a.json",
                            warn=lambda message: None)
    assert [a.answer for a in record.search_results] == [NO_SOURCES_MESSAGE]
    assert record.model is None


def test_changed_sources_are_answered_again(generator: Generator, tmp_path: Path) -> None:
    out = tmp_path / "answers.json"
    first = StudentSearchResults(k=1, search_results=[DATASET.search_results[2]])
    answer_dataset(first, resolve_text, lambda: generator, out, warn=pytest.fail)
    moved = question("q3", "How do I install vLLM?", [minimal("docs/features/lora.md", 0)])
    with mock.patch.object(generator, "answer", wraps=generator.answer) as spy:
        answer_dataset(StudentSearchResults(k=1, search_results=[moved]),
                       resolve_text, lambda: generator, out, warn=pytest.fail)
        assert spy.call_count == 1
