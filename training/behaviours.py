"""Stage 3b: behaviour-named tests -> the code they exercise, as (question, chunk) pairs.

    python -m training.behaviours build [--only NAME ...] [--per-target 5]
    python -m training.behaviours candidates [--depth 30] [--mode lexical]

A test's name says a behaviour in words ("test_redirect_keeps_auth_header_on_same_host", Go's
"TestServeMux_RedirectsTrailingSlash", a Rust `#[test] fn retries_after_timeout()`, JavaScript's
`it("rejects a body over the limit", ...)`), and the implementation it calls is the code a user
asking for that behaviour wants: questions in a user's words (not the author's summary, as a doc
comment is) whose answer shares few words with them. For each training package (stage 2's
indexes; never an evaluated package) `build` reads every code file's definitions and references
with the current ragdb (ragdb.symbols.extract, in memory: the training indexes predate symbols
and are left as they are), and for each test:
- the target: the definitions outside tests (same package, by name) that the test body calls,
  through the reference's resolved name where it names one; the callee whose name shares the
  most content words with the test's name (at least one) wins, and a test with no such callee,
  or with two equally good ones in different chunks, is dropped;
- the question: the test's name (or `it`/`test` string) in plain words, the `test` prefix
  dropped, without the words of the target's own name (so it is no identifier lookup); at
  least MIN_WORDS content words remain, else the pair is dropped.
At most `per_target` tests per target chunk are kept (a reproducible sample), so one heavily
tested function does not fill the set. Pairs go to `training/data/test_questions.jsonl`, each a
QuestionRecord (source "test"; the target's package, version, path, characters, lines) with the
test's own path, lines and name beside it. `candidates` ranks them as stage 4 does
(data/train/candidates_tests.jsonl) and prints ragdb's own recall on them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from ragdb.symbols import Symbol
from training.fetch import Pin, read_pins
from training.questions import (DECLARATIONS, INDEXES, TEST_PATH, ChunkRow, QuestionRecord,
                                chunk_rows, is_code, read_records)

PAIRS = Path(__file__).parent / "data" / "test_questions.jsonl"
CANDIDATES = Path("data/train/candidates_tests.jsonl")
MIN_WORDS = 3
PER_TARGET = 5
# Kinds a test's callee may be: what a user asks to find.
TARGET_KINDS = frozenset({"function", "method", "class", "struct", "interface", "trait",
                          "type", "enum", "macro"})
# Words that carry no content of their own: they do not count towards MIN_WORDS.
STOP = frozenset("a an the of to in on for with is are be by at as and or it its if when "
                 "should does do can not no from into that this than then".split())
WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
JS_TEST = re.compile(r"(?<![\w$.])(?:it|test)(?:\.only|\.skip)?\(\s*(['\"`])((?:(?!\1)[^\\\n]|\\.)"
                     r"{3,200})\1\s*,")
JS_KINDS = frozenset({"javascript", "typescript", "tsx"})


@dataclass(frozen=True)
class TestCase:
    """One test: its name as words, where it is, and the names its body calls (with the
    qualified name each resolves to, '' where its file cannot tell)."""

    path: str
    name: str
    words: tuple[str, ...]
    start_line: int
    end_line: int
    calls: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Definition:
    """A definition outside tests and the chunk holding its first line."""

    name: str
    qualified: str
    chunk: ChunkRow


def words(name: str) -> list[str]:
    """An identifier or a sentence as lowercase words: snake_case, camelCase, digits apart."""
    return [w.lower() for w in WORD.findall(name)]


def test_words(name: str) -> tuple[str, ...]:
    """A test's name as words without its leading `test` (test_x, TestX, testX)."""
    found = words(name)
    while found and found[0] in ("test", "tests"):
        found = found[1:]
    return tuple(found)


def question_from(test: tuple[str, ...], target: str) -> str:
    """The test's words without the target's own name's words, or '' where fewer than
    MIN_WORDS content words are left (what is left would be no question)."""
    own = set(words(target))
    kept = [w for w in test if w not in own]
    return " ".join(kept) if len(content(kept)) >= MIN_WORDS else ""


def is_test_path(path: str) -> bool:
    """A file of tests, examples or benchmarks (stage 3's rule, and ragdb's by name)."""
    from ragdb.symbols import is_test_file

    return bool(TEST_PATH.search(path)) or is_test_file(path)


def chunk_at(chunks: list[ChunkRow], offset: int) -> ChunkRow | None:
    """The chunk of a file holding a character offset."""
    for chunk in chunks:
        if chunk.first_char <= offset < chunk.last_char:
            return chunk
    return None


