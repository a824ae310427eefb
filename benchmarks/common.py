"""What every benchmark shares: the host line, percentiles, the corpus, the question sets with
their bench indexes, and the answer benchmarks' sample and tuning questions."""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragdb.retrieve import Hit

CORPUS_TGZ = Path("../shared/corpus/vllm-0.10.1.tar.gz")
CORPUS = Path("data/raw/vllm-0.10.1")
DATASETS = Path("../shared/datasets/public")
BENCH_DIR = Path("data/bench")
SETS = ("docs", "code")
# Ten questions written in this project (5 docs, 5 code) about files sampled at random from
# those no public question cites: a check that settings tuned on the public sets generalise.
HELDOUT = Path("data/datasets/heldout_vllm.json")
# Forty questions (20 docs, 20 code) phrased without the words of their answer, about files drawn
# at random (random.Random(7)) among those no public or held-out question cites.
PARAPHRASED = Path("data/datasets/paraphrased_vllm.json")
#: Instruction sets that decide how fast int8/fp32 inference runs (MODELS.md, "Hosts differ").
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "amx_bf16")


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: a value that was actually observed."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def isa_flags() -> list[str]:
    """Which of ISA_FLAGS this CPU has (Linux; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
            break
    return [flag for flag in ISA_FLAGS if flag in flags]


def host_line() -> str:
    """The line every timing is printed under: timings only compare on the same kind of host."""
    flags = isa_flags()
    return (f"host: {cpu_model()}; {os.cpu_count()} cores; "
            f"{' '.join(flags) if flags else 'no AVX2/AVX-512/VNNI/AMX'}; "
            f"{platform.machine()}, Python {platform.python_version()}")


def ensure_corpus() -> None:
    if CORPUS.is_dir():
        return
    print(f"extracting {CORPUS_TGZ} into data/raw/", file=sys.stderr)
    with tarfile.open(CORPUS_TGZ) as tar:
        tar.extractall("data/raw", filter="data")


def dataset(name: str, answered: bool = True) -> Path:
    """A vLLM question set's file: "docs" and "code" (public), "heldout", "paraphrased"."""
    if name == "heldout":
        return HELDOUT
    if name == "paraphrased":
        return PARAPHRASED
    folder = "AnsweredQuestions" if answered else "UnansweredQuestions"
    return DATASETS / folder / f"dataset_{name}_public.json"


# The question sets every retrieval and answer benchmark reads, each on its own bench rag.db
# (`make bench` builds VLLM_DB, `make bench-repos` the others).

VLLM_DB = BENCH_DIR / "rag.db"
REPOS_SET = Path("../shared/datasets/repos")
REPOS_ROOT = Path("data/raw-repos")
REPOS = ("click", "orjson", "psutil", "web-vitals")
REPOS_DB = BENCH_DIR / "repos.db"
KINDS = ("docs", "code")
DIFFICULTIES = ("identifier", "paraphrase", "conceptual")
CUTS = (1, 5, 10)


@dataclass(frozen=True)
class HeldOut:
    """A held-out question set written from its sources alone: measured, never chosen on."""

    name: str  # the set's name in reports: "repos2", "repos3"
    folder: Path  # its fetch.sh, README and datasets
    root: Path  # where its fetch.sh unpacks the corpora, one folder per package
    names: tuple[str, ...]  # the packages, as the datasets are named (dataset_NAME.json)
    db: Path  # its own rag.db, built with the defaults


#: repos2 was written for issue 18 (benchmarks/repos2/README.md); repos3 the same way once repos2
#: had been read over many rounds (benchmarks/repos3/README.md); repos4 for issues 39 and 40, in
#: languages the reranker's training data covers and kept out of it (benchmarks/repos4/README.md).
REPOS2 = HeldOut("repos2", Path("benchmarks/repos2"), Path("data/raw-repos2"),
                 ("fastify", "cryptography", "greenlet"), BENCH_DIR / "repos2.db")
REPOS3 = HeldOut("repos3", Path("benchmarks/repos3"), Path("data/raw-repos3"),
                 ("ent", "starlette", "yard"), BENCH_DIR / "repos3.db")
REPOS4 = HeldOut("repos4", Path("benchmarks/repos4"), Path("data/raw-repos4"),
                 ("tornado", "undici", "lz4"), BENCH_DIR / "repos4.db")
HELD_OUT = (REPOS2, REPOS3, REPOS4)
#: repos5 for issue 39 the way repos4 was made (benchmarks/repos5/README.md). It is reached by
#: name (`bench_repos --sets repos5`, `bench_blocks answer --sets repos5`, evaluated_sets's
#: `only`), not with HELD_OUT, so the commands behind the figures already reported and the tests
#: that go through every held-out set run as they did.
REPOS5 = HeldOut("repos5", Path("benchmarks/repos5"), Path("data/raw-repos5"),
                 ("flask", "mercurius", "libonig"), BENCH_DIR / "repos5.db")
