"""Where a name is defined and who uses it: the reads behind `ragdb definition`, `references`,
`callers`, `callees` and `outline` (and their HTTP and MCP twins), over the `symbols` and
`symbol_refs` rows an index run writes (ragdb.symbols).

A use names its target as far as its own file could tell (`vllm.config.VllmConfig`); here it
meets the definitions: directly, or through the module-level imports that give a definition
another qualified name (a package's __init__.py re-exporting it, `pub use`, `export ... from`),
followed both ways up to ALIAS_DEPTH steps (an import cycle ends there). Every statement is a
file of sql/ with named parameters: a name with SQL, GLOB or FTS5 metacharacters, or any
Unicode, is plain data.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from ragdb.db import Connection
from ragdb.errors import RagdbError
from ragdb.input_rules import check_text, one_line
from ragdb.resources import sql
from ragdb.retrieve import Filters
from ragdb.symbols import KINDS

#: Imports followed from a definition to the names it is known by elsewhere, and back.
ALIAS_DEPTH = 8
#: Member aliases followed in one name (`Cls.a.b.m` for T.m: a field b of a field a).
MEMBER_HOPS = 2
#: Qualified names a definition may be known by, at most (a name re-exported everywhere).
MAX_NAMES = 2000
#: Definitions whose references one call looks at, at most (a name defined 10,000 times is
#: looked at whole; past this the listing says how many of them it covers).
MAX_DEFINITIONS = 20_000
DEFAULT_LIMIT = 50
MAX_LIMIT = 10_000
MAX_NAME_CHARS = 1000
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux: the longest path a file can be stored under
_SEPARATORS = re.compile(r"::|->|#")


@dataclass
class Place:
    """One line of a listing: a definition, or a use, where it is (`path:line`)."""

    path: str
    line: int
    kind: str
    qualified: str
    language: str = ""
    #: A use: the definition it sits in; a caller: how many calls it makes.
    enclosing: str | None = None
    calls: int | None = None
    resolved: bool = True
    first: int | None = None
    last: int | None = None
    end_line: int | None = None

    def text(self) -> str:
        """`path:line: kind qualified_name`, as a compiler writes a place."""
        extra = []
        if not self.resolved:
            extra.append("unresolved")
        if self.enclosing:
            extra.append(f"in {self.enclosing}")
        if self.calls and self.calls > 1:
            extra.append(f"{self.calls} calls")
        tail = f" ({', '.join(extra)})" if extra else ""
        return f"{one_line(self.path)}:{self.line}: {self.kind} {one_line(self.qualified)}{tail}"

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Listing:
    """A page of places and how many there are in all."""

    what: str
    name: str
    total: int
    offset: int
    limit: int
    places: list[Place] = field(default_factory=list)
    note: str = ""  # what the listing could not say otherwise ("no definition of x")

    @property
    def shown(self) -> str:
        """"showing 51-100 of 10,000; --offset 100 for more" when the page is not all of it;
        '' otherwise."""
        return self.page_note("--offset ")

    def page_note(self, offset: str) -> str:
        """`shown`, the next page named as `offset` says: the CLI's `--offset `, the MCP
        tools' argument `offset=`."""
        if not self.places or (self.offset == 0 and len(self.places) >= self.total):
            return ""
        first = self.offset + 1
        return (f"showing {first}-{self.offset + len(self.places)} of {self.total:,}; "
                f"{offset}{self.offset + len(self.places)} for more"
                if self.offset + len(self.places) < self.total
                else f"showing {first}-{self.offset + len(self.places)} of {self.total:,}")

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "name": self.name, "total": self.total,
                "offset": self.offset, "limit": self.limit, "note": self.note,
                "results": [p.to_json() for p in self.places]}


# -- input -------------------------------------------------------------------------------------

def check_name(name: object) -> str:
    """A name as a user writes it (`LLM`, `LLM.generate`, `clap::Command::new`, `f()`) as the
    dotted form the rows hold; one clear line for anything else."""
    if not isinstance(name, str):
        raise RagdbError(f"the name must be text, got {type(name).__name__}")
    name = check_text(name, "the name").strip()
    if len(name) > MAX_NAME_CHARS:
        raise RagdbError(f"the name is over {MAX_NAME_CHARS:,} characters")
    name = _SEPARATORS.sub(".", name)
    if name.endswith("()"):
        name = name[:-2]
    name = name.strip(". ")
    if not name or not name.replace(".", ""):
        raise RagdbError("the name is empty: give the name of a function, class or variable")
    return name


