"""Whether a written sentence says what its block says in the block's own order (issue 39).

The word-level check (until this rule made its rules redundant) found a sentence's words in one
stretch of the block it cites, but not in the block's order, so a sentence made of the block's
own words can say what the block does not: "independent blocks reduce inefficiencies with small
blocks, while linked blocks compress better" over "Linked blocks sharply reduce inefficiencies
when using small blocks, they compress better"; "short responses are compressed regardless of
size" over "responses written in multiple chunks will be compressed regardless of size"; a
number moved to another setting ("restarts it up to 100 times" over "max_restarts defaults to
100"). Blind readers found such a sentence in 12 of the 31 answers the offline writer wrote on
repos4, all of which the word-level check had passed.

So a sentence is kept only where every word of it, stopwords aside (the question's words too),
is in its block in the order the sentence writes them, within one stretch of the block at most
STRETCH times the sentence's length: the sentence is the block's own wording, with stopwords,
inflections and a few of the block's words left out. A paraphrase, a restated question the
block does not word so, or two places of the block joined into one claim are dropped. Chosen on
the repos4 readers' verdicts (`python -m benchmarks.bench_misread`; benchmarks/README.md, "Can
the writer's sentences be kept only when they say what the block says?").
"""

from __future__ import annotations

from functools import lru_cache

from ragdb.generate.support import _CITE, _TOKEN, _keys
from ragdb.tokenize import STOPWORDS

#: The stretch of the block that must hold a sentence's words in order, as a multiple of the
#: number of those words (block words counted the same way: stopwords aside).
STRETCH = 2


def words(text: str) -> tuple[str, ...]:
    """The text's words in order, stopwords and citation marks left out, each as its stemmed
    key (an identifier joined: `cross_origin_protection` is one word)."""
    return tuple(_keys(token)[0] for token in _TOKEN.findall(_CITE.sub(" ", text))
                 if token.lower() not in STOPWORDS)


@lru_cache(maxsize=256)
def _positions(text: str) -> dict[str, tuple[int, ...]]:
    """Where each word of a block stands (its index among the block's words)."""
    where: dict[str, list[int]] = {}
    for index, word in enumerate(words(text)):
        where.setdefault(word, []).append(index)
    return {word: tuple(found) for word, found in where.items()}


def in_order(sentence: str, block: str) -> bool:
    """Every word of `sentence` (stopwords aside) is in `block`, in the sentence's order,
    within STRETCH times as many of the block's words as the sentence has."""
    wanted = words(sentence)
    if not wanted:
        return True
    where = _positions(block)
    if any(word not in where for word in wanted):
        return False
    limit = STRETCH * len(wanted)
    for start in where[wanted[0]]:
        # The earliest match of the rest after `start` ends the shortest stretch from there.
        position = start
        for word in wanted[1:]:
            position = next((p for p in where[word] if p > position), -1)
            if position < 0 or position - start >= limit:
                break
        else:
            return True
    return False
