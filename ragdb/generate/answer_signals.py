"""What a question asks for, and whether a passage holds it: the answer-bearing signals of
extractive passage choice (issue 19).

BM25 and cosine reward the unit that shares the question's words, and the sentence that
restates a question shares them best ("The `_call_hf_processor` method specifies both
`mm_kwargs` and `tok_kwargs`", asked how the two differ). What answers holds something the
question lacks, of the kind it asks for: a number for "how many" or "which version", a name,
flag or command for "which parameter" or "how do I", a path or link for "where", several items
for "what are the ...s", a consequence (an error raised, a value returned, a thing skipped) for
"what happens". These signals read only the question's wording and the unit's text
(never a particular question or file), and weigh a unit's score by:

* the asked kind: held (and not already written in the question) or not;
* the focus: the words of the asked thing's phrase ("key capabilities" in "What are the key
  capabilities of Ray Serve LLM ...?"), which the restating sentence lacks;
* a pointer ("see ...", "refer to ...", "Full example: ...") sends the reader elsewhere; it
  answers only "where";
* novelty: the share of the unit's terms the question does not hold (a unit made only of the
  question's words restates it);
* code: a definition of a name the question writes (`def get_num_new_matched_tokens`) over
  its callers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragdb.generate.spans import terms
from ragdb.tokenize import STOPWORDS

#: The asked thing's phrase ends at the verb or preposition after it.
_PHRASE_END = (r"(?=\s+(?:do|does|did|is|are|was|were|can|could|should|must|will|would|has|"
               r"have|had|of|for|in|on|at|when|that|which|who|used|to|from|by|with|between|"
               r"under|if|after|before|during|get|gets|need|needs|required|supported|"
               r"available|recommended|allowed)\b|[?,]|$)")
_WHAT = re.compile(r"^(?:so\s+|and\s+)?(?:what|which)(?:'s|\s+is|\s+are|\s+was|\s+were)?\s+"
                   r"(?:(?:the|a|an|all(?:\s+the)?|some|any)\s+)?"
                   r"(?!(?:do|does|did|is|are|was|were|can|could|should|would|will|must|has|"
                   r"have|happens?|\w+ed)\b)(?P<focus>[^?]+?)" + _PHRASE_END)
_HOW_MANY = re.compile(r"^how\s+(?:many|much)\s+(?P<focus>[^?]+?)" + _PHRASE_END)
_HOW_NUMBER = re.compile(r"^how\s+(?:long|deep(?:ly)?|large|big|often|far|fast|old|high|low)\b")
_WHERE = re.compile(r"^(?:where|in which (?:file|directory|folder|module|page))\b")
#: A question about what follows from an action or a state ("What happens if I call `body()`
#: after `stream()`?", "..., and what happens if it finds none?"): anywhere in it, since a
#: question of two parts asks it second.
_WHAT_HAPPENS = re.compile(r"\bwhat (?:happens|will happen|would happen|happened)\b|"
                           r"\bwhat if\b", re.I)
#: What an answer to it says: the consequence (an error raised, a value returned, a thing
#: skipped or refused, a fallback), not the action asked about.
_OUTCOME = re.compile(
    r"\b(?:rais(?:e|es|ed|ing)|throw(?:s|n|ing)?|errors?|exceptions?|fail(?:s|ed|ure)?|"
    r"return(?:s|ed)?|ignor(?:e|es|ed)|skip(?:s|ped)?|reject(?:s|ed)?|refus(?:e|es|ed)|"
    r"abort(?:s|ed)?|crash(?:es|ed)?|discard(?:s|ed)?|dropp(?:ed)|drops|"
    r"falls? back|fell back|warn(?:s|ed|ing)?|overrid(?:e|es|den)|no effect|has no|"
    r"is (?:not|never) (?:called|run|sent|used|applied|read|written)|"
    r"(?:will|would|then) (?:be|get|stop|block|hang|wait|close|exit|end|continue|use))\b",
    re.I)
_HOW_TO = re.compile(r"^(?:how|what)\s+(?:do|does|can|could|should|would|must)\s+"
                     r"(?:i|you|we|one|users?|developers?)\s+(?P<verb>\w+)")
#: Verbs of "how do I ..." whose answer is a command, a flag, a setting or code.
_DOING = frozenset("""install build run start serve launch deploy uninstall enable disable set
    configure specify pass use load turn add make check view evaluate compile register select
    change override implement create write call import define choose switch limit control
    increase reduce stop debug profile benchmark test upgrade downgrade""".split())
#: Words of an asked thing whose answer is a number.
_NUMBER_NOUNS = frozenset("""version versions number count size port timeout limit bytes length
    threshold percentage percent ratio seconds samples rank depth width height dimension
    dimensions iterations steps""".split())
#: Words of an asked thing whose answer is a name, a flag, a setting or code.
_CODE_NOUNS = frozenset("""method methods function functions class classes parameter parameters
    param params argument arguments arg args flag flags option options variable variables endpoint
    endpoints command commands decorator field fields attribute attributes
    type types exception error errors setting settings interface interfaces backend
    backends implementation implementations architecture architectures constant constants
    property properties module modules file files name names value values format formats api
    apis object objects kernel kernels connector connectors hook hooks callback mode modes
    parser parsers class subclass base tool tools engine metric metrics field""".split())
_NUMBER_WORDS = frozenset("two three four five six seven eight nine ten".split())
_GENERIC_FOCUS = frozenset("""happens happen difference differences purpose role way ways thing
    things kind kinds main primary current currently exactly specifically""".split())

# A name written as code: `anything`, snake_case, CamelCase with an inner capital, --flags,
# dotted.paths and ALL_CAPS constants.
_NAME = re.compile(r"`([^`\n]+)`|(--?[a-z][\w-]+)|\b([A-Za-z_][\w]*_[\w]*|[a-z]+[A-Z]\w*|"
                   r"[A-Z][a-z0-9]+[A-Z]\w*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:\.post\d+)?\b")
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+", re.M)
_PLACE = re.compile(r"\]\(|https?://|<gh-(?:file|dir):|(?<![\w.])(?:[\w.-]+/)+[\w.-]+|"
                    r"\b[\w-]+\.(?:md|py|rst|txt|json|ya?ml|toml|sh|cfg|ini|ts|js|c|h|cu|rs)\b")
_POINTER = re.compile(
    r"(?:^|[.(;:,]\s+|\b(?:please|also|and|or)\s+)(?:see|refer to|check out|consult|visit)\b"
    r"|\b(?:refer to|check out|learn more|for more (?:information|details|info)"
    r"|(?:find|get|read) more (?:information|details|info)"
    r"|more (?:information|details) (?:can|is|are)|can be found|full example|see also"
    r"|(?:is|are) (?:described|documented|explained) (?:in|at|on|here)"
    r"|the (?:next|following|previous|later) (?:section|chapter|page)s?)\b", re.I)
# A line that defines a name: `def f(`, `class C`, `fn f`, `function f`, `struct S`,
# `#define M`, `const X =`...; and a constant or field, `NAME = ...` or `name: int = ...`.
_DEFINITION = re.compile(
    r"^[ \t]*(?:(?:pub(?:\([^)]*\))?|export|static|inline|async|const|unsafe|extern|virtual|"
    r"public|private|protected|default)\s+)*"
    r"(?:def|class|fn|function|struct|enum|trait|impl|interface|type|macro_rules!|#\s*define|"
    r"const|let|var)\s+([A-Za-z_]\w*)", re.M)
_ASSIGNMENT = re.compile(r"^[ \t]*([A-Za-z_]\w*)\s*(?::[^=\n]+)?=[^=]")
# A C-family function definition at the start of a line: `int\npsutil_pid_exists(pid_t pid) {`,
# `static PyObject *\npsutil_proc_kill(PyObject *self, PyObject *args) {`, its return type on
# the line or the one before; the body's brace ends the parameters (a `;` would make it a
# declaration or a call).
_C_FUNCTION = re.compile(
    r"^(?:[A-Za-z_][\w \t*]*[ \t*])?([A-Za-z_]\w*)[ \t]*\((?:[^;{}()]|\([^;{}()]*\))*\)"
    r"[ \t]*(?:\n[ \t]*)?\{", re.M)
_NOT_FUNCTION = frozenset({"if", "for", "while", "switch", "return", "sizeof", "catch"})
#: An identifier written as code: snake_case (an inner underscore) or camelCase (an inner
#: capital), the names of functions and variables; never a dunder (`__init__`, which every
#: class has), nor a PascalCase class name or an ALL_CAPS constant (a class's head is seldom
#: what answers about its code; the question names the class as a place, see `routines`).
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Asked:
    """What the question asks for, read from its wording alone."""

    terms: frozenset[str]
    focus: frozenset[str]  # terms of the asked thing's phrase
    kinds: frozenset[str]  # number, code, place, list, outcome: what an answer holds
    names: frozenset[str]  # names the question writes as code, lower-cased
    numbers: frozenset[str]  # numbers the question writes (an answer brings others)
    # Routines the question names ("Gemma2DecoderLayer's forward method", `load()`): the code
    # that answers is theirs, not their class's other methods.
    routines: frozenset[str] = frozenset()
    # Identifiers the question writes as code (`psutil_pid_exists`, `getAppDir`): code that
    # defines one is where "how does X ..." is answered, over docs about what X is for.
    identifiers: frozenset[str] = frozenset()
    # Operating systems the question names ("on Linux", "on Windows"): code branches for
    # another one hold no answer (see code_window.platform_branches).
    platforms: frozenset[str] = frozenset()


# How a question names an operating system; the same keys as code_window's _PLATFORM_CODE.
_PLATFORM_WORDS = {
    "windows": re.compile(r"\bWindows\b"),
    "macos": re.compile(r"\b(?:macOS|Mac ?OS|OS ?X|Darwin|Mac)\b"),
    "linux": re.compile(r"\bLinux\b", re.I),
    "bsd": re.compile(r"\b(?:Free|Open|Net)?BSD\b"),
    "sunos": re.compile(r"\b(?:Solaris|SunOS)\b", re.I),
    "aix": re.compile(r"\bAIX\b"),
}


def question_platforms(text: str) -> frozenset[str]:
    """The operating systems `text` names by their proper names (a capital "Windows", not a
    sliding window)."""
    return frozenset(k for k, pattern in _PLATFORM_WORDS.items() if pattern.search(text))


def _identifiers(text: str) -> set[str]:
    """The names of `text` written as code identifiers (see _IDENTIFIER), lower-cased."""
    out = set()
    for match in _NAME.finditer(text):
        name = next(g for g in match.groups() if g).strip("`").rstrip("()")
        if not _IDENTIFIER.fullmatch(name) or name.startswith("__"):
            continue
        if not name[:1].isupper() and ("_" in name.strip("_") or re.search(r"[a-z][A-Z]", name)):
            out.add(name.lower())
    return out


def _name_forms(text: str) -> set[str]:
    out = set()
    for match in _NAME.finditer(text):
        name = next(g for g in match.groups() if g)
        out.add(name.strip("`").lower())
        out.update(part.lower() for part in re.findall(r"[A-Za-z_]\w+", name))
    return out


_ROUTINE = re.compile(r"\b([A-Za-z_]\w*)`?\s+(?:method|function)\b")
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\(\)")
_NAMED_ROUTINE = re.compile(r"\b([A-Za-z_]\w*)\s+(?:method|function|constructor)\b")
_NOT_ROUTINE = STOPWORDS | {"which", "what", "helper", "same", "other", "new", "main", "this",
                            "that", "its", "their", "utility", "wrapper", "python", "class"}


def asked(question: str) -> Asked:
    """The question's terms, the asked thing's phrase, and the kinds of thing that answer."""
    text = " ".join(question.strip().split())
    low = text.lower()
    kinds: set[str] = set()
    focus_words: list[str] = []
    match = _HOW_MANY.match(low) or _WHAT.match(low)
    if match:
        focus_words = [w for w in re.findall(r"[\w-]+", match.group("focus"))
                       if w not in _GENERIC_FOCUS]
        if _HOW_MANY.match(low):
            kinds.add("number")
    if _HOW_NUMBER.match(low):
        kinds.add("number")
    if _WHERE.match(low):
        kinds.add("place")
    if _WHAT_HAPPENS.search(low):
        kinds.add("outcome")
    doing = _HOW_TO.match(low)
    if doing and doing.group("verb") in _DOING:
        kinds.add("code")
    words = {w.lower() for w in focus_words}
    if words & _NUMBER_NOUNS or re.search(r"\b(?:minimum|maximum|max|min)\b.*\b"
                                          r"(?:value|version|number|size)\b", low):
        kinds.add("number")
    if words & _CODE_NOUNS:
        kinds.add("code")
    plural = bool(focus_words) and focus_words[-1].endswith("s") \
        and not focus_words[-1].endswith(("ss", "us", "is"))
    if (plural and re.match(r"^(?:what|which)\b", low) and "number" not in kinds) \
            or words & _NUMBER_WORDS or re.search(r"\b(?:list|all the|each of)\b", low):
        kinds.add("list")
    quoted = _name_forms(text)
    # A method or function the question names by a plain word (`Gemma2DecoderLayer's forward
    # method`): code defining it is as much the question's as code defining the class.
    quoted |= {m.group(1).lower() for m in _NAMED_ROUTINE.finditer(text)
               if m.group(1).lower() not in _NOT_ROUTINE}
    # `__init__` or `__call__` names a method every class has: it tells no code apart.
    routines = {m.group(1).lower() for m in _ROUTINE.finditer(text)
                if m.group(1).lower() not in _NOT_ROUTINE and not m.group(1).startswith("__")}
    routines |= {m.group(1).lower() for m in _CALLED.finditer(text)}
    return Asked(frozenset(terms(text)), frozenset(terms(" ".join(focus_words))),
                 frozenset(kinds), frozenset(quoted),
                 frozenset(m.group() for m in _NUMBER.finditer(text)), frozenset(routines),
                 frozenset(_identifiers(text)), question_platforms(text))


@dataclass(frozen=True)
class Signals:
    """How far a unit holds what the question asks for."""

    kind: bool  # holds a thing of an asked kind the question does not already hold
    focus: float  # share of the focus terms it holds
    pointer: bool  # sends the reader elsewhere
    novelty: float  # share of its terms the question does not hold
    defines: float  # code: share of the names the question writes that it defines
    code: bool = False  # a unit of code: the focus words ("default value") are prose words
    number: bool = False  # holds a number the question does not
    routine: bool = False  # code: defines a routine the question names
    sets: bool = False  # code: a line sets a name the question asks about (passage_choice)
    # code: the identifiers the question writes that it defines (empty: none)
    identifiers: frozenset[str] = frozenset()


def defined_names(code: str) -> set[str]:
    """The names `code` defines (`def f(`, `class C`, `#define M`, a C function's head...),
    lower-cased."""
    named = {m.group(1).lower() for m in _DEFINITION.finditer(code)}
    named.update(m.group(1).lower() for m in _C_FUNCTION.finditer(code)
                 if m.group(1) not in _NOT_FUNCTION)
    return named


def signals(ask: Asked, shown: str, raw: str, *, code: bool, listed: bool,
            head: str = "", bag: set[str] | None = None) -> Signals:
    """The unit's signals; `shown` is its cleaned text, `raw` its source span (links and
    their targets), `code` a code file's unit, `listed` a list or table (items), `head` the
    first line of the definition a piece of code was cut from; `bag` the terms of `shown`
    where the caller has them."""
    if bag is None:
        bag = set(terms(shown))
    novelty = len(bag - ask.terms) / len(bag) if bag else 0.0
    focus = len(ask.focus & bag) / len(ask.focus) if ask.focus else 0.0
    held = number = False
    if "number" in ask.kinds:
        numbers = {m.group() for m in _NUMBER.finditer(_LIST_MARKER.sub("", shown))}
        held = number = bool(numbers - ask.numbers)
    if not held and "code" in ask.kinds:
        held = code or "```" in shown or bool(_name_forms(shown) - ask.names - ask.terms)
    if not held and "place" in ask.kinds:
        held = bool(_PLACE.search(raw))
    if not held and "list" in ask.kinds:
        held = listed
    if not held and "outcome" in ask.kinds and not code:
        held = bool(_OUTCOME.search(shown))
    pointer = bool(_POINTER.search(shown)) and not code
    defines, routine, identifiers = 0.0, False, frozenset[str]()
    if code and ask.names:
        named = defined_names(head + "\n" + raw)  # a piece of a definition: by its head too
        routine = bool(named & ask.routines)
        identifiers = frozenset(named & ask.identifiers)  # a definition, not an assignment
        first = next((line for line in raw.split("\n")
                      if line.strip() and not line.lstrip().startswith(("@", "#"))), "")
        assignment = _ASSIGNMENT.match(first)
        if assignment:
            named.add(assignment.group(1).lower())
        asked_names = {n for n in ask.names if re.fullmatch(r"[a-z_]\w*", n)}
        if asked_names:
            defines = len(named & asked_names) / len(asked_names)
    return Signals(held, focus, pointer, novelty, defines, code, number, routine,
                   identifiers=identifiers)


def wants_targets(ask: Asked, shown: str) -> bool:
    """Links are shown with their targets where the question asks "where", or the passage
    sends the reader elsewhere ("see the security policy"): the target is the answer."""
    return "place" in ask.kinds or bool(_POINTER.search(shown))


@dataclass(frozen=True)
class Weights:
    """How much each signal moves a unit's score (global; chosen on the tuning questions)."""

    kind: float = 0.0  # score x (1 + kind) when the asked kind is held
    missing_kind: float = 0.0  # score x (1 - missing_kind) when a kind is asked and not held
    # and x (1 - missing_number) more when a number is asked ("how many", "which version")
    # and it holds none: a number is told apart from words surely, unlike a name.
    missing_number: float = 0.0
    focus: float = 0.0  # score x (1 + focus * share of focus terms held)
    missing_focus: float = 0.0  # score x (1 - missing_focus) when it holds no focus term
    pointer: float = 0.0  # score x (1 - pointer) for a pointer, unless "where" is asked
    restating: float = 0.0  # score x (1 - restating * (1 - novelty / novelty_floor))
    novelty_floor: float = 0.3
    defines: float = 0.0  # score x (1 + defines x share of the asked names it defines)
    # Where the question names a routine: code defining it x (1 + routine), other code
    # x (1 - missing_routine) (the class's `__init__` where `forward` is asked).
    routine: float = 0.0
    missing_routine: float = 0.0
    sets: float = 0.0  # code x (1 + sets) where a line sets an asked name (`kv_states: ... =`)


def factor(ask: Asked, sig: Signals, weights: Weights) -> float:
    """The multiplier the signals give a unit's score."""
    value = 1.0
    # Code says what happens in statements (`raise`, `return`), which a word list does not
    # tell from code that only mentions them ("returns twice!" of a C comment): an outcome
    # is asked of prose only.
    kinds = ask.kinds - {"outcome"} if sig.code else ask.kinds
    if kinds:
        value *= (1 + weights.kind) if sig.kind else (1 - weights.missing_kind)
    if "number" in ask.kinds and not sig.number:
        value *= 1 - weights.missing_number
    if ask.focus and not sig.code:
        value *= 1 + weights.focus * sig.focus if sig.focus else 1 - weights.missing_focus
    if sig.pointer and "place" not in ask.kinds:
        value *= 1 - weights.pointer
    if sig.novelty < weights.novelty_floor and not sig.kind:
        value *= 1 - weights.restating * (1 - sig.novelty / weights.novelty_floor)
    value *= 1 + weights.defines * sig.defines
    if sig.code and sig.sets:
        value *= 1 + weights.sets
    if ask.routines and sig.code:
        value *= 1 + weights.routine if sig.routine else 1 - weights.missing_routine
    return max(value, 0.0)
