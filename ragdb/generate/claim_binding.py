"""A claim bound to its place: a writer's sentence that gives a default must find the value
bound to that name as its default in the block it cites, not only the block's words in its
order. It is the one word-level rule whose removal changed a kept sentence of the saved answers
under the order rule (benchmarks/README.md, "`ragdb/generate/` size"). Here too is what the
check and cleaning read: a cited block, the citation and inline-code marks of a written answer.

Not kept: rules written from single sentences of sample answers, and those the order rule made
redundant (benchmarks/README.md, "Not kept")."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragdb.generate.support import FRAME
from ragdb.tokenize import STOPWORDS

CITE = re.compile(r"[ \t]*\[(\d{1,3})\]")
INLINE = re.compile(r"`([^`\n]+)`")


@dataclass(frozen=True)
class CitedSource:
    """A source as the check sees it: its number in the answer, path and full text."""

    number: int
    file_path: str
    text: str


def appears(token: str, text: str, *, ignore_case: bool = False) -> bool:
    flags = re.I if ignore_case else 0
    head = r"(?<![\w])" if token[:1].isalnum() or token[:1] == "_" else ""
    tail = r"(?![\w])" if token[-1:].isalnum() or token[-1:] == "_" else ""
    return re.search(head + re.escape(token) + tail, text, flags) is not None


_DEFAULT_WORD = re.compile(r"\bdefault(?:s|ed)?\b", re.I)
# Where a sentence turns from what it is about to what that is: "... is `None`", "defaults to".
_COPULA = re.compile(r"\s(?:is|are|to|of)\s|\s?=\s?")
_VALUE = re.compile(r"`([^`\n]+)`|\b(True|False|None|null|true|false)\b"
                    r"|(?<![\w.])(-?\d+(?:\.\d+)*)(?![\w])")


def default_unbound(text: str, cited: list[CitedSource], question: str) -> str | None:
    """A sentence that gives a default ("the default of `x` is `None`") must find the value
    bound to that name as its default in a cited source: on one line with the name, assigned
    to it (`x: T = None`, `x=None`, `x: None`) or next to the word "default" (`default=None`
    up to three lines below the name, "x (default: None)"). Returns why not; None where it
    is, or the sentence names no word of the question or no value."""
    prose = CITE.sub(" ", text)
    if not _DEFAULT_WORD.search(prose):
        return None
    for copula in reversed(list(_COPULA.finditer(prose))):
        value_match = _VALUE.search(prose, copula.end())
        if value_match is None:
            continue
        value = next(g for g in value_match.groups() if g is not None).strip().strip("'\"")
        names = [n for n in dict.fromkeys(_default_names(prose[:copula.start()], question))
                 if n != value and n.lower() != "default"]
        if not names or not value:
            return None
        bound = [name for name in names if any(_bound(name, value, s.text) for s in cited)]
        where = ", ".join(f"[{s.number}]" for s in cited)
        if not bound:
            return f"{where} does not give {value} as the default of {names[0]}"
        return None
    return None


def _default_names(prose: str, question: str) -> list[str]:
    """The words the part of a sentence before its value shares with the question (the `dst`
    of "the dst parameter")."""
    names = [w for w in re.findall(r"\b[A-Za-z_]\w+\b", prose)
             if appears(w, question) and w.lower() not in STOPWORDS and w.lower() not in FRAME]
    return [n.strip("`") for n in names if len(n.strip("`")) > 1]


def _bound(name: str, value: str, text: str) -> bool:
    lines = text.split("\n")
    esc_name = re.escape(name)
    head = r"(?<![\w])" if name[:1].isalnum() or name[:1] == "_" else r"(?<![\w-])"
    esc_value = re.escape(value)
    tail = r"(?![\w])" if value[-1:].isalnum() or value[-1:] == "_" else ""
    assigned = re.compile(head + esc_name + r"(?![\w-])(?:[^=\n]*?[=:][ \t]*[\"'(\[]?[ \t]*"
                          r"|[\"'][ \t]*,[ \t]*)" + esc_value + tail)
    has_value = re.compile(r"(?<![\w])" + esc_value + tail if value[:1].isalnum()
                           or value[:1] in "_-" else esc_value + tail)
    has_name = re.compile(head + esc_name + r"(?![\w-])")
    for i, line in enumerate(lines):
        if not has_value.search(line):
            continue
        if assigned.search(line):
            return True
        # (off: 1 more sentence dropped of the repos3 readings)
        if _DEFAULT_WORD.search(line) and any(has_name.search(x)
                                              for x in lines[max(0, i - 3):i + 1]):
            return True
    return False
