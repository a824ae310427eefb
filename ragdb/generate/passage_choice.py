"""Which units answer: each candidate scored, the best chosen, and how each is shown.

Settings are global, chosen on the tuning questions (the first 50 public docs questions, the
code questions outside bench_accept's sample, half A of the four repositories; numbers in
benchmarks/EXTRACTIVE.md). The units come from answer_units, as candidates that passage_candidates
marks worth showing or not:

* score = lexical_weight * BM25 + (1 - lexical_weight) * cosine, each scaled to [0, 1] over the
  question's candidate units (BM25 over identifier-split, lightly stemmed terms, IDF over the
  units themselves, so a word common to all the sources counts little); only the
  `embed_limit` units best by BM25 and priors are embedded (embedding is nearly all the time
  on 2 cores, and embedding all units measured no better), the rest keep their BM25 part;
* priors: the search's own ranking (source n weighs 1 / (1 + rank_decay * (n - 1))), length
  (units past `soft_chars` lose score in proportion), code files (`code_weight`) and the
  answer-bearing signals of answer_signals.py (the asked kind of thing held or not, the asked
  thing's phrase, pointers, units made of the question's own words, definitions of a name the
  question writes);
* greedy choice of the best units, skipping overlaps and near-duplicates, while a unit scores at
  least `min_relative` of the best one, up to `max_passages` and `max_chars`; shown in source
  order, a table row under its header row;
* code is shown as the lines that answer (code_window.py): a chosen piece of a definition
  longer than a code unit as the run of its lines that best matches the question, under the
  signature lines it lies in, `...` marking lines left out, closing the brackets it opens;
  code a chunk cut inside a statement the same way, under `...`; the first code passage led by
  one sentence of its source's docstring or comment where the code does not show it;
* a unit cut out of its context in prose (a sentence the chunk's start cut) or code that is only
  imports or a comment banner is scored with the others but never chosen.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ragdb.generate.answer_signals import (
    Asked,
    Signals,
    Weights,
    asked,
    factor,
    signals,
    wants_targets,
)
from ragdb.generate.answer_units import unit_passage
from ragdb.generate.code_prose import code_label, lead_sentence
from ragdb.generate.code_window import defines_asked, setting_passage, windowed
from ragdb.generate.passage_candidates import Candidate, fallback_passages, unit_candidates
from ragdb.generate.spans import Passage, SourceText, idf, is_code, terms
from ragdb.generate.spans import bm25 as _bm25

if TYPE_CHECKING:  # imported when an answer is scored: `ragdb index` loads this module too
    import numpy as np

Embed = Callable[[list[str]], "np.ndarray"]


@dataclass(frozen=True)
class Settings:
    """Global knobs (never per question). Defaults measured in benchmarks/EXTRACTIVE.md."""

    lexical_weight: float = 0.7  # share of BM25 in the score; the rest is cosine
    k1: float = 1.2
    b: float = 0.75
    rank_decay: float = 0.5  # source n weighs 1 / (1 + rank_decay * (n - 1))
    soft_chars: int = 450  # longer units lose score in proportion to their excess length
    max_unit_chars: int = 1200  # longer units are not candidates at all
    max_passages: int = 3
    max_chars: int = 1000  # total raw characters of the chosen passages (the first always goes)
    min_relative: float = 0.7  # a further passage must score this share of the best one
    duplicate_jaccard: float = 0.6  # term-set overlap above which a unit repeats a chosen one
    # Only the units best by BM25 and rank are embedded (0: all): on 2 cores embedding is
    # nearly all of an answer's time; the rest keep their BM25 half only.
    embed_limit: int = 8
    code_weight: float = 0.4  # score factor for passages from code files (answers are read)
    # Answer-bearing signals (answer_signals.py): what the question asks for, held or not.
    kind_weight: float = 0.3
    missing_kind: float = 0.2
    missing_number: float = 0.3
    focus_weight: float = 1.0
    missing_focus: float = 0.4
    pointer_penalty: float = 0.5
    restating_penalty: float = 0.6
    novelty_floor: float = 0.3
    define_weight: float = 1.0
    # Code defining a routine the question names ("... in X's forward method") over the
    # other code (the class head, its `__init__`); that definition is not weighed as code.
    routine_weight: float = 1.0
    missing_routine: float = 0.5
    # Code with a line setting a name the question asks about (`kv_states: ... = None` in a
    # signature, `mixtral_supported = [`) over the code that only uses it.
    sets_weight: float = 0.5
    # Where the question writes an identifier (`psutil_pid_exists`) that a candidate of code
    # defines: that code, and code writing the identifier, is not weighed as code (nor the
    # definition as cut), and prose that does not write it weighs x (1 - missing_identifier)
    # (the docs of what the function is for, asked how it does it); the definition x (1 +
    # identifier_weight) more. 1.0 there took the place of the caller that held the answer
    # (the check of what `get_multimodal_embeddings` returns), and measured no better.
    identifier_weight: float = 0.0
    missing_identifier: float = 0.6
    # Code windows (code_window.py): the least a window of a long definition shows, and the
    # most one of code cut out of its context does.
    window_min_chars: int = 300
    # A window may grow to the end of the definition it lies in, within this many characters
    # (0: off; 1000 cost code tuning F1 0.187 -> 0.180, issue 19 round 8).
    window_whole_chars: int = 0
    cut_window_chars: int = 400
    cut_weight: float = 0.6  # score factor for code cut out of its context (a fragment)
    # A pointer ("please refer to ...") is not chosen while a unit that is none scores this
    # share of it (unless the question asks "where"): it sends the reader off for the content.
    pointer_yield: float = 0.5
    code_lead: int = 1  # 1: a code answer leads with its docstring's or comment's sentence
    # A question of two parts ("what does X default to, and how does ... interact") answered
    # on one: when the chosen passages miss this share of the question's term weight (IDF over
    # the candidates; terms no candidate holds do not count), the best candidate holding the
    # missing terms is added, if it scores `cover_relative` of the best (0: off). Held out,
    # read in blind pairs: satisfied yes / partly / no 25 / 49 / 36 against 21 / 37 / 52 of 110
    # changed answers, exam rule 59 against 53 (README, round 11).
    cover_share: float = 0.3
    cover_relative: float = 0.3
    # The sentence right after the best passage, in its paragraph, where it holds a question
    # term or the asked kind and fits the room (1: on; 0: off): what a sentence leads to comes
    # after it ("If you read it with `stream()`, ..." then "Any later call ... raises").
    next_sentence: int = 0

    def weights(self) -> Weights:
        return Weights(kind=self.kind_weight, missing_kind=self.missing_kind,
                       missing_number=self.missing_number,
                       focus=self.focus_weight, missing_focus=self.missing_focus,
                       pointer=self.pointer_penalty, restating=self.restating_penalty,
                       novelty_floor=self.novelty_floor, defines=self.define_weight,
                       routine=self.routine_weight, missing_routine=self.missing_routine,
                       sets=self.sets_weight)


DEFAULT_SETTINGS = Settings()
#: The writer's context. Wider settings (6 passages, 3,000 characters, 20% of the best: 3.8
#: passages and about 1,250 characters on the tuning questions against 1.4 and 460) read better
#: on the tuning questions, but on the held-out sample the same readers found more unsupported
#: claims in them (33 against 21 of 113 paired answers) for 11 more passing the exam rule: the
#: writer wrote more and fell back less. So the writer is shown what the extractive
#: answer shows (README, "Answers a strict reader accepts", round 10).
#: The passage added for the part of a question left out (cover_share) is not shown to the
#: writer: its context stays what was measured (more context, more unsupported claims).
WRITER_SETTINGS = replace(DEFAULT_SETTINGS, cover_share=0.0)

_EMBED_CHARS = 600  # past this a unit's start says enough for its vector


def _scaled(values: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1]; all equal gives zeros (no unit is preferred)."""
    if not len(values):
        return values
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-9:
        import numpy as np

        return np.zeros_like(values)
    return (values - low) / (high - low)