def js_tests(text: str, path: str, refs: list[tuple[str, str, int]]) -> list[TestCase]:
    """`it("...", ...)` and `test("...", ...)` calls: the string and the calls inside the
    call's parentheses (balanced, strings and comments skipped roughly)."""
    found = []
    for match in JS_TEST.finditer(text):
        end = closing_paren(text, match.start() + text[match.start():].index("("))
        calls = tuple((name, target) for name, target, at in refs if match.end() <= at < end)
        first_line = text.count("\n", 0, match.start()) + 1
        found.append(TestCase(path, match.group(2), tuple(words(match.group(2))), first_line,
                              first_line + text.count("\n", match.start(), end), calls))
    return found


def closing_paren(text: str, opening: int) -> int:
    """The offset just past the parenthesis that closes the one at `opening`."""
    depth, i, quote = 0, opening, ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif text.startswith("//", i):
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def read_package(rows: list[ChunkRow]) -> tuple[list[TestCase], dict[str, list[Definition]]]:
    """Every test of a package's code files and every definition outside tests, by name."""
    from ragdb.symbols import SYMBOL_LANGUAGES, extract

    by_file: dict[str, list[ChunkRow]] = defaultdict(list)
    for row in rows:
        by_file[row.path].append(row)
    tests: list[TestCase] = []
    defs: dict[str, list[Definition]] = defaultdict(list)
    for path, chunks in sorted(by_file.items()):
        kind = chunks[0].file_kind
        if kind not in SYMBOL_LANGUAGES or DECLARATIONS.search(path):
            continue
        try:
            raw = Path(path).read_bytes()
        except OSError:
            continue
        if hashlib.sha256(raw).hexdigest() != chunks[0].file_sha256:
            continue  # the corpus changed since it was indexed: its chunks no longer fit
        text = raw.decode("utf-8", errors="replace")
        try:
            found = extract(text, kind, Path(path), path)
        except Exception:  # a file ragdb's extractor cannot read gives no pairs, nothing else
            continue
        if found is None:
            continue
        in_tests = is_test_path(path)
        if not in_tests:
            for symbol in found.symbols:
                chunk = chunk_at(chunks, symbol.first)
                if symbol.kind in TARGET_KINDS and chunk is not None and is_code(chunk):
                    defs[symbol.name].append(Definition(symbol.name, symbol.qualified, chunk))
        calls = [r for r in found.refs if r.kind == "call"]
        for index, symbol in enumerate(found.symbols):
            named_test = in_tests and symbol.kind in ("function", "method") \
                and symbol.name.lower().startswith("test")
            if symbol.kind != "test" and not named_test:
                continue
            body = tuple((r.name, r.target) for r in calls
                         if within(found.symbols, r.enclosing, index))
            tests.append(TestCase(path, symbol.name, test_words(symbol.name), symbol.start_line,
                                  symbol.end_line, body))
        if in_tests and kind in JS_KINDS:
            tests.extend(js_tests(text, path, [(r.name, r.target, r.first) for r in calls]))
    return tests, defs


def within(symbols: list[Symbol], enclosing: int, index: int) -> bool:
    """Whether the symbol `enclosing` is `index` or lies inside it."""
    seen = 0
    while enclosing >= 0 and seen < 64:
        if enclosing == index:
            return True
        enclosing = symbols[enclosing].parent
        seen += 1
    return False


def content(found: list[str] | tuple[str, ...]) -> set[str]:
    """The words that say something (no stop words, digits or single letters)."""
    return {w for w in found if w not in STOP and not w.isdigit() and len(w) > 1}


def candidates_for(name: str, target: str, defs: dict[str, list[Definition]]) -> list[Definition]:
    """The definitions a call may reach: the one its resolved name names exactly, else those
    of its name whose qualified name holds the owner the reference names (`String.new` is not
    this package's `new`; `attr.asdict`, a re-export, is `attr._funcs.asdict`)."""
    found = defs.get(name, [])
    exact = [d for d in found if target and d.qualified == target]
    if exact:
        return exact
    owner = target.split(".")[-2] if target.count(".") else ""
    if owner and owner != "()":
        return [d for d in found if owner in d.qualified.split(".")[:-1]]
    return found


def resolve(test: TestCase, defs: dict[str, list[Definition]]) -> Definition | None:
    """The test's callee: of the definitions its body calls, the one whose name shares the
    most content words with the test's (at least one: a callee sharing none is guesswork, an
    assertion helper as often as the code under test); None where there is none, or two
    equally good ones in different chunks."""
    best: dict[tuple[str, int], Definition] = {}
    best_score = 0
    named = content(test.words)
    for name, target in dict.fromkeys(test.calls):
        found = candidates_for(name, target, defs)
        score = len(named & content(words(name)))
        if not found or score < max(best_score, 1):
            continue
        if score > best_score:
            best, best_score = {}, score
        for d in found:
            best.setdefault((d.chunk.path, d.chunk.first_char), d)
    return next(iter(best.values())) if len(best) == 1 else None