#: repos6 for issue 39, made as repos5 was (benchmarks/repos6/README.md) and, like it, reached by
#: name only (`--sets repos6`), so nothing that runs every held-out set changes.
REPOS6 = HeldOut("repos6", Path("benchmarks/repos6"), Path("data/raw-repos6"),
                 ("cattrs", "eslint-plugin-jest", "golang-github-hashicorp-hcl-v2"),
                 BENCH_DIR / "repos6.db")
#: repos7 for issue 39, made as repos6 was (benchmarks/repos7/README.md), reached by name only too.
REPOS7 = HeldOut("repos7", Path("benchmarks/repos7"), Path("data/raw-repos7"),
                 ("plumbum", "markdownlint", "criterion"), BENCH_DIR / "repos7.db")
BY_NAME = {held.name: held for held in (*HELD_OUT, REPOS5, REPOS6, REPOS7)}


@dataclass(frozen=True)
class Question:
    """One benchmark question with what the split and the tables group it by."""

    set_name: str  # a repository, or "vllm-docs" / "vllm-code"
    kind: str
    difficulty: str
    question_id: str
    question: str
    sources: tuple[tuple[str, int, int], ...]
    half: str = ""


def repo_questions(folder: Path = REPOS_SET, names: Sequence[str] = REPOS) -> list[Question]:
    """A set's questions, each in half A or B by the rank of its id (content is not looked at):
    within each repository's docs and its code questions the sorted ids alternate."""
    raw: list[Question] = []
    for name in names:
        path = folder / "AnsweredQuestions" / f"dataset_{name}.json"
        for q in json.loads(path.read_text())["rag_questions"]:
            raw.append(Question(name, q["kind"], q["difficulty"], q["question_id"], q["question"],
                                tuple((s["file_path"], s["first_character_index"],
                                       s["last_character_index"]) for s in q["sources"])))
    halves: dict[str, str] = {}
    for group in {(q.set_name, q.kind) for q in raw}:  # 5 + 5 of each repository's 10
        ordered = sorted(q.question_id for q in raw if (q.set_name, q.kind) == group)
        halves.update({qid: "AB"[i % 2] for i, qid in enumerate(ordered)})
    return [Question(**{**q.__dict__, "half": halves[q.question_id]}) for q in raw]


def vllm_questions() -> list[Question]:
    """The 199 public vLLM questions, docs then code, in their files' order."""
    from ragdb.schemas import RagDataset

    out = []
    for kind in KINDS:
        data = RagDataset.model_validate_json(dataset(kind).read_text())
        out += [Question(f"vllm-{kind}", kind, "synthetic", q.question_id, q.question,
                         tuple((s.file_path, s.first_character_index, s.last_character_index)
                               for s in q.sources))
                for q in data.rag_questions]
    return out


def reference_answers(folders: Sequence[Path] = ()) -> dict[str, str]:
    """Question id -> reference answer: the public vLLM sets and the repository sets in
    `folders` (each with AnsweredQuestions/dataset_*.json)."""
    answers: dict[str, str] = {}
    paths = [dataset(kind) for kind in KINDS]
    for folder in folders:
        paths += sorted((folder / "AnsweredQuestions").glob("dataset_*.json"))
    for path in paths:
        answers.update({q["question_id"]: q["answer"]
                        for q in json.loads(path.read_text())["rag_questions"]})
    return answers


def first_rank(question: Question, hits: Sequence[Hit]) -> int | None:
    """The 1-based rank of the first hit matching a reference (graders' rule), or None."""
    from ragdb.evaluate import IOU_THRESHOLD, iou
    from ragdb.schemas import MinimalSource

    refs = [MinimalSource(file_path=p, first_character_index=a, last_character_index=b)
            for p, a, b in question.sources]
    for rank, hit in enumerate(hits, 1):
        if any(iou(ref, hit.source) > IOU_THRESHOLD for ref in refs):
            return rank
    return None


def recall(ranks: Iterable[int | None], cut: int) -> float:
    values = list(ranks)
    return sum(1 for r in values if r is not None and r <= cut) / len(values) if values else 0.0


def cell(ranks: Sequence[int | None]) -> str:
    """R@1 / 5 / 10 as the tables print them."""
    return " / ".join(f"{recall(ranks, c):.3f}" for c in CUTS)


# The answer benchmarks' two disjoint question lists: the held-out sample strict readers judge
# (bench_accept) and the tuning questions answer settings are chosen on (bench_writer).