_LISTED = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)]|\|)[ \t]*\S", re.M)


#: A question asking for a value ("the default value of `kv_states`", "what values ..."):
#: the line setting the asked name holds it.
_VALUE_WORDS = frozenset({"default", "defaults", "value", "values"})


def _signals(ask: Asked, candidate: Candidate) -> Signals:
    """The answer-bearing signals of one candidate (see answer_signals)."""
    unit = candidate.unit
    listed = unit.kind in ("item", "row") or len(_LISTED.findall(candidate.shown)) >= 2
    text = candidate.source.text
    head = text[unit.block_start:unit.block_end].split("\n", 1)[0] \
        if 0 <= unit.block_start < unit.start else ""
    code = is_code(candidate.source) or unit.kind == "literal"
    found = signals(ask, candidate.shown, text[unit.start:unit.end], code=code, listed=listed,
                    head=head, bag=set(candidate.bag))
    # Inside a definition only (an indented line): a module-level statement setting an asked
    # name is shown beside the code using it anyway (_settings_shown), on its own.
    if code and ask.terms & _VALUE_WORDS and any(
            line[:1].isspace() and defines_asked(line, set(ask.terms))
            for line in candidate.shown.split("\n")):
        found = replace(found, sets=True)
    return found


# One import, include or use statement of Python, C and C++, JavaScript and TypeScript, Go, Rust
# or Java (a package line too), with what follows it on its line.
def _overlaps(a: Candidate, b: Candidate) -> bool:
    return (a.source.number == b.source.number
            and a.unit.start < b.unit.end and b.unit.start < a.unit.end)