def check_kinds(kinds: Iterable[str] | str | None, known: tuple[str, ...] = KINDS
                ) -> tuple[str, ...]:
    """--kind values: each one of `known`, else one line naming them."""
    if kinds is None:
        return ()
    values = [kinds] if isinstance(kinds, str) else list(kinds)
    out = []
    for kind in values:
        if not isinstance(kind, str):
            raise RagdbError(f"a kind must be text, got {kind!r}"[:120])
        kind = kind.strip().lower()
        if not kind:
            continue
        if kind not in known:
            raise RagdbError(f"unknown kind {kind[:60]!r}; the kinds are: {', '.join(known)}")
        out.append(kind)
    return tuple(sorted(set(out)))


def check_page(limit: object, offset: object) -> tuple[int, int]:
    """--limit (1 to MAX_LIMIT) and --offset (0 or more), as whole numbers."""
    def whole(value: object, what: str, low: int, high: int) -> int:
        if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 9:
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise RagdbError(f"{what} must be a whole number from {low} to {high:,}, "
                             f"got {value!r}"[:160])
        return value
    return (whole(limit, "limit", 1, MAX_LIMIT), whole(offset, "offset", 0, 10 ** 9))


def _params(filters: Filters, kinds: tuple[str, ...], limit: int = MAX_LIMIT,
            offset: int = 0) -> dict[str, Any]:
    params = filters.as_sql()
    params.pop("filtered", None)
    params["kinds"] = json.dumps(list(kinds)) if kinds else None
    params["limit"] = limit
    params["offset"] = offset
    return params


def _last(qualified: str) -> str:
    return qualified.rsplit(".", 1)[-1]


def _prefixes(qualified: str) -> list[str]:
    """`a.b.c`, `a.b`, `a`: the names a use of it may reach it through."""
    parts = qualified.split(".")
    return [".".join(parts[:n]) for n in range(len(parts), 0, -1)]


# -- the reads ---------------------------------------------------------------------------------

def _definition_place(row: tuple[Any, ...]) -> Place:
    _id, path, line, kind, qualified, language, first, last, end_line = row[:9]
    return Place(str(path), int(line), str(kind), str(qualified), str(language),
                 first=int(first), last=int(last), end_line=int(end_line))


def _named(conn: Connection, name: str, filters: Filters, kinds: tuple[str, ...],
           limit: int, offset: int) -> tuple[list[tuple[Any, ...]], int]:
    """Definitions matching a name (a qualified one by its tail): a page and the count.

    A Rust crate's items are stored under `crate`, its root as its own code names it, while
    its users write the crate's name (`semver::Version::parse`, `semver::parse::Error`),
    which matched nothing: a qualified name that finds nothing is looked up again with its
    first part read as a crate root (`crate.Version.parse`)."""
    found = _named_as(conn, name, filters, kinds, limit, offset)
    first, dot, rest = name.partition(".")
    if found[1] or not dot or first == "crate":
        return found
    return _named_as(conn, f"crate.{rest}", filters, kinds, limit, offset)


def _named_as(conn: Connection, name: str, filters: Filters, kinds: tuple[str, ...],
              limit: int, offset: int) -> tuple[list[tuple[Any, ...]], int]:
    """Definitions whose qualified name is `name` or ends with it: a page and the count."""
    params = _params(filters, kinds, limit, offset)
    params["name"] = _last(name)
    params["qualified"] = name if "." in name else None
    rows = [tuple(r) for r in conn.execute(sql("symbols_named"), params)]
    if rows:
        return rows, int(rows[0][-1])
    if offset:
        params.update(limit=1, offset=0)
        again = list(conn.execute(sql("symbols_named"), params))
        return [], int(again[0][-1]) if again else 0
    return [], 0


