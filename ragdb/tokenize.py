"""Text analysis shared by indexing and querying: identifiers split into the words they are made of.

FTS5 indexes the *analysed* text with its built-in `porter unicode61` tokenizer, so any SQLite
client can query rag.db (a Python tokenizer registered through apsw would make the table unreadable
to everything else). `Gemma2DecoderLayer` becomes `gemma2 decoder layer gemma2decoderlayer`: the
parts let a question in plain words match, the joined form rewards the exact identifier.
"""

from __future__ import annotations

import re

from ragdb.file_types import language_for

# Bump when analysis changes: the index records it and a different version forces a rebuild.
# split-2: the context column also holds the joined names of the Python definitions a chunk holds.
# split-3: and of the functions, classes and types of the tree-sitter languages.
# split-4: and of their constants, variables, aliases, macros and impl blocks (every construct
# that defines a name; Python's module constants), and files of every type are indexed.
# split-5: and a prose chunk's context the titles of every section it holds, not only the first.
# split-6: a word mixing letters and digits also gives its letter and digit runs (p98: p, 98),
# and a placeholder inside an identifier is read as part of it (`_{FOO_BAR}_COMPLETE`).
# split-7: the path column holds the path below its root (walking.below_root): the root's own
# folders (`requests-2.32.3`) made their words common to every chunk.
TOKENIZER_VERSION = "ragdb-split-7"

_TOKEN = re.compile(r"[^\W_]+(?:_+[^\W_]+)*")
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])\d*|[A-Z]?[a-z]+\d*|\d+")
_LETTERS_DIGITS = re.compile(r"[^\W\d_]+|\d+")
# `{NAME}` with identifier characters on both sides: docs write a templated name this way.
_PLACEHOLDER = re.compile(r"(?<=\w)\{(\w+)\}(?=\w)")