def _duplicate(a: Candidate, b: Candidate, threshold: float) -> bool:
    x, y = set(a.bag), set(b.bag)
    if not x or not y:
        return a.shown == b.shown
    return len(x & y) / len(x | y) >= threshold or a.shown in b.shown or b.shown in a.shown


def select_passages(
    question: str,
    sources: Sequence[SourceText],
    embed: Embed | None = None,
    *,
    settings: Settings = DEFAULT_SETTINGS,
    on_passage: Callable[[Passage], None] | None = None,
) -> list[Passage]:
    """The best passages for the question, in source order; [] only when no source has text.

    Without `embed` the score is BM25 alone. `on_passage` sees each passage as it is settled,
    in the order they are returned, so a caller can stream them.
    """
    query = set(terms(question))
    candidates = [_as_window(c, query, settings) if c.cut else c
                  for c in unit_candidates(sources, settings.max_unit_chars)]
    passages: list[Passage] = []
    if candidates:
        ask = asked(question)
        sigs = [_signals(ask, c) for c in candidates]
        score = _scores(question, ask, candidates, sigs, embed, settings)
        order = sorted((i for i, c in enumerate(candidates) if c.showable), key=lambda i: -score[i])
        order = _pointers_yield(order, sigs, score, ask, settings.pointer_yield)
        chosen: list[Candidate] = []
        best, used = 0.0, 0
        for i in order:
            c = candidates[i]
            if score[i] <= 0 or len(chosen) >= settings.max_passages:
                break
            if chosen and (score[i] < settings.min_relative * best
                           or used + c.unit.end - c.unit.start > settings.max_chars):
                continue
            if "list" in ask.kinds and c.unit.kind == "item":
                c = _whole_list(c, candidates, settings.max_chars - used if chosen
                                else settings.max_chars)
            if any(_overlaps(c, o) or _duplicate(c, o, settings.duplicate_jaccard)
                   for o in chosen):
                continue
            shown = _display(c, float(score[i]), query, settings, ask)
            # Two pieces of one block may give one window: the second is not shown.
            if shown is None or any(_overlapping(p, shown) for p in passages):
                continue
            if not chosen:
                best = float(score[i])
            chosen.append(c)
            passages.append(shown)
            used += c.unit.end - c.unit.start
        covering = _covering(candidates, score, order, chosen, passages, query, ask, settings,
                             best, used)
        if covering is not None:
            chosen.append(covering[0])
            passages.append(covering[1])
            used += covering[0].unit.end - covering[0].unit.start
        for c, shown in _neighbours_shown(candidates, chosen, query, settings, ask,
                                          settings.max_chars - used):
            if not any(_overlapping(p, shown) for p in passages):
                passages.append(shown)
                used += c.unit.end - c.unit.start
        if settings.next_sentence and chosen:
            after = _next_sentence(candidates, chosen, sigs, query, ask,
                                   settings.max_chars - used)
            if after is not None:
                shown = _display(after, 0.0, query, settings, ask)
                if shown is not None and not any(_overlapping(p, shown) for p in passages):
                    chosen.append(after)
                    passages.append(shown)
    if not passages:
        passages = fallback_passages(sources)
    passages += _settings_shown(passages, sources, query)
    passages = _rows_merged(passages)
    passages.sort(key=lambda p: (p.number, p.start))
    if settings.code_lead:
        passages = _with_lead(passages, sources)
    by_number = {s.number: s for s in sources}
    passages = [replace(p, label=code_label(by_number[p.number], p))
                if p.code and p.number in by_number and is_code(by_number[p.number]) else p
                for p in passages]
    if on_passage is not None:
        for passage in passages:
            on_passage(passage)
    return passages


