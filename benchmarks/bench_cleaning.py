"""Models' raw output, saved before cleaning, and cleaning (ragdb/generate/cleaning.py)
measured on it (issue 39: every saved draft and answer was written after cleaning, so no
measurement the project had could see a rule of it).

`raw` answers the first tuning questions (common.tuning_questions) with a model writing
(`--style generate`) and saves, for each answer, what the model wrote before cleaning and the
pieces it streamed, into data/bench/writer/raw_outputs.json (appended, tagged with the model);
`replay` runs cleaning over every saved raw output and prints, per output, the cleaned answer,
its citations and every view the stream showed while it came: the same bytes before and after
a change to cleaning.py say the change changed no answer and no stream.

    uv run --frozen python -m benchmarks.bench_cleaning raw --model offline --limit 40
    uv run --frozen python -m benchmarks.bench_cleaning raw --model writer --limit 16
    uv run --frozen python -m benchmarks.bench_cleaning raw --model smollm2@http://127.0.0.1:8080/v1
    uv run --frozen python -m benchmarks.bench_cleaning replay > after.txt
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from benchmarks.common import WRITER_DIR, host_line, tuning_questions
from ragdb import RagDB
from ragdb.generate import cleaning, generator
from ragdb.retrieve import Mode

RAW = WRITER_DIR / "raw_outputs.json"


def raw(model: str, limit: int, k: int) -> None:
    """Answer the first `limit` tuning questions with `model` writing; save its raw output."""
    saved: list[dict[str, Any]] = json.loads(RAW.read_text()) if RAW.exists() else []
    pieces: list[str] = []
    outputs: list[dict[str, Any]] = []
    clean, piece = generator.clean_answer, generator.TokenStream.piece

    def recording_clean(text: str, n_sources: int, *, truncated: bool = False
                        ) -> tuple[str, list[int]]:
        outputs.append({"model": model, "raw": text, "n_sources": n_sources,
                        "truncated": truncated, "pieces": list(pieces)})
        pieces.clear()
        return clean(text, n_sources, truncated=truncated)

    def recording_piece(self: generator.TokenStream, piece_text: str) -> None:
        pieces.append(piece_text)
        piece(self, piece_text)

    generator.clean_answer = recording_clean  # type: ignore[assignment]
    generator.TokenStream.piece = recording_piece  # type: ignore[method-assign,assignment]
    rags: dict[Any, RagDB] = {}
    for number, (question, _, db) in enumerate(tuning_questions()[:limit], 1):
        if not db.exists():
            continue
        rag = rags.setdefault(db, RagDB(db, use_cache=False, model=model))
        hits = rag.search(question.question, k, Mode.hybrid)
        started = time.perf_counter()
        found = rag.answer_from(question.question, hits, k=k, mode=Mode.hybrid,
                                style="generate")
        for output in outputs:
            output["question"] = question.question
        saved += outputs
        outputs.clear()
        RAW.write_text(json.dumps(saved, indent=1) + "\n")
        print(f"{number:3d} {time.perf_counter() - started:6.1f} s {found.style:10s} "
              f"{question.question[:60]}", flush=True)
    for rag in rags.values():
        rag.close()
    print(host_line())
    print(f"wrote {RAW}")


def replay() -> None:
    """Every saved raw output through cleaning: the answer, its citations, each stream view."""
    for number, output in enumerate(json.loads(RAW.read_text()), 1):
        text, cited = cleaning.clean_answer(output["raw"], output["n_sources"],
                                            truncated=output["truncated"])
        views: list[tuple[str, bool]] = []
        so_far = ""
        for piece in output["pieces"]:
            so_far += piece
            views.append(cleaning.stream_view(so_far, output["n_sources"]))
        print(json.dumps({"n": number, "model": output["model"], "answer": text,
                          "cited": cited, "views": views}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("raw", "replay"))
    parser.add_argument("--model", default="offline", help="raw: the model that writes")
    parser.add_argument("--limit", type=int, default=20, help="raw: how many questions")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    if args.action == "raw":
        raw(args.model, args.limit, args.k)
    else:
        replay()


if __name__ == "__main__":
    main()
