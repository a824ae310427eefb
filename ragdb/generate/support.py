"""Whether a written sentence's own words are in the source it cites, together.

A small writer's unsupported claims are mostly made of ordinary words: "returns a dictionary"
where the source says a named tuple, "the three patterns are inference, deployment and
training" citing a page about configuration, "is 512" where the source's 512 is about something
else. Identifiers and numbers alone do not catch these. So the words a sentence adds to the
question (its content words, less stopwords, the question's own words and words that only
frame a claim) are looked up in the cited source, lightly stemmed: all but a few must be there,
and in one stretch of it (a few lines), not scattered over it.

The limits (MAX_MISSING, WINDOW_*) were chosen on tuning questions the accept sample never uses
(benchmarks/bench_writer.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ragdb.tokenize import STOPWORDS, split_identifier

_TOKEN = re.compile(r"[^\W_]+(?:_+[^\W_]+)*")
_CITE = re.compile(r"\[\d{1,3}\]")
# Words that frame a claim rather than make one: what kind of thing the answer is ("the
# default value of the parameter"), how it is reached ("you can use", "allows you to") and
# talk about the text ("as shown", "the following"). A sentence made of these and the
# question's words says nothing the question did not.
FRAME = frozenset("""
    answer question default defaults value values parameter parameters argument arguments option
    options flag flags setting settings attribute attributes field fields property properties
    variable variables method methods function functions class classes module modules file files
    type types object objects instance instances key keys name names named command commands
    call calls called return returns returned thing things kind way case cases part parts
    information detail details example examples following follows above below shown show shows
    mention mentions mentioned state states stated say says said describe describes described
    indicate indicates indicated refer refers referred see note noted given give gives find
    found provide provides provided allow allows allowed let lets enable enables enabled need
    needs needed make makes made get gets got want wants like simply specific specifically
    configure configures configured configuring run runs execute
    order list purpose reason reasons help helps able possible available currently
    yes no true false
    one also just then therefore thus however instead well rather both either neither
    vllm source sources project code codebase library package
