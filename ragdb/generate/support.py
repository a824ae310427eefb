"""What a written sentence says beyond the question, and whether a "not" of it is the block's.

A sentence made of the question's words and words that only frame a claim ("The default value
of x is [1].") says nothing: its content words, less stopwords, the question's own words and
FRAME, are what it adds. A "not" or "never" it adds must be said where the cited block holds
its words: in one stretch of the block (a few lines) holding most of them, next to a word of
the question where the block has one (a path's words count as the block's). Without this
"The cache is not cleared when the server restarts [1]." passed against a block saying it is
cleared: the order rule (generate/wording.py) does not read "not", a stopword.

The word-level rules this module held before (every content word in the block, all in one
stretch) changed no kept sentence under the order rule and left the code (benchmarks/README.md,
"Every rule of the claim check measured").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
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
# True and false are values, not frame, where they are what the sentence adds to the question.
_VALUE_WORDS = frozenset({"true", "false", "none", "null"})

#: One stretch: consecutive lines of the block up to this many characters, holding this
#: share of the sentence's words found in it and a word of the question (where the block has
#: one); a "not" of the sentence must have one in that stretch too.
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


# A sentence that says something is not so: "will not capture any sizes", "cannot", "never".
NEGATION = re.compile(r"\b(?:not|never|cannot|without)\b|n't\b", re.I)
# ... and what in a source says so ("no", "unless", "instead", "skip" too: the source's own
# way of saying what does not happen, which a writer turns into "not"). "Only" is no "not":
# "it will only capture the specified sizes" does not say "it will not capture any".
_SOURCE_NEGATION = re.compile(r"\b(?:not|no|never|cannot|none|without|unless|instead|"
                              r"neither|nor|skip(?:s|ped)?|disabled?)\b|n't\b", re.I)


@dataclass(frozen=True)
class _SourceWords:
    all: frozenset[str]
    lines: tuple[frozenset[str], ...]
    lengths: tuple[int, ...]
    negations: tuple[bool, ...]  # whether each line says that something is not so


@lru_cache(maxsize=256)
def _source_words(text: str) -> _SourceWords:
    """Every key of a source (joined identifiers and their parts), per line and in all."""
    lines: list[frozenset[str]] = []
    lengths: list[int] = []
    negations: list[bool] = []
    for line in text.split("\n"):
        keys: set[str] = set()
        for token in _TOKEN.findall(line):
            joined, parts = _keys(token)
            keys.add(joined)
            keys.update(parts)
        lines.append(frozenset(keys))
        lengths.append(len(line) + 1)
        negations.append(_SOURCE_NEGATION.search(line) is not None)
    return _SourceWords(frozenset().union(*lines) if lines else frozenset(),
                        tuple(lines), tuple(lengths), tuple(negations))


def _in(token: str, keys: frozenset[str] | set[str]) -> bool:
    """A source holds the token's joined form (its parts alone changed nothing measured)."""
    return _keys(token)[0] in keys


def _content(token: str) -> bool:
    low = token.lower()
    if low in _VALUE_WORDS:
        return True
    if low in STOPWORDS or low in FRAME:
        return False
    return len(token) > 1 or token.isdigit()


@dataclass
class Support:
    """What a sentence adds to the question, and whether its "not" is the block's."""

    novel: list[str]  # content words not in the question
    negated: bool = False  # it says "not", and no stretch that holds its words says so


def support(sentence: str, question: str, sources: list[tuple[str, str]]) -> Support:
    """The sentence's own words against `sources` (the text and path of each it cites; a
    path's words count as the source's, but are no line of it)."""
    text = _CITE.sub(" ", sentence)
    # The question's words, its identifiers joined (a part of one is no word of the question:
    # `create_from_handle` does not make "handle" asked).
    asked = {_keys(token)[0] for token in _TOKEN.findall(question)}
    novel: list[str] = []
    anchors: list[str] = []
    for token in dict.fromkeys(_TOKEN.findall(text)):
        if _keys(token)[0] in asked:  # (`CUDNN_LIBRARY` is new where "CUDNN library" was asked)
            if token.lower() not in STOPWORDS and len(token) > 1:
                anchors.append(token)  # a frame word the question uses anchors as well
        elif _content(token):
            novel.append(token)
    words = [replace(_source_words(body), all=_source_words(body).all | _source_words(path).all)
             for body, path in sources]
    found = [t for t in novel if any(_in(t, w.all) for w in words)]
    anchored = [a for a in anchors if any(_in(a, w.all) for w in words)]
    # (a "not" the question says is the question's: "returns a text response when the bot
    # token is not present", asked "what does it return when the bot token is not present?")
    negates = (len(NEGATION.findall(_INLINE_CODE.sub(" ", text)))
               > len(NEGATION.findall(question)))
    if not negates:
        return Support(novel)
    if not found:
        return Support(novel, not any(any(w.negations) for w in words))
    need = max(1, round(WINDOW_SHARE * len(found)))
    return Support(novel, not any(_together(w, found, anchored, need) for w in words))


_INLINE_CODE = re.compile(r"`[^`\n]+`")


def _together(words: _SourceWords, found: list[str], anchors: list[str], need: int) -> bool:
    """Whether one stretch of consecutive lines (up to WINDOW_CHARS, at least one line) that
    says something is not so holds `need` of the found words and, where there are any, one of
    the anchors."""
    lines, lengths = words.lines, words.lengths
    for first in range(len(lines)):
        keys: set[str] = set()
        size = 0
        last = first
        negates = False
        while last < len(lines) and (last == first or size + lengths[last] <= WINDOW_CHARS):
            keys |= lines[last]
            size += lengths[last]
            negates = negates or words.negations[last]
            last += 1
        if not negates:
            continue
        held = sum(_in(t, keys) for t in found)
        if held >= need and (not anchors or any(_in(a, keys) for a in anchors)):
            return True
    return False
