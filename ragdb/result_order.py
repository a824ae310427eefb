"""What a question writes, and the result order rule that reads it after fusion.

Fusion ranks chunks by their legs' ranks; some orders it cannot see from ranks alone need
the question's identifiers and the chunks' definition names: a definition of a name the
question writes below a caller or wrapper that restates it (callee first). It only reorders
the hits it is given (Searcher._by_definitions applies it). Deleted, each measured not to earn
its place: own definition first (last in commit 620c0a0), and definition over docs and
`names_code` (the question-type test of the options w_bridge_named and w_dense_plain; last in
commit ec6c6ed; benchmarks/README.md, "Issue 40: which hand-set rules earn their place").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Protocol, TypeVar

from ragdb.tokenize import split_identifier


class _Ranked(Protocol):
    @property
    def chunk_id(self) -> int: ...

    @property
    def text(self) -> str: ...


H = TypeVar("H", bound=_Ranked)


_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@lru_cache(maxsize=1 << 16)
def _joined(name: str) -> str:
    """An identifier as the context column holds it (`get_app_dir` -> `getappdir`). Cached:
    the rules read every identifier of every hit's text, and the same names recur across the
    hits and the searches (about 600 per hybrid search, 3 ms of it uncached)."""
    return "".join(split_identifier(name))


def question_identifiers(question: str) -> set[str]:
    """The multi-part identifiers a question writes (`getSelector`, `Context.ensure_object`
    gives `ensureobject`), each joined as the context column holds definition names."""
    return {_joined(token) for token in _IDENT.findall(question.replace(".", " "))
            if len(split_identifier(token)) > 1}


def _written(text: str) -> set[str]:
    """Every identifier a text writes, joined as the context column holds names."""
    return {_joined(token) for token in _IDENT.findall(text)}


def _defined(hit: _Ranked, contexts: dict[int, str]) -> set[str]:
    """The names a chunk defines: in its context column (definition names) and written in it."""
    own = _written(hit.text)
    return {t for t in contexts.get(hit.chunk_id, "").split() if len(t) >= 4 and t in own}


def _definitions(hits: Sequence[_Ranked], contexts: dict[int, str]) -> dict[int, set[str]]:
    """_defined of each hit, read once (callee_first asks for each hit many times)."""
    return {hit.chunk_id: _defined(hit, contexts) for hit in hits}


def callee_first(question: str, hits: Sequence[H], contexts: dict[int, str],
                 code: Callable[[H], bool]) -> list[H]:
    """The hits with each definition of a name the question writes moved just above the first
    code hit ranked above it that calls that name (a caller or public wrapper restating it).

    A chunk defines a name when its context column holds the joined name and its text writes
    it; a chunk calls a name it writes before `(` without defining it. Only those hits move, and
    each at most once: the set of results is unchanged.
    """
    named = question_identifiers(question)
    out = list(hits)
    if not named:
        return out
    defines = _definitions(out, contexts)

    def defined(hit: H) -> set[str]:
        return defines[hit.chunk_id]

    moved: set[int] = set()
    for i in range(len(out)):
        caller = out[i]
        if not code(caller):
            continue
        calls = ({_joined(name) for name in _CALL.findall(caller.text)} & named) - defined(caller)
        if not calls:
            continue
        for j in range(i + 1, len(out)):
            callee = out[j]
            if callee.chunk_id not in moved and code(callee) and defined(callee) & calls:
                out.insert(i, out.pop(j))
                moved.add(callee.chunk_id)
                break
    return out
