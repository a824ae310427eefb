"""Answers as records: the JSON the HTTP API returns, the file `ragdb answer` saves, and
`answer_dataset`, which answers a whole search-dataset output and resumes after an interrupt."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragdb.generate.blocks import BlocksAnswerer
from ragdb.generate.generator import NO_SOURCES_MESSAGE, Generator
from ragdb.generate.styles import CheckedAnswerer
from ragdb.generate.cleaning import renumber_citations
from ragdb.generate.models import first_line
from ragdb.generate.prompt import PromptSource
from ragdb.jsonfiles import write_json_atomic
from ragdb.retrieve import Hit, Mode, source_json
from ragdb.file_types import language_of

if TYPE_CHECKING:  # the pydantic models load with the first answer record, not every command
    from ragdb.schemas import (
        MinimalSearchResults,
        MinimalSource,
        StudentSearchResults,
        StudentSearchResultsAndAnswer,
    )


Answerer = Generator | CheckedAnswerer | BlocksAnswerer


@dataclass
class Answer:
    """One answered question: what was retrieved, what was said, and by which model."""

    question: str
    k: int
    mode: Mode
    hits: list[Hit]
    text: str
    cited: list[int] = field(default_factory=list)
    model: str | None = None
    prompt_sources: list[PromptSource] = field(default_factory=list)
    timings: dict[str, Any] = field(default_factory=dict)
    style: str | None = None  # what was shown: "extractive" (blocks) or "generate"; None: none
    check: dict[str, Any] | None = None  # a written answer's claim check (checking.py)
    style_tried: str | None = None  # what was tried: "generate" that fell back, or `style`
    fallback_reason: str | None = None  # why what was tried is not what was shown
    shown: dict[str, Any] | None = None  # the blocks shown: variant, blocks (path:start-end)


def answer_json(answer: Answer, chunk_url: Callable[[int], str | None]) -> dict[str, Any]:
    """The HTTP API's answer object (also the `done` event of a stream)."""
    cited = set(answer.cited)
    in_prompt = len(answer.prompt_sources)
    sources = []
    for rank, hit in enumerate(answer.hits, 1):
        item = source_json(rank, hit, chunk_url(hit.chunk_id))
        item["n"] = rank
        item["in_prompt"] = rank <= in_prompt
        item["cited"] = rank in cited
        item["text"] = hit.text
        if rank <= in_prompt:  # the first source may have been cut to fit
            seen = answer.prompt_sources[rank - 1]
            item["end_line"], item["last_character_index"] = seen.end_line, seen.last
            item["text"] = seen.text
        sources.append(item)
    for n, added in added_sources(answer):
        sources.append({
            "n": n, "rank": None, "chunk_id": None, "file_path": added.file_path,
            "first_character_index": added.first, "last_character_index": added.last,
            "start_line": added.start_line, "end_line": added.end_line, "kind": None,
            "language": language_of(added.file_path), "score": None, "preview": None,
            "url": None, "duplicates": [], "in_prompt": True, "cited": n in cited,
            "text": added.text,
        })
    citations = [
        {key: s[key] for key in ("n", "chunk_id", "file_path", "start_line", "end_line", "url")}
        for s in sources if s["cited"]
    ]
    return {
        "q": answer.question,
        "k": answer.k,
        "mode": answer.mode.value,
        "answer": answer.text,
        "cited": sorted(cited),
        "citations": citations,
        "sources": sources,
        "model": answer.model,
        "style": answer.style,
        "style_tried": answer.style_tried,
        "fallback_reason": answer.fallback_reason,
        "shown": answer.shown,
        "check": answer.check,
        "timings": answer.timings,
    }


def added_sources(answer: Answer) -> list[tuple[int, PromptSource]]:
    """The sources the answer numbers after the retrieved ones, with their [n]: the definition
    the question names where the search did not retrieve it (generate/named.py). Every door
    lists them after the retrieved ones, so each [n] of the answer names a source (not
    ranked: no rank, chunk id or score)."""
    return list(enumerate(answer.prompt_sources[len(answer.hits):], len(answer.hits) + 1))


def question_id(question: str) -> str:
    """A stable id for a question asked on the command line (names its saved file)."""
    return hashlib.sha256(question.encode()).hexdigest()[:12]


def answer_record(answer: Answer) -> StudentSearchResultsAndAnswer:
    """The assignment's file format for one answered question."""
    from ragdb.schemas import MinimalAnswer, StudentSearchResultsAndAnswer

    return StudentSearchResultsAndAnswer(
        k=max(answer.k, 1), model=answer.model,
        search_results=[MinimalAnswer(
            question_id=question_id(answer.question), question=answer.question,
            question_str=answer.question, retrieved_sources=[h.source for h in answer.hits],
            answer=answer.text,
        )],
    )


