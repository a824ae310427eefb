"""A model choosing the first block (ragdb/generate/choosing.py): the cards, the reply parsed,
today's choice standing on anything else; one choice by the real offline model."""

from __future__ import annotations

import time

import pytest

from ragdb.errors import RagdbError
from ragdb.generate.blocks import Block
from ragdb.generate.choosing import (ModelChooser, card, choice_messages, choice_pattern,
                                     parse_choice)
from ragdb.generate.generator import Generator


def code(number: int, name: str, doc: str) -> Block:
    return Block(number, f"src/{name}.py", 10, 14,
                 [f"def {name}(value):", f'    """{doc}"""', "", "    return value"],
                 "python", True, [(1, "class Shop:")], f", `Shop.{name}`")


def docs(number: int) -> Block:
    lines = ["Run the tool with `--help`.", "", "Every option is listed."]
    return Block(number, "docs/usage.md", 3, 5, lines, "markdown", False,
                 label="(Usage › Options)")


BLOCKS = [code(1, "load", "Read a file."), code(2, "parse_date", "Parse an ISO date."),
          docs(3), code(4, "save", "Write a file.")]


class Fake:
    """A model that answers `reply` (or raises it), and keeps what it was asked."""

    def __init__(self, reply: str | Exception = "1", delay: float = 0.0) -> None:
        self.reply = reply
        self.delay = delay
        self.asked: list[tuple[list[dict[str, str]], int, str]] = []

    def __call__(self, messages: list[dict[str, str]], tokens: int, pattern: str) -> str:
        self.asked.append((messages, tokens, pattern))
        time.sleep(self.delay)
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


@pytest.mark.parametrize("text, expected", [
    ("2", 2), ("[3]", 3), (" 4.\n", 4), ("1", 1),
    ("0", None), ("5", None), ("2 or 3", None), ("the second", None), ("", None),
])
def test_parse_choice_takes_one_offered_number(text: str, expected: int | None) -> None:
    assert parse_choice(text, 4) == expected


def test_a_card_is_the_path_the_name_and_the_first_lines() -> None:
    assert card(BLOCKS[1], 2) == ("[2] src/parse_date.py:10-14 `Shop.parse_date`\n"
                                  "class Shop:\ndef parse_date(value):\n"
                                  '"""Parse an ISO date."""\nreturn value')
    assert card(docs(3), 1) == ("[1] docs/usage.md:3-5 (Usage › Options)\n"
                                "Run the tool with `--help`.\nEvery option is listed.")
    short = card(BLOCKS[1], 2, chars=35)
    assert short.splitlines()[1:] == ["class Shop:", "def parse_date(value):"]
    long = Block(1, "a.py", 1, 1, ["x" * 500], "python", True)
    assert card(long, 1, chars=40).splitlines()[1] == "x" * 40


def test_the_two_wordings() -> None:
    user = choice_messages("Which parses dates?", ["[1] a", "[2] b"], "last")[1]["content"]
    assert user.index("[2] b") < user.index("Which parses dates?")
    first = choice_messages("Which parses dates?", ["[1] a", "[2] b"])[1]["content"]
    assert first.index("Which parses dates?") < first.index("[1] a")
    assert "(1, 2)" in first
    assert choice_pattern(5) == "[1-5]"


def test_the_model_chooses_among_cards_today_first() -> None:
    fake = Fake("2")
    choice = ModelChooser(fake).choose("Which function parses dates?", BLOCKS, today=2)
    user = fake.asked[0][0][1]["content"]
    assert user.index("[1] src/parse_date.py") < user.index("[2] src/load.py")
    assert fake.asked[0][2] == "[1-4]"
    assert (choice.rank, choice.today, choice.offered) == (1, 2, [2, 1, 3, 4])
    assert choice.by_model
    assert choice.as_json()["chosen"] == 1 and choice.as_json()["fallback_reason"] == ""


def test_cards_by_rank_keep_todays_choice() -> None:
    chooser = ModelChooser(Fake("3"), n=2, order="rank")
    choice = chooser.choose("q?", BLOCKS, today=4)
    assert choice.offered == [1, 4] and choice.rank == 4  # "3" is no card: today's stands
    assert not choice.by_model and "no number of 1-2" in choice.why


@pytest.mark.parametrize("reply, why", [
    ("maybe", "no number of 1-4 in the reply 'maybe'"),
    (RagdbError("generation failed: out of memory"),
     "the model failed: generation failed: out of memory"),
])
def test_anything_but_a_number_leaves_todays_choice(reply: str | Exception, why: str) -> None:
    choice = ModelChooser(Fake(reply)).choose("q?", BLOCKS, today=2)
    assert (choice.rank, choice.by_model, choice.why) == (2, False, why)


def test_a_slow_choice_leaves_todays_choice() -> None:
    choice = ModelChooser(Fake("3", delay=0.02), time_limit_s=0.01).choose("q?", BLOCKS, 1)
    assert choice.rank == 1 and choice.reply == "3" and choice.why.startswith("the choice took")


def test_one_candidate_asks_no_model() -> None:
    fake = Fake("1")
    choice = ModelChooser(fake).choose("q?", BLOCKS[:1], today=1)
    assert not fake.asked and choice.rank == 1 and choice.why == "one candidate"


def test_the_real_model_replies_one_offered_number(generator: Generator) -> None:
    choice = ModelChooser(generator.complete).choose("Which function parses dates?", BLOCKS,
                                                     today=1)
    assert choice.by_model, choice.why
    assert choice.rank in (1, 2, 3, 4) and parse_choice(choice.reply, 4) is not None