def definitions(conn: Connection, name: str, filters: Filters = Filters(),
                kinds: tuple[str, ...] = (), limit: int = DEFAULT_LIMIT,
                offset: int = 0) -> Listing:
    """Where a name is defined: every definition of it, in path order, a page at a time."""
    name = check_name(name)
    rows, total = _named(conn, name, filters, kinds, limit, offset)
    listing = Listing("definition", name, total, offset, limit,
                      [_definition_place(r) for r in rows])
    if not total:
        listing.note = f"no definition of {name} in the index"
    return listing


def _ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """The symbol_names ids of the names some row holds."""
    pairs = [[q, _last(q)] for q in set(names)]
    if not pairs:
        return {}
    found = conn.execute(sql("symbol_names_ids"), {"names": json.dumps(pairs)})
    return {str(q): int(i) for q, i in found}


def known_as(conn: Connection, qualified_names: Iterable[str]) -> dict[str, int]:
    """Every qualified name the definitions are used by (their own, and those imports give
    them: a package re-exporting a class makes `pkg.Class` name `pkg.mod.Class`, and
    `pkg.Class.method` its method), with its symbol_names id; names no row holds are left
    out. Two statements a step, whatever the number of names. A member alias (`Cls.attr`
    declared a T: T.m is Cls.attr.m) is followed MEMBER_HOPS times in a name at most: the
    fields of fields of a type are many, their uses few."""
    found: dict[str, int] = {}
    seen: set[str] = set()
    frontier = dict.fromkeys(qualified_names, 0)  # name -> member aliases it came through
    most_names = len(frontier) + MAX_NAMES  # the names themselves, and MAX_NAMES more
    for _ in range(ALIAS_DEPTH + 1):
        frontier = {n: hops for n, hops in frontier.items() if n not in seen}
        if not frontier or len(seen) >= most_names:
            break
        seen.update(frontier)
        under: dict[str, list[str]] = {}  # a prefix -> the names it is a prefix of
        for name in frontier:
            for prefix in _prefixes(name):
                under.setdefault(prefix, []).append(name)
        ids = _ids(conn, under)
        found.update((name, ids[name]) for name in frontier if name in ids)
        later: dict[str, int] = {}
        if ids:
            for alias, used, target, kind in conn.execute(
                    sql("symbol_aliases_of"), {"ids": json.dumps(sorted(ids.values()))}):
                target = str(target)
                member = kind != "import"
                if not member and not used:
                    continue  # an import nobody reaches the name through
                for name in under.get(target, ()):
                    hops = frontier[name] + member
                    if member and (name == target or hops > MEMBER_HOPS):
                        continue  # `Cls.attr` is not T itself, only its members are
                    named = str(alias) + name[len(target):]
                    later[named] = min(hops, later.get(named, hops))
            most = max(frontier.values())
            for name in _inherited(conn, frontier, ids):
                later.setdefault(name, most)
        frontier = later
    return found


def _inherited(conn: Connection, names: Iterable[str], ids: dict[str, int]) -> set[str]:
    """`Sub.m` for a member `Base.m` of the names, where a class Sub names Base as its base
    and does not define m itself (a use of `Sub.m` is a use of `Base.m`)."""
    containers: dict[str, list[int]] = {}
    for name in names:
        container, _, member = name.rpartition(".")
        if container in ids:
            containers.setdefault(member, []).append(ids[container])
    found: set[str] = set()
    for member, container_ids in containers.items():
        subclasses = [str(q) for (q,) in conn.execute(sql("symbol_subclasses"), {
            "ids": json.dumps(sorted(set(container_ids)))})]
        if not subclasses:
            continue
        overrides = {str(q) for (q,) in conn.execute(sql("symbols_qualified_named"),
                                                     {"name": member})}
        found.update(f"{c}.{member}" for c in subclasses if f"{c}.{member}" not in overrides)
    return found