""".split())
# True and false are values, not frame, where they are what the sentence adds to the question
# (off: bench_writer check drops 1 supported sentence more; benchmarks/README.md, "Every rule
# of the claim check measured").
_VALUE_WORDS = frozenset({"true", "false", "none", "null"})
# Code spells out fewer words than prose about it: `def default(obj): return str(obj)` is
# "defines a function that returns a string". A source's abbreviation also counts as the word
# (off: validate drops 1 accepted sentence more).
ABBREVIATIONS = {
    "def": "define", "str": "string", "int": "integer", "bool": "boolean",
    "dict": "dictionary", "len": "length", "err": "error", "init": "initialize",
    "arg": "argument", "args": "arguments", "kwargs": "arguments", "param": "parameter",
    "params": "parameters", "num": "number", "max": "maximum", "min": "minimum",
    "msg": "message", "cfg": "configuration", "config": "configuration",
    "attr": "attribute", "ms": "milliseconds", "env": "environment", "var": "variable",
    "fn": "function", "func": "function", "impl": "implementation", "exc": "exception",
    "idx": "index", "ctx": "context", "req": "request", "resp": "response", "src": "source",
    "dst": "destination", "tmp": "temporary", "dir": "directory", "repo": "repository",
    "pkg": "package", "lib": "library", "doc": "documentation", "docs": "documentation",
    "opt": "option", "opts": "options", "val": "value", "buf": "buffer",
    "assert": "assertion", "raise": "raises", "dtype": "type", "cls": "class",
    "obj": "object", "proc": "process", "procs": "processes", "seq": "sequence",
    "async": "asynchronous", "sync": "synchronous", "spec": "specification",
}


#: Content words of a sentence its cited sources may lack.
MAX_MISSING = 0
#: One stretch: consecutive lines of the source up to this many characters, holding this
#: share of the found words.
WINDOW_CHARS = 400
WINDOW_SHARE = 0.75


def stem(word: str) -> str:
    """Plural, -ing, -ed, -er, -ly, -ation and a final e folded: `decides` meets `decide`,
    `serialization` meets `serialize`, `stopped` meets `stop`."""
    w = word.lower()
    if len(w) > 4 and w.endswith(("ies", "ied")):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 5 and w.endswith("ing"):
        w = _undouble(w[:-3])
    elif len(w) > 4 and w.endswith("ed"):
        w = _undouble(w[:-2])
    if len(w) > 7 and w.endswith("ation"):
        w = w[:-5]
    elif len(w) > 5 and w.endswith("ly"):
        w = w[:-2]
    elif len(w) > 5 and w.endswith("er"):
        w = w[:-2]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def _undouble(w: str) -> str:
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
        return w[:-1]
    return w


def _keys(token: str) -> tuple[str, list[str]]:
    """A token's joined key (`mlp_bias` -> `mlpbia`... stemmed) and its parts' keys."""
    parts = split_identifier(token) or [token.lower()]
    return stem("".join(parts)), [stem(p) for p in parts]


@dataclass(frozen=True)
class _SourceWords:
    all: frozenset[str]
    lines: tuple[frozenset[str], ...]
    lengths: tuple[int, ...]


@lru_cache(maxsize=256)
def _source_words(text: str) -> _SourceWords:
    """Every key of a source (joined identifiers and their parts), per line and in all."""
    lines: list[frozenset[str]] = []
    lengths: list[int] = []
    for line in text.split("\n"):
        keys: set[str] = set()
        for token in _TOKEN.findall(line):
            joined, parts = _keys(token)
            keys.add(joined)
            keys.update(parts)
            for part in split_identifier(token):
                if part in ABBREVIATIONS:
                    keys.add(stem(ABBREVIATIONS[part]))
        lines.append(frozenset(keys))
        lengths.append(len(line) + 1)
    return _SourceWords(frozenset().union(*lines) if lines else frozenset(),
                        tuple(lines), tuple(lengths))


def _in(token: str, keys: frozenset[str] | set[str]) -> bool:
    """A source holds the token: its joined form, or every part of an identifier (off: a drop's
    reason in validate --verbose; a path's words, counted as the source's, had covered it)."""
    joined, parts = _keys(token)
    return joined in keys or (len(parts) > 1 and all(p in keys for p in parts))


def _content(token: str) -> bool:
    low = token.lower()
    if low in _VALUE_WORDS:
        return True
    if low in STOPWORDS or low in FRAME:
        return False
    return len(token) > 1 or token.isdigit()


@dataclass
class Support:
    """What a sentence adds to the question, and what of it the cited sources lack."""

    novel: list[str]  # content words not in the question
    missing: list[str]  # ... that no cited source holds
    scattered: bool  # found, but not together in one stretch

    def fails(self) -> bool:
        return len(self.missing) > MAX_MISSING or self.scattered


def support(sentence: str, question: str, sources: list[str]) -> Support:
    """The sentence's own words against `sources` (the text of each it cites)."""
    text = _CITE.sub(" ", sentence)
    # The question's words, its identifiers joined (a part of one is no word of the question:
    # `create_from_handle` does not make "handle" asked).
    asked = {_keys(token)[0] for token in _TOKEN.findall(question)}
    # (`CUDNN_LIBRARY` is new where "CUDNN library" was asked)
    novel = [token for token in dict.fromkeys(_TOKEN.findall(text))
             if _keys(token)[0] not in asked and _content(token)]
    words = [_source_words(body) for body in sources]
    missing = [t for t in novel if not any(_in(t, w.all) for w in words)]
    found = [t for t in novel if t not in missing]
    need = max(1, round(WINDOW_SHARE * len(found)))
    scattered = bool(found) and not any(_together(w, found, need) for w in words)
    return Support(novel, missing, scattered)


def _together(words: _SourceWords, found: list[str], need: int) -> bool:
    """Whether one stretch of consecutive lines (up to WINDOW_CHARS, at least one line)
    holds `need` of the found words."""
    lines, lengths = words.lines, words.lengths
    for first in range(len(lines)):
        keys: set[str] = set()
        size = 0
        last = first
        while last < len(lines) and (last == first or size + lengths[last] <= WINDOW_CHARS):
            keys |= lines[last]
            size += lengths[last]
            last += 1
        if sum(_in(t, keys) for t in found) >= need:
            return True
    return False