def _warn_stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _source_key(sources: list[MinimalSource]) -> list[tuple[str, int, int]]:
    return [(s.file_path, s.first_character_index, s.last_character_index) for s in sources]


def _load_previous(
    out_path: Path, warn: Callable[[str], None]
) -> StudentSearchResultsAndAnswer | None:
    from pydantic import ValidationError

    from ragdb.schemas import StudentSearchResultsAndAnswer

    if not out_path.exists():
        return None
    try:
        return StudentSearchResultsAndAnswer.model_validate_json(out_path.read_bytes())
    except (OSError, ValueError, ValidationError) as exc:
        warn(f"ignoring unreadable {out_path} ({first_line(exc)}): answering every question")
        return None


def answer_dataset(
    results: StudentSearchResults,
    source_texts: Callable[[MinimalSource], PromptSource | None],
    generator_factory: Callable[[], Answerer],
    out_path: Path,
    progress: Callable[[int, int], None] | None = None,
    warn: Callable[[str], None] = _warn_stderr,
) -> StudentSearchResultsAndAnswer:
    """Answer every question from its retrieved sources, saving after each answer.

    A rerun resumes: answers already in `out_path` for the same question and sources are
    kept (when they came from the same model). The model is loaded only if some question
    needs it. Citations in the saved answers use the rank of the source in retrieved_sources.
    """
    previous = _load_previous(out_path, warn)
    reusable: dict[str, MinimalAnswer] = {}
    if previous is not None:
        for old in previous.search_results:
            reusable[old.question_id] = old

    def reuse(item: MinimalSearchResults) -> MinimalAnswer | None:
        old = reusable.get(item.question_id)
        if old is None or old.question != item.question:
            return None
        if _source_key(old.retrieved_sources) != _source_key(item.retrieved_sources):
            return None
        if old.answer == NO_SOURCES_MESSAGE:
            return None  # cheap to redo, and the sources may be resolvable now
        return old

    items = results.search_results
    answers: dict[str, MinimalAnswer] = {}
    for item in items:
        kept = reuse(item)
        if kept is not None:
            answers[item.question_id] = kept
    model_name = previous.model if previous is not None and answers else None
    generator: Answerer | None = None

    from ragdb.schemas import MinimalAnswer, StudentSearchResultsAndAnswer

    def save() -> StudentSearchResultsAndAnswer:
        ordered = [answers[i.question_id] for i in items if i.question_id in answers]
        record = StudentSearchResultsAndAnswer(
            search_results=ordered, k=results.k, model=model_name
        )
        write_json_atomic(out_path, record)
        return record

    def load_generator() -> Answerer:
        nonlocal model_name
        loaded = generator_factory()
        if model_name is not None and model_name != loaded.model and answers:
            # One file records one model: answers from another one are redone, not mixed.
            warn(f"{out_path} holds answers from {model_name}; answering all again "
                 f"with {loaded.model}")
            answers.clear()
        model_name = loaded.model
        return loaded

    total = len(items)
    if progress is not None:
        progress(len(answers), total)
    index = 0
    while index < len(items):
        item = items[index]
        index += 1
        if item.question_id in answers:
            continue
        resolved: list[PromptSource] = []
        ranks: list[int] = []
        for rank, source in enumerate(item.retrieved_sources, 1):
            text = source_texts(source)
            if text is None:
                warn(
                    f"question {item.question_id}: source {source.file_path} "
                    f"[{source.first_character_index}:{source.last_character_index}] "
                    "is no longer in the index; skipped"
                )
                continue
            resolved.append(text)
            ranks.append(rank)
        if not resolved:
            answer_text = NO_SOURCES_MESSAGE
        else:
            if generator is None:
                had = len(answers)
                generator = load_generator()
                if len(answers) < had:
                    index = 0  # earlier answers were dropped: go round again
            generated = generator.answer(item.question, resolved)
            answer_text = generated.text
            # [n] past the resolved sources (named's definition) follow the retrieved ones,
            # never a retrieved source's rank.
            mapping = {i: rank for i, rank in enumerate(ranks, 1)} | {
                i: len(item.retrieved_sources) + i - len(ranks)
                for i in range(len(ranks) + 1, len(generated.sources) + 1)}
            if any(i != rank for i, rank in mapping.items()):
                answer_text = renumber_citations(answer_text, mapping)
        answers[item.question_id] = MinimalAnswer(
            question_id=item.question_id,
            question=item.question,
            question_str=item.question_str,
            retrieved_sources=item.retrieved_sources,
            answer=answer_text,
        )
        save()
        if progress is not None:
            progress(len(answers), total)
    return save()
