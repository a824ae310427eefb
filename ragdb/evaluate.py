"""Recall@k with the assignment graders' rule, and the graders' validity checks.

A retrieved source matches a reference when the path is identical and the IoU of the character
ranges is above 0.05. A question scores the share of its references found in its first k
results; the score is the mean over every dataset question (a missing question counts 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: `ragdb index` imports MAX_K, not pydantic
    from ragdb.schemas import MinimalSource, RagDataset, StudentSearchResults

IOU_THRESHOLD = 0.05
KS = (1, 3, 5, 10)
MAX_K = 10
MAX_SOURCE_CHARS = 2000


def iou(a: MinimalSource, b: MinimalSource) -> float:
    """Intersection over union of two character ranges; 0 for different files."""
    if a.file_path != b.file_path:
        return 0.0
    inter = min(a.last_character_index, b.last_character_index) - max(
        a.first_character_index, b.first_character_index
    )
    if inter <= 0:
        return 0.0
    union = (
        (a.last_character_index - a.first_character_index)
        + (b.last_character_index - b.first_character_index)
        - inter
    )
    return inter / union if union > 0 else 0.0


def found_share(references: list[MinimalSource], retrieved: list[MinimalSource]) -> float:
    """Share of references that some retrieved source matches."""
    if not references:
        return 0.0
    found = sum(1 for ref in references if any(iou(ref, got) > IOU_THRESHOLD for got in retrieved))
    return found / len(references)


@dataclass
class Report:
    recall: dict[int, float]
    questions: int
    answered: int
    problems: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.problems


def validate(results: StudentSearchResults) -> list[str]:
    """What the graders would reject in a results file."""
    problems: list[str] = []
    if not 1 <= results.k <= MAX_K:
        problems.append(f"k is {results.k}; it must be between 1 and {MAX_K}")
    for item in results.search_results:
        if len(item.retrieved_sources) > results.k:
            problems.append(
                f"question {item.question_id} has {len(item.retrieved_sources)} sources, "
                f"more than k={results.k}"
            )
        for source in item.retrieved_sources:
            length = source.last_character_index - source.first_character_index
            if length > MAX_SOURCE_CHARS or length < 0:
                problems.append(
                    f"question {item.question_id}: source {source.file_path} "
                    f"[{source.first_character_index}:{source.last_character_index}] is "
                    f"{length} characters (at most {MAX_SOURCE_CHARS})"
                )
    return problems


def evaluate(results: StudentSearchResults, dataset: RagDataset) -> Report:
    by_id = {item.question_id: item.retrieved_sources for item in results.search_results}
    questions = dataset.rag_questions
    recall: dict[int, float] = {}
    for k in KS:
        total = 0.0
        for question in questions:
            retrieved = by_id.get(question.question_id)
            if retrieved:
                total += found_share(question.sources, retrieved[:k])
        recall[k] = total / len(questions) if questions else 0.0
    answered = sum(1 for q in questions if q.question_id in by_id)
    return Report(recall=recall, questions=len(questions), answered=answered,
                  problems=validate(results))