def references(conn: Connection, name: str, filters: Filters = Filters(),
               kinds: tuple[str, ...] = (), limit: int = DEFAULT_LIMIT,
               offset: int = 0) -> Listing:
    """Every use of the definitions of a name that resolves to one of them, then the uses of
    the name that their file could not resolve (a method of an object of unknown type)."""
    name = check_name(name)
    defs, count = _named(conn, name, Filters(), (), MAX_DEFINITIONS, 0)
    targets = [str(r[4]) for r in defs]
    if not defs and "." in name:
        targets = [name]  # a name of another package (`torch.compile`): its uses by target
    ids = sorted(set(known_as(conn, targets).values()))
    params = _params(filters, kinds, limit, offset)
    params["ids"] = json.dumps(ids)
    resolved: list[tuple[Any, ...]] = []
    total_resolved = 0
    if ids:
        resolved = [tuple(r) for r in conn.execute(sql("symbol_refs_to"), params)]
        total_resolved = int(resolved[0][-1]) if resolved else _count(
            conn, "symbol_refs_to", params)
    places = [Place(str(p), int(line), str(kind), str(target), str(lang),
                    enclosing=str(enc) if enc else None, first=int(first),
                    last=int(first) + len(str(n)))
              for p, line, kind, target, n, enc, lang, first, _t in resolved]
    params["name"] = _last(name)
    left = limit - len(places)
    params["limit"] = max(left, 1)
    params["offset"] = max(offset - total_resolved, 0)
    loose = [tuple(r) for r in conn.execute(sql("symbol_refs_unresolved"), params)]
    total_loose = int(loose[0][-1]) if loose else _count(conn, "symbol_refs_unresolved", params)
    if left > 0:
        places += [Place(str(p), int(line), str(kind), str(n), str(lang),
                         enclosing=str(enc) if enc else None, resolved=False,
                         first=int(first), last=int(first) + len(str(n)))
                   for p, line, kind, n, enc, lang, first, _t in loose]
    listing = Listing("references", name, total_resolved + total_loose, offset, limit, places)
    if count > len(defs):
        listing.note = _covered(name, len(defs), count)
    if not count and not total_resolved:
        listing.note = (f"no definition of {name} in the index"
                        + (f"; {total_loose:,} uses of the name that could not be resolved"
                           if total_loose else ""))
    elif not total_resolved and not total_loose:  # said: an empty listing read as not found
        rust = any(str(r[5]) == "rust" for r in defs)
        listing.note = (f"no use of {name}"
                        + (f" of kind {', '.join(kinds)}" if kinds else "")
                        + " that the index records"
                        + (" (uses inside a macro's arguments, such as assert!(...), are not "
                           "read)" if rust else ""))
    elif total_loose:
        listing.note = (f"{total_resolved:,} uses resolve to the {count:,} "
                        f"definition{'s' if count != 1 else ''} of {name}; {total_loose:,} "
                        "more use the name on an object of unknown type (unresolved)"
                        + (f"; {listing.note}" if listing.note else ""))
    return listing


def _covered(name: str, looked: int, count: int) -> str:
    """What a listing over the first MAX_DEFINITIONS definitions of a name says."""
    return (f"the uses of the first {looked:,} of the {count:,} definitions of {name}; "
            "narrow it with a qualified name or --path")


def _count(conn: Connection, statement: str, params: dict[str, Any]) -> int:
    """The count of a listing whose page came out empty (an offset past its end)."""
    again = dict(params, limit=1, offset=0)
    rows = list(conn.execute(sql(statement), again))
    return int(rows[0][-1]) if rows else 0


def callers(conn: Connection, name: str, filters: Filters = Filters(),
            kinds: tuple[str, ...] = (), limit: int = DEFAULT_LIMIT,
            offset: int = 0) -> Listing:
    """The definitions that call a name's definitions: each once, at its first call, with
    how many calls it makes."""
    name = check_name(name)
    defs, count = _named(conn, name, Filters(), (), MAX_DEFINITIONS, 0)
    ids = sorted(set(known_as(conn, [str(r[4]) for r in defs]).values()))
    params = _params(filters, kinds, limit, offset)
    params["ids"] = json.dumps(ids)
    params["home"] = None  # the callers of every definition of the name
    rows = [tuple(r) for r in conn.execute(sql("symbol_callers"), params)] if ids else []
    total = int(rows[0][-1]) if rows else (_count(conn, "symbol_callers", params) if ids else 0)
    places = [Place(str(p), int(line), str(kind), str(q), str(lang), calls=int(n))
              for p, line, kind, q, lang, n, _t in rows]
    listing = Listing("callers", name, total, offset, limit, places)
    if count > len(defs):
        listing.note = _covered(name, len(defs), count)
    if not count:
        listing.note = f"no definition of {name} in the index"
    elif not total:
        listing.note = f"no resolved call of {name}; `ragdb references {name} --kind call` " \
                       "also lists calls on objects of unknown type"
    return listing


