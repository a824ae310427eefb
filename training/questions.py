"""Stage 3: the questions training learns from, for ragdb's own chunks.

    python -m training.questions writer [--per-package 40] [--limit N]   # the offline writer
    python -m training.questions headings                                # no model
    python -m training.questions docs [--per-package 300]                # no model

Two sources, one file, `training/data/questions.jsonl` (kept in git: paid for once):
- `writer`: the offline writer (Qwen2.5-Coder-1.5B, `ragdb models install writer`) reads a
  sampled chunk and writes the plain-words question a developer who never read it would ask.
  About 10-30 s a question on 2 cores, so it runs in the background at low priority, over
  several runs: every run appends and skips the chunks already asked about.
- `headings`: a docs section whose heading is itself a question ("How do I ...?", "Why ...")
  gives that question for its section.
- `docs`: a definition's own doc comment or docstring (Python docstrings, `///`, `//`, `/** */`
  and `#` comment runs just above a definition, in every language) gives its first sentence as
  the question for that chunk; training shows the chunk without its doc comments (else the
  answer would be the passage that repeats the question), so the model learns plain words ->
  code. Free and plentiful, but written by the code's authors, not by its users.
Every record names the package, its version, the chunk (path, characters, lines, kind) and the
sha256 of the file it came from, so a changed corpus shows as a mismatch, not as silent drift.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from training.fetch import Pin, read_pins

INDEXES = Path("data/train/index")
QUESTIONS = Path(__file__).parent / "data" / "questions.jsonl"
# Chunks whose question the filter refused, with the reply: greedy decoding would write the
# same reply again, so a later run skips them instead of paying for it twice.
REJECTED = Path(__file__).parent / "data" / "rejected.jsonl"
CODE_KINDS = frozenset({"function", "method", "class", "impl", "struct", "interface", "trait",
                        "enum", "type", "module", "macro", "constant", "definition"})
MIN_CHARS, MAX_SHOWN = 160, 1500
CODE_SHARE = 0.75  # users ask about code more than docs (issue 39's sets: half and half, at least)
QUESTION_HEADING = re.compile(
    r"^(how|why|what|when|where|which|can|should|do|does|is|are)\b.*\??$", re.IGNORECASE)
TEST_PATH = re.compile(r"(^|/)(tests?|testing|spec|__tests__|testdata|benchmarks?|examples?)/"
                       r"|(^|/)test_[^/]*$|_test\.[a-z]+$|\.(test|spec)\.[jt]sx?$")

SYSTEM = "You write the questions developers ask about a codebase they use but have not read."
PROMPT = """Project: {package} ({language}). One part of it, {path} lines {start}-{end}:

```
{text}
```

Write the one question a developer using {package}, who has never read this code, would type \
into a search box and that this part answers: about what the code does, when, or why, in plain \
words, at most 20 words. Never quote a function, class, method, file or variable name. \
Reply with the question only."""


@dataclass(frozen=True)
class ChunkRow:
    """A chunk as ragdb indexed it, with the file it lies in."""

    path: str
    first_char: int
    last_char: int
    start_line: int
    end_line: int
    kind: str
    context: str
    text: str
    file_sha256: str
    file_kind: str


@dataclass(frozen=True)
class QuestionRecord:
    """One training question and the chunk that answers it."""

    package: str
    version: str
    language: str
    source: str  # writer | heading | doc
    question: str
    path: str
    first_char: int
    last_char: int
    start_line: int
    end_line: int
    chunk_kind: str
    file_sha256: str
    model: str = ""
    seconds: float = 0.0

    def key(self) -> tuple[str, str, int, str]:
        """What makes a record a duplicate: the same chunk asked about by the same source."""
        return (self.package, self.path, self.first_char, self.source)


def chunk_rows(db: Path) -> list[ChunkRow]:
    """Every chunk of one package's index, read with the standard library (plain tables)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind, "
            "c.context, c.text, f.sha256, f.kind FROM chunks c JOIN files f ON f.id = c.file_id "
            "ORDER BY f.path, c.first_char").fetchall()
    return [ChunkRow(*row) for row in rows]


def is_code(row: ChunkRow) -> bool:
    """Code as users mean it: a definition in a programming language, tests and examples apart."""
    prose = {"markdown", "rst", "text", "asciidoc", "org", "rdoc", "mdx"}
    return row.file_kind not in prose and not TEST_PATH.search(row.path)


def sample_chunks(rows: list[ChunkRow], count: int, seed: str) -> list[ChunkRow]:
    """A reproducible sample: mostly code definitions, some docs sections, never tests."""
    usable = [r for r in rows if len(r.text.strip()) >= MIN_CHARS and not TEST_PATH.search(r.path)]
    code = [r for r in usable if is_code(r)]
    docs = [r for r in usable if not is_code(r)]
    chooser = random.Random(seed)
    n_code = min(len(code), round(count * CODE_SHARE))
    n_docs = min(len(docs), count - n_code)
    n_code = min(len(code), count - n_docs)
    return chooser.sample(code, n_code) + chooser.sample(docs, n_docs)


