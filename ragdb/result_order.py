"""What a question writes, and the result order rules that read it after fusion.

Fusion ranks chunks by their legs' ranks; some orders it cannot see from ranks alone need
the question's identifiers and the chunks' definition names: a definition of a name the
question writes below a caller or wrapper that restates it (callee first), or below doc
passages that never write the name (definition over docs, an option); for a question in plain
words, the chunk of a file whose own definitions spell a word of the question that its sibling
chunks do not hold, below another chunk of that file (own definition first). `names_code`
tells a question that writes code (an identifier, a path, a flag) from one in plain words.
Each rule only reorders the hits it is given (Searcher._by_definitions applies them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Protocol, TypeVar

from ragdb.tokenize import analyse_terms, split_identifier


class _Ranked(Protocol):
    @property
    def chunk_id(self) -> int: ...

    @property
    def text(self) -> str: ...


H = TypeVar("H", bound=_Ranked)


class _Filed(_Ranked, Protocol):
    @property
    def file_path(self) -> str: ...


F = TypeVar("F", bound=_Filed)


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


def _definition_names(context: str) -> set[str]:
    """The joined names of the definitions a context column holds, without its signature words.

    The column writes an enclosing signature or heading analysed (each identifier's parts, then
    the parts joined) and then the joined names of the chunk's definitions
    (indexing._context_terms): a joined word right after its own parts is a signature's (the
    enclosing class, a parameter), any other is a definition's."""
    words = context.split()
    names = set()
    for n, word in enumerate(words):
        joined, k = "", 0
        while k < n and len(joined) < len(word):
            k += 1
            joined = words[n - k] + joined
        if joined != word:
            names.add(word)
    return names


def _defined_terms(hit: _Ranked, contexts: dict[int, str],
                   stems: Callable[[str], set[str]]) -> set[str]:
    """The stems of the words of the names a chunk defines (`estimateP98LongestInteraction`:
    estimate, p, 98, p98, longest, interaction, the whole), each name written in its text."""
    names = _definition_names(contexts.get(hit.chunk_id, ""))
    out: set[str] = set()
    for token in set(_IDENT.findall(hit.text)):
        joined = _joined(token)
        if len(joined) >= 4 and joined in names:
            for word in analyse_terms(token):
                out |= stems(word)
    return out


def own_definition_first(terms: set[str], hits: Sequence[F], contexts: dict[int, str],
                         code: Callable[[F], bool], stems: Callable[[str], set[str]],
                         within: int) -> list[F]:
    """The hits with, for each file holding several code hits among the first `within`, the one
    whose own definitions spell a question term (`terms`, stems) that none of the file's other
    hits there holds (in its definitions or its context column) moved to the file's first slot,
    when the hit in that slot has no such term of its own.

    A plain-words question names no identifier, yet its words can spell one: "approximate the
    98th percentile" and `estimateP98LongestInteraction`. BM25 ranks another chunk of the same
    file first (the class header, with more of the question's common words); the words of the
    names a chunk defines tell the chunks of one file apart, while words every chunk of the
    class shares (its enclosing signature) tell nothing. Only that hit moves, within the first
    `within`: the set of the first `within` is unchanged.
    """
    out = list(hits)
    if not terms or within <= 0:
        return out
    done: set[str] = set()
    for hit in list(out[:within]):
        path = hit.file_path
        if path in done or not code(hit):
            continue
        done.add(path)
        slots = [i for i, other in enumerate(out[:within]) if other.file_path == path]
        if len(slots) < 2:
            continue
        defined = {i: _defined_terms(out[i], contexts, stems) & terms for i in slots}
        held = {i: defined[i] | {s for word in contexts.get(out[i].chunk_id, "").split()
                                 for s in stems(word)} for i in slots}
        own = {i: defined[i] - set().union(*(held[j] for j in slots if j != i)) for i in slots}
        best = max(slots, key=lambda i: (len(own[i]), -i))
        if own[best] and best != slots[0] and not own[slots[0]]:
            out.insert(slots[0], out.pop(best))
    return out


def names_code(question: str) -> bool:
    """Whether a question contains an identifier, path, flag or backticks (see w_dense_plain)."""
    return bool(_CODE_TOKEN.search(question))