def callers_of(conn: Connection, qualified: str, limit: int,
               home: str | None = None) -> tuple[list[Place], int]:
    """The first `limit` definitions that call one definition (by its qualified name, through
    the imports that re-export it), and how many there are: the line an answer's code block
    ends with (generate/blocks). `home`: the file of the one definition meant; a file that
    defines the same name itself calls its own (C's static functions), and is left out."""
    ids = sorted(set(known_as(conn, [qualified]).values()))
    if not ids:
        return [], 0
    params = _params(Filters(), (), limit, 0)
    params["ids"] = json.dumps(ids)
    params["home"] = home
    rows = [tuple(r) for r in conn.execute(sql("symbol_callers"), params)]
    places = [Place(str(p), int(line), str(kind), str(q), str(lang), calls=int(n))
              for p, line, kind, q, lang, n, _t in rows]
    return places, int(rows[0][-1]) if rows else 0


def callees(conn: Connection, name: str, filters: Filters = Filters(),
            kinds: tuple[str, ...] = (), limit: int = DEFAULT_LIMIT,
            offset: int = 0) -> Listing:
    """What a name's definitions call: each callee once, at its definition where the call
    resolves to one, else at the call (unresolved)."""
    name = check_name(name)
    defs, count = _named(conn, name, filters, (), MAX_DEFINITIONS, 0)
    ids = [int(r[0]) for r in defs]
    calls = list(conn.execute(sql("symbol_callees"), {"ids": json.dumps(ids)})) if ids else []
    places: list[Place] = []
    seen: set[str] = set()
    for path, line, called, target, language, _kind in calls:
        key = str(target or called)
        if key in seen:
            continue
        seen.add(key)
        found = resolve(conn, str(target)) if target else []
        if found:
            places += [p for p in found if not kinds or p.kind in kinds]
        elif not kinds:
            places.append(Place(str(path), int(line), "call", str(target or called),
                                str(language), resolved=False))
    listing = Listing("callees", name, len(places), offset, limit,
                      places[offset:offset + limit])
    if not count:
        listing.note = f"no definition of {name} in the index"
    elif not places:  # said, as callers says it: an empty listing read as a failed lookup
        listing.note = (f"no callee of {name} of kind {', '.join(kinds)}" if kinds else
                        f"{name} calls nothing the index records (calls of built-ins, such "
                        "as len, append or print, are not recorded)")
    return listing


def resolve(conn: Connection, target: str) -> list[Place]:
    """The definitions a use's target names, through the imports that re-export them."""
    seen: set[str] = set()
    frontier = {target}
    for _ in range(ALIAS_DEPTH + 1):
        frontier -= seen
        if not frontier:
            break
        seen |= frontier
        for qualified in sorted(frontier):
            rows = list(conn.execute(sql("symbol_resolve"),
                                     {"name": _last(qualified), "qualified": qualified}))
            if rows:
                return [_definition_place(r) for r in rows]
        under: dict[str, list[str]] = {}
        for name in frontier:
            for prefix in _prefixes(name):
                under.setdefault(prefix, []).append(name)
        later: set[str] = set()
        for prefix, alias_id in _ids(conn, under).items():
            for (source,) in conn.execute(sql("symbol_alias_targets"), {"alias_id": alias_id}):
                later.update(str(source) + name[len(prefix):] for name in under[prefix])
        for qualified in frontier:  # a member its class inherits: the base class's
            container, _, member = qualified.rpartition(".")
            classes = [int(r[0]) for r in conn.execute(sql("symbol_resolve"), {
                "name": _last(container), "qualified": container})] if container else []
            if classes:
                later.update(f"{base}.{member}" for (base,) in conn.execute(
                    sql("symbol_bases"), {"ids": json.dumps(classes)}))
        frontier = later
    return []


