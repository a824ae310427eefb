"""The rules every door (CLI, HTTP, MCP, library) applies to what a user sends: k and question
text are refused with one clear line, the same way wherever they come in."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragdb.errors import RagdbError

if TYPE_CHECKING:
    from ragdb.schemas import UnansweredQuestion

MAX_K = 100


_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def one_line(text: str) -> str:
    """A path (or a name) as every door shows it: on one line, each character that is not
    printable (a newline or an escape sequence in a file name) escaped as JSON and Python
    escape it (`\\n`, `\\u001b`), so output can neither break a line nor drive a terminal. The
    stored path is untouched; the question page's ask.js (oneLine) escapes the same way."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _NAMED_ESCAPES.get(c) or (
        f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}") for c in text)


def check_path(path: Path | str) -> Path | str:
    """A file or folder as given, refused when empty: Path("") is ".", so `ragdb index
    "$DIR"` or `ragdb roots --remove "$DIR"` with DIR unset read the current folder (and
    removed it)."""
    if not str(path).strip():
        raise RagdbError("the path is empty: name a file or folder ('.' for the current one)")
    return path


def check_k(k: object, *, low: int = 1, high: int = MAX_K) -> int:
    """The one rule for k everywhere (CLI, HTTP, library): a whole number from low to high.

    A string of digits counts (query strings are text); booleans, floats and anything else do
    not, and neither does a number with more digits than any valid k.
    """
    value = k
    if isinstance(k, str) and k.strip().isdigit() and len(k.strip()) <= 6:
        value = int(k.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        shown = repr(k) if len(repr(k)) <= 40 else repr(k)[:37] + "..."
        raise RagdbError(f"k must be a whole number from {low} to {high}, got {shown}")
    return value


#: The longest question any door takes (a question of thousands of distinct words made a
#: search take tens of seconds).
MAX_QUESTION_CHARS = 4000


def check_text(value: str, what: str) -> str:
    """Text that is valid Unicode: a lone surrogate (what undecodable bytes in argv become, and
    what JSON's `"\\ud800"` is) cannot be encoded, embedded, hashed or stored."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise RagdbError(f"{what} is not valid Unicode (a lone surrogate, or bytes that are not "
                         "UTF-8)") from None
    return value


def check_question(question: object, *, what: str = "the question",
                   empty_ok: bool = False) -> str:
    """The one rule for question text on every door (CLI, HTTP, MCP, library): text, valid
    Unicode, at most MAX_QUESTION_CHARS characters, and not blank unless `empty_ok` (a dataset's
    blank question gets no sources)."""
    if not isinstance(question, str):
        raise RagdbError(f"{what} must be text, got {type(question).__name__}")
    if len(question) > MAX_QUESTION_CHARS:
        raise RagdbError(f"{what} is too long ({len(question)} characters, at most "
                         f"{MAX_QUESTION_CHARS})")
    check_text(question, what)
    if not empty_ok and not question.strip():
        raise RagdbError(f"{what} is empty: nothing to search for")
    return question


def check_dataset_questions(questions: Sequence[UnansweredQuestion]) -> list[str]:
    """A dataset's questions under the question rule (a blank one gets no sources), and ids
    that are valid Unicode (they are written back in the results): the texts to search."""
    texts = []
    for number, question in enumerate(questions, 1):
        texts.append(check_question(question.question, what=f"question {number}", empty_ok=True))
        check_text(question.question_id, f"the question_id of question {number}")
    return texts