def heading_questions(rows: list[ChunkRow], pin: Pin) -> Iterator[QuestionRecord]:
    """Docs sections whose own heading is a question, asked as that heading (a section cut
    into several chunks is asked once, for its first chunk)."""
    seen: set[tuple[str, str]] = set()
    for row in rows:
        if is_code(row) or not row.context:
            continue
        heading = row.context.split(">")[-1].strip().strip("#").strip()
        if 12 <= len(heading) <= 160 and QUESTION_HEADING.match(heading) \
                and len(row.text.strip()) >= MIN_CHARS:
            question = heading if heading.endswith("?") else heading + "?"
            if (row.path, question) in seen:
                continue
            seen.add((row.path, question))
            yield QuestionRecord(pin.name, pin.version, pin.language, "heading", question,
                                 row.path, row.first_char, row.last_char, row.start_line,
                                 row.end_line, row.kind, row.file_sha256)


PY_DOCSTRING = re.compile(
    r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+\w+[^\n]*:[ \t]*\n[ \t]*[rRuU]?(\"\"\"|\'\'\')"
    r"(.*?)\1", re.MULTILINE | re.DOTALL)
# A run of comment lines ending just above a definition. What counts as a definition's first
# line, by language: a keyword, or (C family) a declarator at the start of a line.
DEFINITION_START = {
    "go": r"(?:func|type|var|const)\b",
    "rust": r"(?:#\[|pub\b|fn\b|struct\b|enum\b|trait\b|impl\b|type\b|const\b|static\b|mod\b|"
            r"macro_rules!|unsafe\b|async\b)",
    "javascript": r"(?:export\b|async\b|function\b|class\b|const\b|let\b|var\b|static\b|get\b|"
                  r"set\b|[A-Za-z_$][\w$]*\s*\([^)]*\)\s*\{|[A-Za-z_$][\w$]*\s*[:=]\s*(?:async\s*)?"
                  r"(?:function|\())",
    "c": r"(?:[A-Za-z_][\w \t\*]*[\w\*][ \t\*]+[A-Za-z_]\w*[ \t]*\(|typedef\b|struct\b|enum\b|"
         r"#[ \t]*define\b|static\b|extern\b)",
}
DEFINITION_START["typescript"] = DEFINITION_START["javascript"] + r"|(?:interface|type|enum|" \
    r"abstract|public|private|protected|readonly)\b"
DEFINITION_START["cpp"] = DEFINITION_START["c"] + r"|(?:class|template|namespace)\b"
COMMENT_RUNS = {language: re.compile(
    r"((?>^[ \t]*(?://+|\*|/\*\*?)[^\n]*\n)+)[ \t]*(?=" + start + ")", re.MULTILINE)
    for language, start in DEFINITION_START.items()}
DOC_MARKUP = re.compile(r"^[ \t]*(?:///?|#|\*/?|/\*\*?)[ \t]?|\*/[ \t]*$", re.MULTILINE)
DECLARATIONS = re.compile(r"\.d\.[cm]?ts$")  # a package's type declarations repeat its code
FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)", re.DOTALL)


def doc_sentence(comment: str) -> str:
    """The first sentence of a doc comment as plain words, or '' where it is not one (a
    licence, a directive, a parameter list, a commented-out line of code)."""
    text = DOC_MARKUP.sub("", comment).strip()
    text = text.split("\n\n")[0]
    match = FIRST_SENTENCE.match(" ".join(text.split()))
    sentence = match.group(1) if match else " ".join(text.split())
    sentence = sentence.lstrip("/ ").strip()
    words = sentence.split()
    letters = sum(ch.isalpha() or ch == " " for ch in sentence)
    if not 5 <= len(words) <= 40 or letters < 0.85 * len(sentence) or sentence.endswith(":") \
            or re.search(
            r"[{};=]|\b(copyright|licen[cs]e|todo|fixme|xxx|noqa|eslint)\b|[:@]param\b|"
            r"https?://", sentence, re.IGNORECASE):
        return ""
    return sentence


def file_language(file_kind: str) -> str | None:
    """The doc-comment grammar a file kind is read with (None: not code ragdb reads here)."""
    return {"python": "python", "go": "go", "rust": "rust", "javascript": "javascript",
            "typescript": "typescript", "tsx": "typescript", "c": "c", "cpp": "cpp",
            "cuda": "cpp", "java": "cpp"}.get(file_kind)