def _scores(question: str, ask: Asked, candidates: list[Candidate], sigs: list[Signals],
            embed: Embed | None, settings: Settings) -> np.ndarray:
    """Each candidate's score: BM25 and cosine, times the rank, answer-signal (`sigs`, one
    per candidate), code and length priors (see the module's docstring)."""
    import numpy as np

    query = set(terms(question))
    lexical = _scaled(_bm25(query, [c.bag for c in candidates], settings.k1, settings.b))
    prior = np.array([1 / (1 + settings.rank_decay * (max(1, c.source.number) - 1))
                      for c in candidates])
    weights = settings.weights()
    prior = prior * np.array([factor(ask, sig, weights) for sig in sigs])
    if embed is not None:
        shortlist = np.argsort(-(lexical * prior), kind="stable")
        if settings.embed_limit > 0:
            shortlist = shortlist[: settings.embed_limit]
        texts = [question] + [candidates[i].shown[:_EMBED_CHARS] for i in shortlist]
        vectors = np.asarray(embed(texts))
        dense = np.zeros(len(candidates))
        dense[shortlist] = _scaled(vectors[1:] @ vectors[0])
        score = settings.lexical_weight * lexical + (1 - settings.lexical_weight) * dense
    else:
        score = lexical
    score = score * prior
    # The identifiers the question writes that a showable candidate of code defines.
    defined = set().union(*(sig.identifiers for c, sig in zip(candidates, sigs)
                            if c.showable))
    writes = [bool(defined) and any(name in c.shown.lower() for name in defined)
              for c in candidates]
    if settings.code_weight != 1.0:
        score = score * np.array([settings.code_weight if is_code(c.source) and not (
            sig.routine or sig.identifiers or wrote) else 1.0
            for c, sig, wrote in zip(candidates, sigs, writes)])
    for i, c in enumerate(candidates):
        if defined:
            if sigs[i].identifiers:
                score[i] *= 1 + settings.identifier_weight
            elif not is_code(c.source) and not writes[i]:
                score[i] *= 1 - settings.missing_identifier
        if c.cut and not sigs[i].identifiers:
            score[i] *= settings.cut_weight
        excess = (c.unit.end - c.unit.start) - settings.soft_chars
        if excess > 0:
            score[i] *= settings.soft_chars / (settings.soft_chars + excess)
    return score


def _covering(candidates: list[Candidate], score: np.ndarray, order: list[int],
              chosen: list[Candidate], passages: list[Passage], query: set[str], ask: Asked,
              settings: Settings, best: float, used: int
              ) -> tuple[Candidate, Passage] | None:
    """The candidate that answers the part of the question the chosen passages leave out
    (settings.cover_share), shown as it would be; None when they cover enough or none does."""
    if settings.cover_share <= 0 or not chosen:
        return None
    n = len(candidates)
    df = Counter(t for c in candidates for t in set(c.bag) if t in query)
    weight = {t: idf(n, d) for t, d in df.items()}
    held = set().union(*(set(c.bag) for c in chosen))
    missing = {t: w for t, w in weight.items() if t not in held}
    total = sum(weight.values())
    if not total or sum(missing.values()) < settings.cover_share * total:
        return None
    picked: tuple[float, int] | None = None
    for i in order:
        c = candidates[i]
        gain = sum(w for t, w in missing.items() if t in c.bag)
        if (gain <= 0 or score[i] <= 0 or score[i] < settings.cover_relative * best
                or used + c.unit.end - c.unit.start > settings.max_chars
                or any(_overlaps(c, o) or _duplicate(c, o, settings.duplicate_jaccard)
                       for o in chosen)):
            continue
        value = float(score[i]) * gain
        if picked is None or value > picked[0]:
            picked = (value, i)
    if picked is None:
        return None
    c = candidates[picked[1]]
    shown = _display(c, float(score[picked[1]]), query, settings, ask)
    if shown is None or any(_overlapping(p, shown) for p in passages):
        return None
    return c, shown


