"""The writers' sentences kept only where worded as their block words them, in its order
(ragdb/generate/wording.py): the misreadings blind readers found in the offline writer's
answers on repos4 (data/bench/blocks4wq), made of their block's own words, which the
word-level check passes. No model is run here; the sources are verbatim excerpts of lz4 and
Tornado (the repos4 set's files, the blocks the writer was shown).
"""

from __future__ import annotations

from ragdb.generate.checking import CHECKED, CitedSource, check_answer
from ragdb.generate.wording import STRETCH, in_order, words

# lz4 lib/lz4frame.h, lines 135-143 (verbatim).
LINKED = CitedSource(1, "lib/lz4frame.h", (
    "/* Linked blocks sharply reduce inefficiencies when using small blocks,\n"
    " * they compress better.\n"
    " * However, some LZ4 decoders are only compatible with independent blocks */\n"
    "typedef enum {\n    LZ4F_blockLinked=0,\n    LZ4F_blockIndependent\n"
    "    LZ4F_OBSOLETE_ENUM(blockLinked)\n    LZ4F_OBSOLETE_ENUM(blockIndependent)\n"
    "} LZ4F_blockMode_t;"
))
# tornado tornado/process.py, lines 95-102 (verbatim).
FORK = CitedSource(1, "tornado/process.py", (
    "    In each child process, ``fork_processes`` returns its *task id*, a\n"
    "    number between 0 and ``num_processes``.  Processes that exit\n"
    "    abnormally (due to a signal or non-zero exit status) are restarted\n"
    "    with the same id (up to ``max_restarts`` times).  In the parent\n"
    "    process, ``fork_processes`` calls ``sys.exit(0)`` after all child\n"
    "    processes have exited normally.\n\n"
    "    max_restarts defaults to 100."
))
# tornado tornado/web.py, lines 3744-3750 (verbatim).
GZIP = CitedSource(1, "tornado/web.py", (
    "    GZIP_LEVEL = 6\n"
    "    # Responses that are too short are unlikely to benefit from gzipping\n"
    "    # after considering the \"Content-Encoding: gzip\" header and the header\n"
    "    # inside the gzip encoding.\n"
    "    # Note that responses written in multiple chunks will be compressed\n"
    "    # regardless of size.\n"
    "    MIN_LENGTH = 1024"
))
# tornado docs/guide/coroutines.rst, lines 63-69 (verbatim).
NATIVE = CitedSource(1, "docs/guide/coroutines.rst", (
    "- Native coroutines:\n\n"
    "  - are generally faster.\n"
    "  - can use ``async for`` and ``async with``\n"
    "    statements which make some patterns much simpler.\n"
    "  - do not run at all unless you ``await`` or\n"
    "    ``yield`` them. Decorated coroutines can start running \"in the\n"
    "    background\" as soon as they are called."
))


def test_words_are_the_sentence_s_own_less_stopwords_and_citations() -> None:
    assert words("They do not run at all unless you `await` them [1].") == (
        "run", "unless", "await")
    # an identifier is one word; inflections meet ("setting" the block's "set")
    assert words("the `cross_origin_protection` setting expires") == (
        "crossoriginprotection", "set", "expir")


def test_a_sentence_in_its_block_s_words_and_order_is_kept() -> None:
    question = "How do native `async def` coroutines differ from `@gen.coroutine` ones?"
    written = ("Native coroutines are generally faster [1]. They can use `async for` and "
               "`async with` statements which make some patterns much simpler [1]. They do "
               "not run at all unless you `await` or `yield` them [1].")
    checked = check_answer(written, [NATIVE], question=question)
    assert checked.text == written and not checked.report.dropped


def test_an_inverted_trade_off_in_the_block_s_own_words_is_dropped() -> None:
    question = "What is the trade-off between independent and linked blocks in an LZ4 frame?"
    written = ("The trade-off between independent and linked blocks in an LZ4 frame is that "
               "independent blocks reduce inefficiencies when using small blocks, while linked "
               "blocks compress better. [1]")
    checked = check_answer(written, [LINKED], question=question)  # words: all the block's
    assert checked.too_little and not checked.text
    assert "order" in checked.report.dropped[0]["reason"]
    said = "Linked blocks sharply reduce inefficiencies when using small blocks [1]."
    assert check_answer(said, [LINKED], question=question).text == said


def test_a_number_or_a_qualifier_moved_to_another_case_is_dropped() -> None:
    forked = ("When a child crashes or exits, Tornado restarts it with the same id up to 100 "
              "times [1].")
    question = ("How does Tornado supervise the worker processes it forks: what happens when a "
                "child crashes or exits?")
    assert not check_answer(forked, [FORK], question=question).text
    gzip = "Short responses are compressed regardless of size. [1]"
    assert not check_answer(gzip, [GZIP], question="Are short responses compressed too?").text
    said = "Responses written in multiple chunks will be compressed regardless of size [1]."
    assert check_answer(said, [GZIP], question="Are short responses compressed too?").text == said


def test_the_block_s_words_in_order_but_spread_wider_than_the_stretch_are_not_one_claim() -> None:
    block = "alpha " + " ".join(f"filler{i}" for i in range(3 * STRETCH)) + " omega"
    assert not in_order("alpha omega", block)
    assert in_order("alpha omega", "alpha filler omega")
    assert not in_order("omega alpha", "alpha filler omega")
    assert in_order("the", "anything")  # only stopwords: nothing to place (other rules judge)


def test_the_report_says_the_order_was_checked() -> None:
    said = "Linked blocks sharply reduce inefficiencies when using small blocks [1]."
    report = check_answer(said, [LINKED]).report.as_json()
    assert report["checked"] == CHECKED and "in its order" in report["checked"][-1]