def doc_comments(text: str, language: str) -> list[str]:
    """A chunk's doc comments (docstrings for Python), in order."""
    if language == "python":
        return [m.group(2) for m in PY_DOCSTRING.finditer(text)]
    return [m.group(1) for m in COMMENT_RUNS[language].finditer(text)]


def strip_doc_comments(text: str, language: str | None) -> str:
    """A chunk without its doc comments: what training shows for a `doc` question, so the
    passage never repeats the question's words verbatim."""
    if language == "python":
        return PY_DOCSTRING.sub(
            lambda m: m.group(0)[:m.start(1) - m.start(0) - 3].rstrip() + "\n", text)
    if language in COMMENT_RUNS:
        return COMMENT_RUNS[language].sub("", text)
    return text


def doc_questions(rows: list[ChunkRow], pin: Pin, count: int) -> Iterator[QuestionRecord]:
    """Up to `count` chunks of code (tests apart) with a doc comment, each asked as the
    comment's first sentence (one question a chunk; a reproducible sample)."""
    found: list[tuple[ChunkRow, str]] = []
    for row in rows:
        language = file_language(row.file_kind)
        if language is None or not is_code(row) or len(row.text.strip()) < MIN_CHARS \
                or DECLARATIONS.search(row.path):
            continue
        for comment in doc_comments(row.text, language):
            sentence = doc_sentence(comment)
            if sentence:
                found.append((row, sentence))
                break
    chooser = random.Random(f"docs-{pin.name}-{pin.version}")
    for row, sentence in chooser.sample(found, min(count, len(found))):
        yield QuestionRecord(pin.name, pin.version, pin.language, "doc", sentence, row.path,
                             row.first_char, row.last_char, row.start_line, row.end_line,
                             row.kind, row.file_sha256)


def read_records(path: Path = QUESTIONS) -> list[QuestionRecord]:
    """The questions so far (none if the file is not there yet); fields a record does not
    have (training.behaviours keeps the test's place beside its record) are left out."""
    if not path.is_file():
        return []
    keep = set(QuestionRecord.__dataclass_fields__)
    return [QuestionRecord(**{k: v for k, v in json.loads(line).items() if k in keep})
            for line in path.read_text().splitlines() if line]


def rejected_keys(path: Path = REJECTED) -> set[tuple[str, str, int, str]]:
    """The chunks whose writer question was refused (record keys, source "writer")."""
    if not path.is_file():
        return set()
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return {(r["package"], r["path"], r["first_char"], "writer") for r in rows}


def append_record(record: QuestionRecord, path: Path = QUESTIONS) -> None:
    """One line appended and flushed, so a stopped run keeps every question it paid for."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(asdict(record), ensure_ascii=False) + "\n")


# The openings a question is held to, one drawn per chunk: greedy decoding with a free choice
# opened every question the same way.
OPENINGS = ("How do I", "How can I", "How does", "Why does", "Where does", "What happens when",
            "When does", "Is it possible to", "What does", "How is")
QUESTION_TAIL = r" [A-Za-z0-9 ,'-]{8,140}\?"
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]*|\w+\(")


def clean_question(text: str, source_text: str = "") -> str:
    """The model's reply as one plain-words question, or '' where it wrote something else
    (a quoted identifier of the chunk makes the question a lexical match, not a lesson)."""
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    line = re.sub(r"^(question|q)\s*[:.]\s*", "", line, flags=re.IGNORECASE).strip(" \"'*-")
    words = line.split()
    if not 4 <= len(words) <= 30 or not line.endswith("?") or "`" in line:
        return ""
    if re.search(r"\b(purpose|snippet|(this|the|given) (code|function|part|file|class))\b",
                 line, re.IGNORECASE):
        return ""
    if any(name in source_text for name in IDENTIFIER.findall(line)):
        return ""
    return line


class Writer:
    """The offline writer loaded once, asked greedily for one short line."""

    def __init__(self) -> None:
        import openvino_genai

        from ragdb.generate.models import writer_model
        from ragdb.generate.prompt import render_chat
        from ragdb.resources import models_dir

        resolved = writer_model(models_dir())
        self.name = resolved.name
        self._pipe = openvino_genai.LLMPipeline(str(resolved.path), "CPU")
        self._render = render_chat
        self._config = self._pipe.get_generation_config()
        self._config.max_new_tokens = 48
        self._config.do_sample = False
        self._config.apply_chat_template = False
        # The 1.5B model asks "What is the purpose of the `x` function?" whatever the prompt
        # says (measured: 7 of 7); a grammar holds it to a plain-words question instead.
        self._structured = openvino_genai.StructuredOutputConfig

    def ask(self, package: str, language: str, row: ChunkRow) -> str:
        """The question the model writes for one chunk (cut to MAX_SHOWN characters), opened
        with one of OPENINGS drawn from the chunk's place, so a rerun asks the same."""
        opening = random.Random(f"{row.path}:{row.first_char}").choice(OPENINGS)
        self._config.structured_output_config = self._structured(
            regex=opening + QUESTION_TAIL)  # OPENINGS hold no regex syntax
        text = row.text if len(row.text) <= MAX_SHOWN else row.text[:MAX_SHOWN] + "\n..."
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": PROMPT.format(
                        package=package, language=language, path=row.path,
                        start=row.start_line, end=row.end_line, text=text)}]
        prompt = self._render(self._pipe.get_tokenizer(), messages)
        return str(self._pipe.generate(prompt, self._config))