ACCEPT_DIR = BENCH_DIR / "accept"
WRITER_DIR = BENCH_DIR / "writer"
CONTEXT_DIR = WRITER_DIR / "context"
Asked = tuple[Question, str, Path]  # a question, its reference answer, the index it is asked of


def accept_sample(repos3: bool = False, repos4: bool = False, repos5: bool = False,
                  repos6: bool = False, repos7: bool = False) -> list[Asked]:
    """The held-out sample in a fixed order: public docs questions 51-100, the public code
    questions at positions 0 and 2 modulo 5, the repos set's half B, all of repos2; `repos3`
    appends the 60 questions of benchmarks/repos3 after those 190, `repos4` the 60 of
    benchmarks/repos4 after everything before it, `repos5` those of benchmarks/repos5, `repos6`
    those of benchmarks/repos6 and `repos7` those of benchmarks/repos7."""
    answers = reference_answers((REPOS_SET, REPOS2.folder, REPOS3.folder, REPOS4.folder,
                                 *((REPOS5.folder,) if repos5 else ()),
                                 *((REPOS6.folder,) if repos6 else ()),
                                 *((REPOS7.folder,) if repos7 else ())))
    public = vllm_questions()
    docs = [q for q in public if q.kind == "docs"][50:100]
    code = [q for i, q in enumerate(q for q in public if q.kind == "code") if i % 5 in (0, 2)]
    sets = [(docs + code, VLLM_DB),
            ([q for q in repo_questions() if q.half == "B"], REPOS_DB),
            (repo_questions(REPOS2.folder, REPOS2.names), REPOS2.db)]
    if repos3:
        sets.append((repo_questions(REPOS3.folder, REPOS3.names), REPOS3.db))
    if repos4:
        sets.append((repo_questions(REPOS4.folder, REPOS4.names), REPOS4.db))
    if repos5:
        sets.append((repo_questions(REPOS5.folder, REPOS5.names), REPOS5.db))
    if repos6:
        sets.append((repo_questions(REPOS6.folder, REPOS6.names), REPOS6.db))
    if repos7:
        sets.append((repo_questions(REPOS7.folder, REPOS7.names), REPOS7.db))
    return [(q, answers[q.question_id], db) for questions, db in sets for q in questions]


def tuning_questions() -> list[Asked]:
    """The 65 tuning questions, never one of the accept sample: every other public docs question
    of 1-50, every third code question outside the sample, every other one of half A."""
    answers = reference_answers((REPOS_SET,))
    public = vllm_questions()
    docs = [q for q in public if q.kind == "docs"][:50:2]
    code = [q for i, q in enumerate(q for q in public if q.kind == "code")
            if i % 5 not in (0, 2)][::3]
    repos = [q for q in repo_questions() if q.half == "A"][::2]
    chosen = ([(q, answers[q.question_id], VLLM_DB) for q in docs + code]
              + [(q, answers[q.question_id], REPOS_DB) for q in repos])
    held_out = {q.question_id for q, _, _ in accept_sample(repos3=True, repos4=True)}
    assert not held_out & {q.question_id for q, _, _ in chosen}
    return chosen


def answer_record(question: Question, reference: str, result: Any, seconds: float
                  ) -> dict[str, Any]:
    """One answer as the readers see it: with the text of the sources it cites."""
    cited = [{"n": n, "file_path": result.prompt_sources[n - 1].file_path,
              "text": result.prompt_sources[n - 1].text}
             for n in result.cited if 0 < n <= len(result.prompt_sources)]
    return {"id": question.question_id, "set": question.set_name, "kind": question.kind,
            "question": question.question, "reference_answer": reference,
            "answer": result.text, "style": result.style, "model": result.model,
            "check": result.check, "cited_sources": cited, "seconds": round(seconds, 2),
            "first_token_s": result.timings.get("first_token_s")}


def evaluated_sets(only: Sequence[str] = ()) -> list[tuple[str, Path, list[Question]]]:
    """Every evaluated set whose bench rag.db is built (or those named): (name, db, questions);
    the names are vllm, repos, repos2, repos3, repos4, and repos5, repos6 or repos7 only when
    named."""
    found: list[tuple[str, Path, list[Question]]] = []
    if VLLM_DB.exists():
        found.append(("vllm", VLLM_DB, vllm_questions()))
    if REPOS_DB.exists():
        found.append(("repos", REPOS_DB, repo_questions()))
    for held in (*HELD_OUT, *(h for h in (REPOS5, REPOS6, REPOS7) if h.name in only)):
        if held.db.exists():
            found.append((held.name, held.db, repo_questions(held.folder, held.names)))
    return [entry for entry in found if not only or entry[0] in only]