def outline(conn: Connection, path: str, filters: Filters = Filters(),
            kinds: tuple[str, ...] = (), limit: int = MAX_LIMIT, offset: int = 0) -> Listing:
    """A file's definitions in reading order (or those of every file under a folder)."""
    if not isinstance(path, str):
        raise RagdbError(f"the path must be text, got {type(path).__name__}")
    path = check_text(path, "the path").strip().rstrip("/")
    if path.startswith("./"):
        path = path[2:]
    if not path:
        raise RagdbError("the path is empty: give a file or folder as the index stores it")
    if len(path) > MAX_PATH_CHARS:  # no stored path is longer; the note would echo it all
        raise RagdbError(f"the path is over {MAX_PATH_CHARS:,} characters")
    params = _params(filters, kinds, limit, offset)
    params["path"] = path
    rows = [tuple(r) for r in conn.execute(sql("symbol_outline"), params)]
    total = int(rows[0][-1]) if rows else _count(conn, "symbol_outline", params)
    listing = Listing("outline", path, total, offset, limit,
                      [_definition_place(r) for r in rows])
    if not total:
        listing.note = f"no definitions in {path} (no indexed file there, or none it defines)"
    return listing


# -- questions about uses (`ragdb answer "who calls X?"`) ---------------------------------------

# The name a question asks about: in backticks or not, `()` after it, "the function" before
# or after it.
_ASKED = (r"(?:the\s+)?(?:(?:function|method|class|macro)\s+)?`?(?P<name>[^\W\d][\w.:#>-]*?)"
          r"(?:\(\))?`?(?:\s+(?:function|method|class|macro))?")
_WHO = r"(?:who|what|which\s+(?:functions?|methods?|code|files?|places?))"
#: The shapes of a question answered from the references, each with the listing it asks for.
USE_QUESTIONS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (what, re.compile(rf"^\s*{shape}\s*[?.!]*\s*$", re.IGNORECASE)) for what, shape in (
        ("callers", rf"{_WHO}\s+(?:calls?|invokes?)\s+{_ASKED}"),
        ("callers", rf"(?:(?:list|show|find)\s+)?(?:all\s+)?(?:the\s+)?callers\s+of\s+{_ASKED}"),
        ("references", rf"where\s+(?:is|are)\s+{_ASKED}\s+(?:used|called|referenced|invoked)"
                       r"(?:\s+from)?"),
        ("references", rf"{_WHO}\s+uses?\s+{_ASKED}"),
        ("references", rf"(?:(?:list|show|find)\s+)?(?:all\s+)?(?:the\s+)?"
                       rf"(?:references|uses|usages)\s+(?:of|to)\s+{_ASKED}"),
    ))
#: Places an answer from the references lists (`ragdb references` pages through all).
ANSWER_PLACES = 20


def asks_for_uses(question: str) -> tuple[str, str] | None:
    """("callers" or "references", the name) when a question only asks who calls a name or
    where it is used ("who calls `generate`?", "where is LLM.generate used?", "callers of
    f"); None for any other question (those are answered from the search)."""
    for what, shape in USE_QUESTIONS:
        found = shape.match(question)
        if found and found.group("name").strip(".:#>-"):
            return what, found.group("name")
    return None


def uses_answer(conn: Connection, question: str, filters: Filters = Filters()
                ) -> tuple[str, Listing] | None:
    """The answer to a question asks_for_uses recognises, from the references: a line saying
    what is listed, then `path:line: kind name (in enclosing definition)` a place a line (the
    first ANSWER_PLACES), then how to see the rest. None when the question has another shape
    or its name has no definition in the index (the question is then searched as any other)."""
    asked = asks_for_uses(question)
    if asked is None:
        return None
    what, raw = asked
    try:
        name = check_name(raw)
    except RagdbError:
        return None
    if not _named(conn, name, Filters(), (), 1, 0)[1]:
        return None
    read = callers if what == "callers" else references
    listing = read(conn, name, filters, limit=ANSWER_PLACES)
    noun = "definitions that call" if what == "callers" else "uses of"
    lines = [f"{listing.total:,} {noun} `{one_line(name)}` (`ragdb {what} "
             f"{one_line(name)}`):" if listing.total else listing.note or
             f"no {what} of `{one_line(name)}` in the index"]
    lines += [place.text() for place in listing.places]
    more = listing.total - len(listing.places)
    if listing.places and listing.note:
        lines.append(listing.note)
    if more > 0:
        lines.append(f"... and {more:,} more: `ragdb {what} {one_line(name)} "
                     f"--offset {len(listing.places)}`")
    return "\n".join(lines), listing