def run_writer(per_package: int, limit: int | None, only: list[str] | None) -> int:
    """Ask the writer about sampled chunks of every indexed package, round-robin, resumable."""
    done = {r.key() for r in read_records()} | rejected_keys()
    plans: list[tuple[Pin, list[ChunkRow]]] = []
    for pin in read_pins():
        db = INDEXES / f"{pin.name}.db"
        if (only and pin.name not in only) or not db.is_file():
            continue
        sample = sample_chunks(chunk_rows(db), per_package, seed=f"{pin.name}-{pin.version}")
        todo = [r for r in sample if (pin.name, r.path, r.first_char, "writer") not in done]
        if todo:
            plans.append((pin, todo))
    if not plans:
        print("questions: nothing to ask (index packages with python -m training.index)")
        return 0
    writer = Writer()
    asked = 0
    # Round-robin over packages, so an early stop still covers every language.
    for step in range(max(len(todo) for _, todo in plans)):
        for pin, todo in plans:
            if step >= len(todo) or (limit is not None and asked >= limit):
                continue
            row = todo[step]
            started = time.monotonic()
            reply = writer.ask(pin.name, pin.language, row)
            question = clean_question(reply, row.text)
            seconds = round(time.monotonic() - started, 1)
            asked += 1
            if not question:
                with REJECTED.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps({"package": pin.name, "path": row.path,
                                             "first_char": row.first_char, "reply": reply},
                                            ensure_ascii=False) + "\n")
                continue
            append_record(QuestionRecord(
                pin.name, pin.version, pin.language, "writer", question, row.path,
                row.first_char, row.last_char, row.start_line, row.end_line, row.kind,
                row.file_sha256, writer.name, seconds))
            print(f"[{asked}] {pin.name} {row.path}:{row.start_line}-{row.end_line} "
                  f"({seconds} s): {question}", flush=True)
    return 0


def run_headings(only: list[str] | None) -> int:
    """Add every question-shaped heading of the indexed packages' docs."""
    done = {r.key() for r in read_records()}
    added = 0
    for pin in read_pins():
        db = INDEXES / f"{pin.name}.db"
        if (only and pin.name not in only) or not db.is_file():
            continue
        for record in heading_questions(chunk_rows(db), pin):
            if record.key() not in done:
                append_record(record)
                done.add(record.key())
                added += 1
    print(f"questions: {added} heading questions added")
    return 0


def run_docs(per_package: int, only: list[str] | None, path: Path = QUESTIONS) -> int:
    """Add doc-comment questions of the indexed packages' code, at most per_package each."""
    done = {r.key() for r in read_records(path)}
    added = 0
    for pin in read_pins():
        db = INDEXES / f"{pin.name}.db"
        if (only and pin.name not in only) or not db.is_file() or db.stat().st_size == 0:
            continue
        for record in doc_questions(chunk_rows(db), pin, per_package):
            if record.key() not in done:
                append_record(record, path)
                done.add(record.key())
                added += 1
    print(f"questions: {added} doc-comment questions added")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`writer`, `headings` or `docs`, as the module's docstring says."""
    parser = argparse.ArgumentParser(prog="python -m training.questions",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("source", choices=["writer", "headings", "docs"])
    parser.add_argument("--per-package", type=int, default=40)
    parser.add_argument("--limit", type=int, default=None, help="questions to ask this run")
    parser.add_argument("--only", nargs="*", default=None, help="pin names (default: all)")
    args = parser.parse_args(argv)
    if args.source == "headings":
        return run_headings(args.only)
    if args.source == "docs":
        return run_docs(args.per_package, args.only)
    try:
        return run_writer(args.per_package, args.limit, args.only)
    except KeyboardInterrupt:
        print("questions: stopped; every question written so far is kept", file=sys.stderr)
        return 130


def summary(records: list[QuestionRecord]) -> dict[str, Any]:
    """Counts by source and language, for the model card."""
    by: dict[str, Any] = {}
    for record in records:
        by.setdefault(record.source, {}).setdefault(record.language, 0)
        by[record.source][record.language] += 1
    return by


if __name__ == "__main__":
    sys.exit(main())