def _pointers_yield(order: list[int], sigs: list[Signals], score: np.ndarray,
                    ask: Asked, share: float) -> list[int]:
    """`order` without the pointers that a unit pointing nowhere scores `share` of: "For the
    most up-to-date information on quantization methods, please refer to ..." holds the
    question's words, but the list of methods further down is what answers. A question
    asking "where" keeps them (the pointer's target is its answer)."""
    if "place" in ask.kinds or share <= 0:
        return order
    pointers = {i for i in order if sigs[i].pointer}
    best_content = max((float(score[i]) for i in order if i not in pointers), default=0.0)
    return [i for i in order if i not in pointers or best_content < share * float(score[i])]


def _whole_list(item: Candidate, candidates: list[Candidate], room: int) -> Candidate:
    """A list question answered by one item gets the list: the item's list with the sentence
    or heading that introduces it (the joined unit holding the item), where it is showable
    and fits in `room` characters; else the item. One bullet ("Note: coverage may change")
    of the list asked for is a partial answer."""
    best = item
    for c in candidates:
        unit = c.unit
        if c.source is item.source and unit.kind == "joined" and c.showable \
                and unit.start <= item.unit.start and item.unit.end <= unit.end \
                and unit.end - unit.start <= room and "\n" in c.shown \
                and (best is item or unit.end - unit.start < best.unit.end - best.unit.start):
            best = c
    return best


def _display(c: Candidate, score: float, query: set[str], settings: Settings,
             ask: Asked) -> Passage | None:
    """How a chosen candidate is shown: code cut out of its context as the window of its lines
    that answers (None when no line does), a piece of a long definition as its window under
    the signature, anything else as it is."""
    unit = c.unit
    if unit.block_start >= 0:
        window = windowed(c.source, (unit.start, unit.end), (unit.block_start, unit.block_end),
                          score, query, settings.k1, min_chars=settings.window_min_chars,
                          platforms=ask.platforms, whole_chars=settings.window_whole_chars)
        if window is not None or c.cut:
            return window
    elif c.cut:
        return replace(c.window, score=score) if c.window is not None else None
    passage = unit_passage(c.source, unit, score)
    if not passage.code and wants_targets(ask, c.shown):
        passage = replace(passage, link_targets=True)
    return passage


def _as_window(c: Candidate, query: set[str], settings: Settings) -> Candidate:
    """Code cut out of its context, scored as what it would show: the window of its lines
    that answers (not showable when no line does)."""
    unit = c.unit
    if unit.block_start >= 0:
        return c  # a piece of a long definition: shown as the definition's window
    span = (unit.start, unit.start + min(unit.end - unit.start, settings.cut_window_chars))
    window = windowed(c.source, span, (unit.start, unit.end), 0.0, query, settings.k1, cut=True)
    if window is None:
        return replace(c, showable=False)
    return replace(c, shown=window.text, bag=Counter(terms(window.text)), window=window)


def _neighbours_shown(candidates: list[Candidate], chosen: list[Candidate], query: set[str],
                      settings: Settings, ask: Asked, room: int
                      ) -> list[tuple[Candidate, Passage]]:
    """Code right next to chosen code (only blank lines between, in the same source, not a
    piece of a long definition) that holds a question term no chosen passage holds: the
    `// deprecated` constants after the flags asked by name ("... and what about the
    deprecated ones?"), within `room` characters; at most one."""
    held = {t for c in chosen for t in c.bag}
    for c in chosen:
        if not is_code(c.source) or c.unit.block_start >= 0 or c.cut:
            continue
        text = c.source.text
        for n in candidates:
            unit = n.unit
            if n.source is not c.source or not n.showable or n.cut or unit.block_start >= 0 \
                    or unit.end - unit.start > room or n in chosen:
                continue
            between = text[c.unit.end:unit.start] if unit.start >= c.unit.end \
                else text[unit.end:c.unit.start] if unit.end <= c.unit.start else "x"
            if between.strip() or between.count("\n") > 2 or not (set(n.bag) - held) & query:
                continue
            shown = _display(n, 0.0, query, settings, ask)
            if shown is not None:
                return [(n, shown)]
    return []