@dataclass(frozen=True)
class Pair:
    """A QuestionRecord (source "test") with the test it came from."""

    record: QuestionRecord
    test_path: str
    test_start_line: int
    test_end_line: int
    test_name: str
    callee: str
    overlap: int  # words the callee's name shares with the test's

    def row(self) -> dict[str, object]:
        """One line of the dataset file."""
        return {**asdict(self.record), "test_path": self.test_path,
                "test_start_line": self.test_start_line, "test_end_line": self.test_end_line,
                "test_name": self.test_name, "callee": self.callee, "overlap": self.overlap}


def package_pairs(pin: Pin, rows: list[ChunkRow], per_target: int,
                  counts: dict[str, int] | None = None) -> list[Pair]:
    """A package's pairs, at most `per_target` tests a target chunk; `counts` tallies why
    tests were dropped."""
    tally = counts if counts is not None else defaultdict(int)
    tests, defs = read_package(rows)
    by_target: dict[tuple[str, int], list[Pair]] = defaultdict(list)
    for test in tests:
        tally["tests"] += 1
        target = resolve(test, defs)
        if target is None:
            tally["no single callee"] += 1
            continue
        question = question_from(test.words, target.name)
        if not question:
            tally["too few words"] += 1
            continue
        chunk = target.chunk
        record = QuestionRecord(pin.name, pin.version, pin.language, "test", question,
                                chunk.path, chunk.first_char, chunk.last_char, chunk.start_line,
                                chunk.end_line, chunk.kind, chunk.file_sha256)
        by_target[(chunk.path, chunk.first_char)].append(Pair(
            record, test.path, test.start_line, test.end_line, test.name, target.qualified,
            len(content(test.words) & content(words(target.name)))))
    # A question two targets share (two tests with the same words once each target's name is
    # gone) says nothing about which: it is dropped for both.
    targets_of: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for key, found in by_target.items():
        for pair in found:
            targets_of[pair.record.question].add(key)
    pairs: list[Pair] = []
    for key, found in sorted(by_target.items()):
        shared = [p for p in found if len(targets_of[p.record.question]) > 1]
        tally["question of two targets"] += len(shared)
        found = [p for p in found if len(targets_of[p.record.question]) == 1]
        unique = list({p.record.question: p for p in found}.values())
        if len(unique) > per_target:
            tally["over the per-target cap"] += len(unique) - per_target
            unique = random.Random(f"{pin.name}:{key}").sample(unique, per_target)
        tally["duplicate question"] += len(found) - len({p.record.question for p in found})
        pairs.extend(unique)
    tally["pairs"] += len(pairs)
    return pairs


def build(only: list[str] | None, per_target: int, out: Path = PAIRS) -> dict[str, int]:
    """Every indexed package's pairs into `out` (rewritten whole: it is derived, not paid for)."""
    counts: dict[str, int] = defaultdict(int)
    by_language: dict[str, int] = defaultdict(int)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for pin in read_pins():
            db = INDEXES / f"{pin.name}.db"
            if (only and pin.name not in only) or not db.is_file():
                continue
            pairs = package_pairs(pin, chunk_rows(db), per_target, counts)
            for pair in pairs:
                handle.write(json.dumps(pair.row(), ensure_ascii=False) + "\n")
            by_language[pin.language] += len(pairs)
            print(f"behaviours: {pin.name}: {len(pairs)} pairs", flush=True)
    print("behaviours: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print("behaviours: by language: " + ", ".join(f"{k} {v}" for k, v in
                                                  sorted(by_language.items())))
    return counts


def read_pairs(path: Path = PAIRS) -> list[QuestionRecord]:
    """The pairs as QuestionRecords (read_records keeps the record's own fields)."""
    return read_records(path)


def main(argv: list[str] | None = None) -> int:
    """`build` or `candidates`, as the module's docstring says."""
    from ragdb.retrieve import Mode
    from training import candidates

    parser = argparse.ArgumentParser(prog="python -m training.behaviours",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("action", choices=["build", "candidates"])
    parser.add_argument("--only", nargs="*", default=None, help="pin names (default: all)")
    parser.add_argument("--per-target", type=int, default=PER_TARGET)
    parser.add_argument("--depth", type=int, default=30)
    parser.add_argument("--mode", default="lexical", choices=[m.value for m in Mode])
    args = parser.parse_args(argv)
    if args.action == "build":
        build(args.only, args.per_target)
        return 0
    if not PAIRS.is_file():
        print(f"behaviours: no pairs at {PAIRS}: run `build` first", file=sys.stderr)
        return 2
    ranks = candidates.build(args.depth, Mode(args.mode), CANDIDATES, read_pairs())
    print(candidates.report(ranks, args.depth))
    return 0


if __name__ == "__main__":
    sys.exit(main())
