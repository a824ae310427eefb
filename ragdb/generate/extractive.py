"""Citation-only extractive answers: the best passages of the retrieved sources, each cited [n].

No language model writes anything: every passage is a verbatim span of a source
(`source.text[start:end]`), shown after `clean_markup` and followed by its source number. The
embedding function is a parameter (unit vectors in, as `ragdb.embed.Embedder.embed` returns),
so this module and its parts (answer_units, passage_choice, spans, markup, answer_signals,
code_window) depend on nothing but `ragdb.tokenize` and numpy.

The flow: answer_units cuts each source into the units an answer may quote; passage_choice
scores them and chooses the passages (how, in its docstring); this module shows them, code as
a fenced block with `...` where lines are left out, and composes the cited answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ragdb.generate.code_prose import LABEL
from ragdb.generate.markup import clean_markup
from ragdb.generate.passage_choice import DEFAULT_SETTINGS, Embed, Settings, select_passages
from ragdb.generate.spans import Passage, SourceText


def _shown(passage: Passage) -> str:
    if passage.code:
        lines: list[str] = []
        offset = -1  # where the line after the last shown one starts
        for start, line in passage.context:
            if lines and start != offset:
                lines.append(_elision(line))
            lines.append(line)
            offset = start + len(line) + 1
        window = (passage.indent + passage.text).split("\n")
        if (lines and passage.start - len(passage.indent) != offset) \
                or (passage.elided and not lines):
            lines.append(_elision(window[0]))
        lines += window
        if passage.elided_after >= 0:
            lines.append(" " * passage.elided_after + "...")
        width = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
        body = "\n".join(x[width:].rstrip() for x in lines)
        return f"```\n{body}\n```"
    # A table row under its column names: both verbatim lines of the source.
    return clean_markup("\n".join([line for _, line in passage.context] + [passage.text]),
                        passage.link_targets)


def _elision(line: str) -> str:
    """`...` at the indentation of the line that follows it: lines left out."""
    return line[:len(line) - len(line.lstrip())] + "..."


def compose_pieces(passages: Sequence[Passage], *, labels: bool = True) -> Iterator[str]:
    """Each passage as shown with its citation, one piece at a time (for streaming); code of a
    code file under its label (`From `path`, `name`:`), unless `labels` is False."""
    for n, passage in enumerate(passages):
        shown = _shown(passage)
        if labels and passage.label:
            shown = f"{passage.label}\n{shown}"
        cite = f"[{passage.number}]"
        ends_in_block = shown.rstrip().endswith(("```", "~~~"))
        piece = f"{shown}\n{cite}" if ends_in_block else f"{shown} {cite}"
        yield piece if n == 0 else "\n\n" + piece


def compose(passages: Sequence[Passage], *, labels: bool = True) -> tuple[str, list[int]]:
    """The answer text and the source numbers it cites, in order of first citation."""
    text = "".join(compose_pieces(passages, labels=labels))
    cited = list(dict.fromkeys(p.number for p in passages))
    return text, cited


def is_label(line: str) -> bool:
    """A line of ragdb's own that names the code below it (code_label), not a quote."""
    return bool(LABEL.fullmatch(line.strip()))


@dataclass(frozen=True)
class ExtractiveAnswer:
    text: str
    cited: list[int]
    passages: list[Passage]


def answer(
    question: str,
    sources: Sequence[SourceText],
    embed: Embed | None = None,
    *,
    settings: Settings = DEFAULT_SETTINGS,
) -> ExtractiveAnswer:
    """Select and compose in one call."""
    passages = select_passages(question, sources, embed, settings=settings)
    text, cited = compose(passages)
    return ExtractiveAnswer(text, cited, passages)
