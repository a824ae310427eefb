"""What a question writes, and the result order rules that read it after fusion.

Fusion ranks chunks by their legs' ranks; some orders it cannot see from ranks alone need
the question's identifiers and the chunks' definition names: a definition of a name the
question writes below a caller or wrapper that restates it (callee first), or below doc
passages that never write the name (definition over docs, an option). `names_code` tells a
question that writes code (an identifier, a path, a flag) from one in plain words. (Own
definition first, for plain-words questions, was deleted: it moved nothing on the tuning sets
and cost three unseen code questions at R@1; it last lived in commit 620c0a0.)
Each rule only reorders the hits it is given (Searcher._by_definitions applies them).
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


_CODE_TOKEN = re.compile(
    r"`"                              # backticks
    r"|\w_\w|_\w+|\w+_"                # snake_case, _private, trailing_
    r"|\w/\w|^/|\s/\w"                 # paths
    r"|\w\.\w"                         # dotted names, file.ext
    r"|(?:^|\s)--?[A-Za-z]"             # flags
    r"|[a-z][A-Z]+[a-z]"                # camelCase, CamelCase (not vLLM, LoRA)
)


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


def definition_over_docs(question: str, hits: Sequence[H], contexts: dict[int, str],
                         code: Callable[[H], bool], within: int) -> list[H]:
    """The hits with the best code hit among the first `within` that defines a name the question
    writes moved above the doc hits directly above it that do not write that name.

    A question that writes `psutil_pid_exists` is answered by the C function of that name more
    often than by a doc passage on the same topic that never writes it (the docs say
    `psutil.pid_exists`), while a doc passage that writes the name documents it and stays above
    (docs questions name identifiers too). Only that hit moves, within the first `within`
    results: the set of the first `within` is unchanged.
    """
    named = question_identifiers(question)
    out = list(hits)
    if not named or within <= 0:
        return out
    for j, hit in enumerate(out[:within]):
        if not code(hit):
            continue
        names = _defined(hit, contexts) & named
        if names:
            i = j
            while i > 0 and not code(out[i - 1]) and not names & _written(out[i - 1].text):
                i -= 1
            out.insert(i, out.pop(j))
            break
    return out


def names_code(question: str) -> bool:
    """Whether a question contains an identifier, path, flag or backticks (see w_dense_plain)."""
    return bool(_CODE_TOKEN.search(question))