def _next_sentence(candidates: list[Candidate], chosen: list[Candidate], sigs: list[Signals],
                   query: set[str], ask: Asked, room: int) -> Candidate | None:
    """The sentence after the best passage when that is a sentence of prose: next in its
    paragraph (only spaces and one line break between), not chosen, showable, within `room`,
    holding a question term or the asked kind."""
    best = chosen[0]
    if is_code(best.source) or best.unit.kind not in ("sentence", "joined"):
        return None
    text = best.source.text
    for n, c in enumerate(candidates):
        unit = c.unit
        if c.source is not best.source or unit.kind != "sentence" or unit.start < best.unit.end:
            continue
        between = text[best.unit.end:unit.start]
        if between.strip() or between.count("\n") > 1:
            continue
        if c in chosen or not c.showable or unit.end - unit.start > room:
            return None
        if set(c.bag) & query or (ask.kinds and sigs[n].kind):
            return c
        return None
    return None


#: How many statements setting an asked name (from the file of the code using it) may join
#: the chosen passages.
_MAX_SETTINGS = 2


def _settings_shown(passages: list[Passage], sources: Sequence[SourceText], query: set[str]
                    ) -> list[Passage]:
    """For the code passages shown, the statements of the same file, not shown yet, that set
    a name the question asks about and the code uses (`_MAX_IMAGE_SIZE = 9999999` for the
    method passing `_MAX_IMAGE_SIZE` on): the code shows what is done with the value, the
    statement what the value is."""
    by_number = {s.number: s for s in sources}
    added: list[Passage] = []
    for passage in passages:
        used = by_number.get(passage.number)
        if used is None or not passage.code or not is_code(used):
            continue
        uses = passage.text + "".join(line for _, line in passage.context)
        for source in sources:
            if source.file_path != used.file_path or len(added) >= _MAX_SETTINGS:
                continue
            shown = [(p.start, p.end) for p in passages + added if p.number == source.number]
            shown += [(s, s + len(line)) for p in passages + added
                      if p.number == source.number for s, line in p.context]
            found = setting_passage(source, uses, query, passage.score, shown)
            if found is not None:
                added.append(found)
    return added


def _with_lead(passages: list[Passage], sources: Sequence[SourceText]) -> list[Passage]:
    """In source order, the first code passage of a code file led by one sentence of its
    source's own prose (the docstring or comment that says what the code does), where there
    is one and the code does not show it: shown right before the code."""
    by_number = {s.number: s for s in sources}
    ordered = sorted(passages, key=lambda p: (p.number, p.start))
    for n, passage in enumerate(ordered):
        source = by_number.get(passage.number)
        if source is None or not passage.code or not is_code(source):
            continue
        lead = lead_sentence(source, passage)
        if lead is not None and not any(_overlapping(lead, p) for p in ordered
                                        if p is not passage):
            return ordered[:n] + [lead] + ordered[n:]
        break
    return ordered


def _overlapping(a: Passage, b: Passage) -> bool:
    """Two passages of one source share text: their spans, or one's span and the other's
    context lines (a window under `def f(` and a window that is that line)."""
    if a.number != b.number:
        return False

    def meets(start: int, end: int, other: Passage) -> bool:
        return any(start < e and s < end for s, e in
                   [(other.start, other.end)] + [(s, s + len(x)) for s, x in other.context])

    return meets(a.start, a.end, b) or meets(b.start, b.end, a)


def _rows_merged(passages: list[Passage]) -> list[Passage]:
    """Rows of one table shown once under its column names: the last row keeps the others
    (and the header) as its context lines, in source order."""
    tables: dict[tuple[int, int], list[Passage]] = {}
    for passage in passages:
        if not passage.code and passage.context:
            tables.setdefault((passage.number, passage.context[0][0]), []).append(passage)
    out = [p for p in passages if p.code or not p.context]
    for rows in tables.values():
        rows.sort(key=lambda p: p.start)
        last = rows[-1]
        context = rows[0].context + tuple((p.start, p.text) for p in rows[:-1])
        out.append(replace(last, context=context, score=max(p.score for p in rows)))
    return out
