"""Pydantic models for what crosses ragdb's boundaries: dataset files in and result files out.

The names and fields follow the course assignment ragdb grew from, so its graders read our files.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, ValidationError


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


def describe(exc: ValidationError) -> str:
    """A validation failure in one line: how many problems, and where the first one is."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "top level"
    return f"{exc.error_count()} problems; first at {where}: {first['msg']}"
