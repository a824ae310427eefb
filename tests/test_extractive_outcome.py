"""Issue 19, session 34: "what happens if ..." is answered by what follows, not by the action.

Read from rejected answers of the held-out sample (repos2 and repos3): asked what happens when
something is done, the answer showed the example that does it, or a sentence sharing the
question's words, while the sentence after it in the same source said the consequence ("Any
subsequent calls ... will raise an error"). A question asking what happens now asks for an
outcome (answer_signals: an error raised, a value returned, a thing skipped or refused, a
fallback), held by prose; code is not weighed by it (its comments name outcomes as often as
its statements do).
"""

from __future__ import annotations

from ragdb.generate.answer_signals import asked, factor, signals
from ragdb.generate.extractive import SourceText
from ragdb.generate.passage_choice import DEFAULT_SETTINGS
from tests.test_extractive_coherence import answer

STREAM = """## Streaming uploads

Read the body in pieces with `upload.chunks()`:

```python
async def handler(upload):
    size = 0
    async for piece in upload.chunks():
        size += len(piece)
    return size
```

If you read the upload with `upload.chunks()`, its pieces come without storing the whole
upload in memory. Any later call to `.read()` or `.json()` raises an error.
"""

BENCH = """## Upload benchmark

The benchmark compares reading an upload with `upload.read()` and with `upload.chunks()`,
for payloads of 1 KiB and 1 MiB sent whole and in pieces. Every call reads a fresh upload.
"""


def test_what_happens_is_answered_by_the_consequence() -> None:
    sources = [SourceText(1, "docs/uploads.md", "markdown", STREAM),
               SourceText(2, "bench/README.md", "markdown", BENCH)]
    text = answer("What happens if I call `upload.read()` after reading the upload with "
                  "`upload.chunks()`?", sources)
    assert "Any later call to `.read()` or `.json()` raises an error." in text


def test_an_outcome_is_asked_anywhere_in_the_question_and_held_by_prose_only() -> None:
    ask = asked("In what order are settings read, and what happens if none is found?")
    assert "outcome" in ask.kinds
    assert "outcome" not in asked("What order are settings read in?").kinds
    weights = DEFAULT_SETTINGS.weights()
    said = "If none of those match, `config()` raises an error."
    prose = signals(ask, said, said, code=False, listed=False)
    other = signals(ask, "Settings live in one module.", "Settings live in one module.",
                    code=False, listed=False)
    assert prose.kind and not other.kind
    assert factor(ask, prose, weights) > factor(ask, other, weights)
    # A C comment saying "returns twice!" is no outcome: code is weighed as without the ask.
    comment = "/* returns twice! the 2nd time when the child finishes */"
    code = signals(ask, comment, comment, code=True, listed=False)
    plain = asked("In what order are settings read?")
    unasked = signals(plain, comment, comment, code=True, listed=False)
    assert factor(ask, code, weights) == factor(plain, unasked, weights)


def test_the_sentence_after_the_best_one_is_an_option_off_by_default() -> None:
    """Measured on the tuning answers (4 changed, read blind in pairs: satisfied 3 / 1 / 0 on
    both sides), so off; on, the sentence after the best passage in its paragraph comes with
    it where it holds a question term."""
    from dataclasses import replace

    from ragdb.generate.passage_choice import select_passages

    text = ("## Loading adapters\n\nTo load an adapter at run time, send a POST request to the "
            "`/v1/load_adapter` endpoint. The request payload holds the adapter's name and "
            "path.\n\nAdapters stay loaded until the server stops.\n")
    sources = [SourceText(1, "docs/adapters.md", "markdown", text)]
    question = "Which endpoint loads an adapter at run time, and what does the request hold?"
    off = [p.text for p in select_passages(question, sources)]
    assert DEFAULT_SETTINGS.next_sentence == 0
    on = [p.text for p in select_passages(
        question, sources, settings=replace(DEFAULT_SETTINGS, next_sentence=1))]
    assert not any("The request payload holds" in p for p in off)
    assert any("The request payload holds" in p for p in on)
    assert all(p in on for p in off)