# Question words and glue that carry no information for BM25 but cost a doclist scan each.
STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before being
    between both but by can could did do does doing done during each few for from further had has
    have having he her here hers him his how i if in into is it its itself just me more most my no
    nor not of off on once only or other our out over own same she should so some such than that
    the their them then there these they this those through to too under until up upon very was we
    were what when where which while who whom why will with would you your used use using uses
    way ways""".split()
)


def _camel_parts(piece: str) -> list[str]:
    """Split camelCase, but keep brand-like words whole.

    `LoRA` -> lo + ra and `vLLM` -> v + llm would add noise terms, so a piece is only split when
    every part has two or more characters and one has at least three (`toDict`, `HTTPServer`).
    """
    if not piece.isascii():
        return [piece.lower()]
    parts = _CAMEL_PART.findall(piece)
    if len(parts) < 2 or "".join(parts) != piece:
        return [piece.lower()]
    if min(map(len, parts)) < 2 or max(map(len, parts)) < 3:
        return [piece.lower()]
    return [p.lower() for p in parts]


def split_identifier(token: str) -> list[str]:
    """Lower-cased words of one identifier: snake_case, camelCase, digits kept with their word."""
    parts: list[str] = []
    for piece in token.split("_"):
        if piece:
            parts.extend(_camel_parts(piece))
    return parts


def _digit_runs(part: str) -> list[str]:
    """A word that mixes letters and digits as its runs, then itself (`p98` -> p, 98, p98;
    `98th` -> 98, th, 98th); any other word alone.

    Code abbreviates with numbers (`p98`, `sha256`, `utf8`) where prose writes them apart
    ("98th percentile", "SHA-256"): the runs let either find the other, and the whole word
    still rewards the exact spelling.
    """
    if part.isalpha() or part.isdigit() or not part.isascii():
        return [part]
    runs = _LETTERS_DIGITS.findall(part)
    return [*runs, part] if len(runs) > 1 else [part]


def _token_terms(token: str, plain: bool = False) -> list[str]:
    """One identifier's parts (each mixed letters-and-digits part preceded by its runs, unless
    `plain`), then the whole identifier when it had several parts."""
    parts = split_identifier(token)
    terms = list(parts) if plain else [run for part in parts for run in _digit_runs(part)]
    if len(parts) > 1:
        terms.append("".join(parts))
    return terms


def _tokens(text: str) -> list[str]:
    """The identifiers and words of a text, a placeholder inside an identifier joined to it.

    Docs write a templated name as `_{FOO_BAR}_COMPLETE`; read as `_FOO_BAR_COMPLETE`, its
    joined form matches a question or example that writes the name with the placeholder's
    words. Only `{word}` between identifier characters: f-strings and blocks stay apart."""
    if "{" in text:
        text = _PLACEHOLDER.sub(r"\1", text)
    return _TOKEN.findall(text)


def analyse_terms(text: str, plain: bool = False) -> list[str]:
    """Terms of a text: each identifier's parts, then the whole identifier when it had several.

    `plain`: without letter and digit runs and placeholders joined (the analysis of
    ragdb-split-5); answer scoring keeps it, as it was measured with it."""
    terms: list[str] = []
    for token in _TOKEN.findall(text) if plain else _tokens(text):
        terms.extend(_token_terms(token, plain))
    return terms


def analyse(text: str) -> str:
    """The analysed text stored in chunks_fts."""
    return " ".join(analyse_terms(text))


class Analyser(dict[str, str]):
    """analyse() for one index run, remembering each identifier's analysed form: a corpus
    repeats the same few thousand identifiers (and JSON tables the same numbers) over and
    over, and splitting every occurrence again was half the Python time of an index run.
    One per run, so a long-lived server holds no cache between runs; cleared when full."""

    MAX = 200_000

    def __missing__(self, token: str) -> str:
        if len(self) >= self.MAX:
            self.clear()
        terms = self[token] = " ".join(_token_terms(token))
        return terms

    def __call__(self, text: str) -> str:
        """The same as analyse(text)."""
        return " ".join(map(self.__getitem__, _tokens(text)))


_PY_DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([^\W\d]\w*)", re.M)
# A module's constants: an UPPER_CASE name assigned at the start of a line (not a local).
_PY_CONSTANT = re.compile(r"^([A-Z][A-Z0-9_]*)[ \t]*(?::[^=\n]*)?=(?!=)", re.M)


def defined_names(text: str, kind: str) -> list[str]:
    """Names of the functions, classes and module constants a chunk defines (Python; [] for
    other kinds), once each.

    Where a name is defined says more than where it is used: indexed in the context column,
    these rank the definition of an identifier a question names above its call sites.
    """
    if kind != "python":
        return []
    return list(dict.fromkeys(_PY_DEFINITION.findall(text) + _PY_CONSTANT.findall(text)))


def analyse_names(names: list[str]) -> str:
    """Each name as one joined term (`get_num_tokens` -> `getnumtokens`), no parts.

    Only the joined form: it matches when a question writes the identifier itself (the parts
    are in the body already); the parts as well measured a loss on prose questions, whose
    words then matched definitions named after common words (README, Performance).
    """
    return " ".join("".join(split_identifier(name)) for name in names)


def query_terms(question: str) -> list[str]:
    """Distinct informative terms of a question, in order of first appearance.

    Single letters go too: `vLLM's` yields a lone `s` that matches half the corpus.
    """
    seen: dict[str, None] = {}
    for term in analyse_terms(question):
        if term in STOPWORDS or term in seen or (len(term) == 1 and not term.isdigit()):
            continue
        seen[term] = None
    return list(seen)


_ONE_LETTER = re.compile(r"(?<!\w)([^\W\d_])(?!\w)")


def nothing_to_search(question: str) -> str | None:
    """Why the words of a question search nothing, in one clause for "no sources found: ...";
    None when it has a word to search. Words of one letter and symbols are not searched
    (query_terms; informative_terms keeps any longer word), so `T` (glom's T object) or `?`
    found nothing, which read as if the index had nothing about it."""
    if any(len(term) > 1 or term.isdigit() for term in analyse_terms(question)):
        return None
    letter = _ONE_LETTER.search(question)
    return ("words of one letter and symbols are not searched, and the question has no other"
            + (f"; for a name of one letter: `ragdb definition {letter.group(1)}`"
               if letter else ""))


# An identifier as prose writes it: in backticks on one line, or snake_case, camelCase or
# PascalCase with an inner capital (plain capitalised words are not identifiers). A fenced code
# block is no backtick span: only its multi-part identifiers count, not every word of it.
_NAMED_IDENTIFIER = re.compile(
    r"`([^`\n]+)`"
    r"|\b([A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"
    r"|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)\b"
)


def named_identifiers(text: str) -> list[str]:
    """The identifiers a passage of prose names, as query terms, once each in order: each
    multi-part identifier as its joined term (`exit_code` -> `exitcode`), a one-word name in
    backticks (`pids`) as itself when it has three letters or more.

    Docs name the code that implements what they describe; these terms let a question in plain
    words reach that code (the bridge leg of sql/search_hybrid.sql).
    """
    terms: list[str] = []
    for match in _NAMED_IDENTIFIER.finditer(text):
        for token in _TOKEN.findall(match.group(1) or match.group(2)):
            parts = split_identifier(token)
            if len(parts) > 1:
                terms.append("".join(parts))
            elif parts and len(parts[0]) > 2:
                terms.append(parts[0])
    return list(dict.fromkeys(terms))


#: A backtick span that writes one name: `fetch`, `LLM.generate()`, `clap::Command::new`,
#: `@app.route` (a decorator), `self.step(x)`; a path, a flag or a phrase is none.
_CODE_NAME = re.compile(r"@?([^\W\d]\w*(?:(?:\.|::|->|#)[^\W\d]\w*)*)(?:\(.*\))?")
_NAME_PARTS = re.compile(r"\.|::|->|#")
#: Names a question is read for at most (the symbol leg's :symbol_names).
MAX_WRITTEN_NAMES = 16


def written_names(question: str) -> list[str]:
    """The names of definitions a question writes, as written (case kept), once each in
    order: the last part of a name in backticks (`LLM.generate()` -> `generate`; a file name
    such as `config.py` is none) when it has three characters or more, and each multi-part
    identifier outside them (`max_model_len`, `getSelector`, `SamplingParams`). Plain words are
    none (a sentence's capitalised word is not a class name).

    The symbol leg of sql/search_hybrid.sql looks them up in the `symbols` table: the chunk
    that defines a name the question writes is a candidate of its own.
    """
    names: list[str] = []
    for match in _NAMED_IDENTIFIER.finditer(question):
        if match.group(2):
            names.append(match.group(2))
            continue
        span = match.group(1).strip()
        code = _CODE_NAME.fullmatch(span)
        if code and not ("." in span and language_for(span)):  # `config.py`: a file
            last = _NAME_PARTS.split(code.group(1))[-1]
            if len(last) >= 3:
                names.append(last)
    return list(dict.fromkeys(names))[:MAX_WRITTEN_NAMES]


def fts_query(terms: list[str]) -> str:
    """An FTS5 MATCH expression: any of the terms, each quoted so none is an operator.

    Returns "" when there is no term (then there is nothing to search).
    """
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
