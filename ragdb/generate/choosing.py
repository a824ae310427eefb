"""A model choosing which candidate's block answers first (issue 39), its code never shown.

Blind readers are satisfied by a code answer almost only when its first block holds the
reference definition; the rule of blocks.first_choice puts it there when the reference ranks
first (code R@1 about 0.42 on the unseen sets), while it is in the top 5 far more often (R@5
about 0.70). A model that writes sentences over the blocks misreads them; a model that only
picks one of the top candidates cannot say anything unsupported: what is shown stays the
candidates' blocks, verbatim. This module asks it: each candidate as a short card (its path,
the definition or heading it is, its first lines: `card`), today's choice listed first (a model
that always picks [1] answers as today), one number back (`parse_choice`); anything else, an
error or a time past the limit falls back to today's choice (`Choice.why`).

Not used by ragdb's answers: measured on half B of the unseen sets' questions (the wording
chosen on half A), the offline writer's choice held the reference in fewer first blocks than
today's rule, 116 of 235 against 147 (better on 7, worse on 38; code and docs both worse:
benchmarks/bench_choose.py; benchmarks/README.md, "Can a model choose the first block?"). It
stays for a better model to be measured the same way.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragdb.generate.blocks import Block
from ragdb.generate.models import first_line

#: Candidates shown to the model: the top N sources (blocks.CODE_WITHIN, the window today's
#: rule chooses in).
N_CANDIDATES = 5
#: Characters of a candidate's first lines on its card: five cards stay near 500 tokens, so
#: the prompt is read in seconds on two cores.
CARD_CHARS = 300
#: New tokens the model may write: one number (and a bracket or a stop).
CHOICE_TOKENS = 3
#: Seconds a choice may take before today's choice stands instead.
CHOICE_SECONDS = 30.0

SYSTEM = ("You pick which numbered source answers a developer's question about a codebase. "
          "Reply with the number only.")
#: How the chat is worded: the question after the cards, then a line the number completes
#: ("last"), or the question first and a question after the cards ("first"). Chosen on half
#: A of the unseen sets' questions (benchmarks/bench_choose.py): "first" (the model's first
#: block held the reference on 99 of 244, "last" on 59, today's rule on 131).
WORDINGS = ("last", "first")
WORDING = "first"
#: The cards' order: today's choice first, then the others by rank ("today": a model that
#: always picks [1] answers as today), or by rank alone ("rank").
ORDERS = ("today", "rank")
ORDER = "today"

#: (chat messages, max new tokens, the allowed reply as a regular expression) -> the reply.
Complete = Callable[[list[dict[str, str]], int, str], str]


def card(block: Block, shown_as: int, chars: int = CARD_CHARS) -> str:
    """One candidate as the model sees it: `[i] path:start-end label`, then the block's first
    non-blank lines (a code block's enclosing signature lines first) up to `chars`
    characters, whole lines (the first cut if it alone is longer)."""
    title = f"[{shown_as}] {block.path}:{block.start_line}-{block.end_line}"
    label = block.label.lstrip(", ").strip()
    if label:
        title += f" {label}"
    lines = [line for _, line in block.heads] + list(block.lines)
    lines = [line.strip() for line in lines if line.strip()]
    kept: list[str] = []
    used = 0
    for line in lines:
        if kept and used + len(line) + 1 > chars:
            break
        kept.append(line[:chars])
        used += len(line) + 1
    return "\n".join([title, *kept])


def choice_messages(question: str, cards: Sequence[str], wording: str = WORDING
                    ) -> list[dict[str, str]]:
    """The chat: the cards and the question, worded as `wording` (WORDINGS) says."""
    sources = "\n\n".join(cards)
    if wording == "first":
        numbers = ", ".join(str(i) for i in range(1, len(cards) + 1))
        user = (f"Question: {question}\n\nSources:\n\n{sources}\n\nWhich source answers the "
                f"question? Reply with one number ({numbers}).")
    else:
        user = (f"Sources:\n\n{sources}\n\nQuestion: {question}\n\nThe number of the source "
                "that answers it:")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def choice_pattern(n: int) -> str:
    """The reply a grammar allows: one of the numbers 1..n."""
    return "[1-" + str(n) + "]" if n < 10 else "[1-9]|" + "|".join(
        str(i) for i in range(10, n + 1))


_NUMBER = re.compile(r"^\W*(\d+)\W*$")


def parse_choice(text: str, n: int) -> int | None:
    """The number the reply gives (`3`, `[3]`, `3.`), when it is one of 1..n; None for
    anything else (words, two numbers, 0, a number past n)."""
    found = _NUMBER.match(text.strip())
    if found is None:
        return None
    number = int(found.group(1))
    return number if 1 <= number <= n else None


@dataclass
class Choice:
    """Which candidate answers first: `rank` (the source's [n]) and why."""

    rank: int  # the chosen source's [n]: the model's, or today's where it fell back
    today: int  # today's rule's choice (blocks.first_choice)
    offered: list[int] = field(default_factory=list)  # the ranks on the cards, in card order
    reply: str = ""  # what the model wrote
    seconds: float = 0.0
    why: str = ""  # '' where the model chose; else why today's choice stands

    @property
    def by_model(self) -> bool:
        return not self.why

    def as_json(self) -> dict[str, Any]:
        return {"chosen": self.rank, "today": self.today, "offered": self.offered,
                "reply": self.reply, "seconds": round(self.seconds, 3),
                "by_model": self.by_model, "fallback_reason": self.why}


class ModelChooser:
    """Asks a model (`complete`) which of the candidates' blocks answers the question."""

    def __init__(self, complete: Complete, n: int = N_CANDIDATES,
                 time_limit_s: float | None = CHOICE_SECONDS,
                 chars: int = CARD_CHARS, wording: str = WORDING, order: str = ORDER) -> None:
        self.complete = complete
        self.wording = wording
        self.order = order
        self.n = n
        self.time_limit_s = time_limit_s
        self.chars = chars

    def offered(self, blocks: Sequence[Block], today: int) -> list[Block]:
        """The cards' blocks in order (ORDER: today's choice first, then the others by rank;
        or by rank alone), at most `n`, today's choice always among them."""
        if self.order == "rank":
            top = list(blocks[:self.n])
            if all(b.number != today for b in top):
                top = top[:-1] + [b for b in blocks if b.number == today][:1]
            return sorted(top, key=lambda b: b.number)
        first = [b for b in blocks if b.number == today][:1]
        rest = [b for b in blocks if b.number != today]
        return (first + rest)[:self.n]

    def messages(self, question: str, blocks: Sequence[Block], today: int
                 ) -> list[dict[str, str]]:
        cards = [card(b, i, self.chars) for i, b in enumerate(self.offered(blocks, today), 1)]
        return choice_messages(question, cards, self.wording)

    def choose(self, question: str, blocks: Sequence[Block], today: int) -> Choice:
        """The model's choice among `blocks` (each a candidate's block as the first slot would
        show it, in rank order; `today` the [n] today's rule chose), or today's choice with
        the reason: one candidate only, a model error, a reply that is no number offered, a
        choice past the time limit."""
        shown = self.offered(blocks, today)
        choice = Choice(today, today, [b.number for b in shown])
        if len(shown) < 2:
            choice.why = "one candidate"
            return choice
        started = time.perf_counter()
        try:
            choice.reply = self.complete(self.messages(question, blocks, today), CHOICE_TOKENS,
                                         choice_pattern(len(shown)))
        except Exception as exc:  # noqa: BLE001 - any model failure: today's choice stands
            choice.seconds = time.perf_counter() - started
            choice.why = f"the model failed: {first_line(exc)}"
            return choice
        choice.seconds = time.perf_counter() - started
        picked = parse_choice(choice.reply, len(shown))
        if picked is None:
            choice.why = f"no number of 1-{len(shown)} in the reply {choice.reply[:40]!r}"
        elif self.time_limit_s is not None and choice.seconds > self.time_limit_s:
            choice.why = f"the choice took {choice.seconds:.1f} s (limit {self.time_limit_s:g})"
        else:
            choice.rank = shown[picked - 1].number
        return choice
