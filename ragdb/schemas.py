"""Pydantic models for what crosses ragdb's boundaries: dataset files in and result files out.

The names and fields follow the course assignment ragdb grew from, so its graders read our files.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, Field, ValidationError


class MinimalSource(BaseModel):
    file_path: str
    first_character_index: int
    last_character_index: int


class UnansweredQuestion(BaseModel):
    question_id: str
    question: str


class AnsweredQuestion(UnansweredQuestion):
    sources: list[MinimalSource] = Field(default_factory=list)
    answer: str = ""
    difficulty: str | None = None
    is_valid: bool | None = None


class RagDataset(BaseModel):
    # Unanswered questions validate too: their sources and answer stay empty.
    rag_questions: list[AnsweredQuestion]


class MinimalSearchResults(BaseModel):
    question_id: str
    question: str
    question_str: str
    retrieved_sources: list[MinimalSource]


class MinimalAnswer(MinimalSearchResults):
    answer: str


class StudentSearchResults(BaseModel):
    search_results: list[MinimalSearchResults]
    k: int


class StudentSearchResultsAndAnswer(StudentSearchResults):
    search_results: list[MinimalAnswer]  # type: ignore[assignment]
    model: str | None = None


def filter_value(value: object) -> object:
    """A search filter (path, lang, exclude) as a client sent it: a string or a list of
    strings, or absent. Anything else is refused here: a number or a boolean once crashed the
    search, and an object was read as the list of its keys."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    try:
        shown = json.dumps(value)
    except (TypeError, ValueError):
        shown = type(value).__name__
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise ValueError(f"must be a string or a list of strings, got {shown}")


#: A filter argument at a boundary (the HTTP API, MCP's tools): the schema says string or
#: list of strings, and nothing else gets through (filter_value).
FilterValue = Annotated[str | list[str] | None, BeforeValidator(filter_value)]


class SearchFilters(BaseModel):
    """The filters of a search or answer request (other fields are not read here)."""

    path: FilterValue = None
    lang: FilterValue = None
    exclude: FilterValue = None


def first_problem(exc: ValidationError) -> str:
    """The first problem of a validation failure as `field message` (`path must be a string
    or a list of strings, got 5`)."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the value"
    return f"{where} {first['msg'].removeprefix('Value error, ')}"


def describe(exc: ValidationError) -> str:
    """A validation failure in one line: how many problems, and where the first one is."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "top level"
    message = first["msg"].removeprefix("Value error, ")
    return f"{exc.error_count()} problems; first at {where}: {message}"
