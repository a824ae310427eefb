"""Ignore rules: .gitignore files and .git/info/exclude read as git reads them.

pathspec's verdicts, matched in time linear in the path (patterns with several `**` become
atomic-group regexes), with the rules of every folder from the repository top down."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pathspec

from ragdb.reading import VANISHED, inside, link_target, read_regular

# --- ignore rules ---------------------------------------------------------------------------

# (the folder the patterns are relative to, with a trailing slash; its spec)
Rules = list[tuple[str, "_Spec"]]

#: Where a pattern matched a path: the path itself (git's match of the file, which wins), or
#: only a folder above it (pathspec's "directory mark"); 0: not at all.
_WHOLE, _FOLDER = 2, 1
#: pathspec's regexes for the patterns it special-cases ("*", "**", "*/", "**/"): cheap as
#: they are; the value is where a match counts.
_OVERRIDES = {".": _WHOLE, "/": _WHOLE, "(?P<ps_d>/)": _FOLDER}


def _glob_pieces(segment: str) -> list[str]:
    """A segment's glob cut at its stars (not an escaped one, nor one inside brackets), with
    pathspec's reading of escapes and bracket expressions."""
    pieces, current, i, end = [], "", 0, len(segment)
    while i < end:
        char = segment[i]
        if char == "\\":
            current += segment[i:i + 2]
            i += 2
            continue
        if char == "*":
            pieces.append(current)
            current, i = "", i + 1
            continue
        if char == "[":
            j = i + 1
            if j < end and segment[j] in "!^":
                j += 1
            if j < end and segment[j] == "]":
                j += 1
            while j < end and segment[j] != "]":
                j += 1
            if j < end:
                current += segment[i:j + 1]
                i = j + 1
                continue
        current += char
        i += 1
    pieces.append(current)
    return pieces


def _piece_regex(piece: str) -> str:
    """A star-free glob as a regex: pathspec's translation (escapes, ?, bracket expressions;
    an unclosed bracket raises, as pathspec discards such a pattern)."""
    out, i, end = "", 0, len(piece)
    while i < end:
        char = piece[i]
        i += 1
        if char == "\\":
            if i >= end:
                raise ValueError("a trailing escape")
            out += re.escape(piece[i])
            i += 1
        elif char == "?":
            out += "[^/]"
        elif char == "[":
            j = i
            if j < end and piece[j] in "!^":
                j += 1
            if j < end and piece[j] == "]":
                j += 1
            while j < end and piece[j] != "]":
                j += 1
            if j >= end:
                raise ValueError("an unclosed bracket expression")
            expr = "["
            if piece[i] in "!^":
                expr += "^"
                i += 1
            out += expr + piece[i:j + 1].replace("\\", "\\\\")
            i = j + 1
        else:
            out += re.escape(char)
    return out


def _segment_regex(segment: str) -> str:
    """One segment's glob, at a cost linear in the name: the pieces between stars are placed
    leftmost (atomic groups) and the last one against the end of the name, which is where the
    caller's boundary puts it. (pathspec's `[^/]*` runs backtrack over every split: a few
    stars over a long name never finish.)"""
    if segment == "*":
        return "[^/]+"
    pieces = [_piece_regex(piece) for piece in _glob_pieces(segment)]
    if len(pieces) == 1:
        return pieces[0]
    middle = "".join(f"(?>[^/]*?{piece})" for piece in pieces[1:-1] if piece)
    return f"{pieces[0]}{middle}[^/]*{pieces[-1]}"


def _segments(line: str) -> tuple[list[str], bool]:
    """A pattern's segments, normalized as pathspec does it (a leading "**" where the pattern
    matches at any depth, a trailing one for a folder pattern, no "**/**"); and whether it is a
    folder pattern (a trailing "/")."""
    text = line if line.endswith("\\ ") else line.rstrip()
    if text.startswith("!"):
        text = text[1:]
    segs = text.split("/")
    is_dir = not segs[-1]
    if not segs[0]:
        del segs[0]
    elif (len(segs) == 1 or (len(segs) == 2 and not segs[1])) and segs[0] != "**":
        segs.insert(0, "**")
    if not segs:
        raise ValueError("an empty pattern")
    if not segs[-1]:
        segs[-1] = "**"
    for i in range(len(segs) - 1, 0, -1):
        if segs[i - 1] == segs[i] == "**":
            del segs[i]
    return segs, is_dir


def _pattern_tests(segs: list[str], is_dir: bool) -> tuple[str, tuple[tuple[str, int], ...]]:
    """The regexes of one pattern: one that matches wherever any of them does (for the
    combined search), and each with where its match counts, best first.

    Matching pathspec's regex `^(?:.+/)?a(?:/.+)?/a(?:/.+)?/a...` backtracks through every way
    of spreading the "**"s over the path: fourteen of them over a 30-deep tree did not finish in
    45 s. Here, where a pattern has two "**" or more, every group of segments between two of
    them is placed at the first folder where it fits and kept there (an atomic group): what
    follows begins with a "**", which takes any folders the group left, so the first place is
    never worse than a later one. The cost is linear in the path for each group. With one "**"
    (most patterns: "*.so" is "**/*.so") there is nothing to spread, and pathspec's greedy
    form is the faster one.
    """
    lead = segs[0] == "**"
    trail = len(segs) > 1 and segs[-1] == "**"
    body = segs[1 if lead else 0:len(segs) - 1 if trail else len(segs)]
    groups: list[list[str]] = [[]]
    for seg in body:
        if seg == "**":
            groups.append([])
        else:
            groups[-1].append(_segment_regex(seg))
    if not all(groups):
        raise ValueError("an empty group")
    head = "^"
    if lead + len(groups) - 1 <= 1:
        for n, group in enumerate(groups):
            head += ("(?:.+/)?" if lead else "") if n == 0 else "(?:/.+)?/"
            head += "/".join(group)
    else:
        for n, group in enumerate(groups):
            skip = "(?:[^/]+/)*?" if (lead or n) else ""
            step = ("/" if n else "") + skip + "/".join(group)
            if n < len(groups) - 1:
                head += f"(?>{step}(?=/|$))"
            else:
                head += step
    if not trail:  # "a/b": the path itself, or a folder above it (pathspec's directory mark)
        return head + "(?:/|$)", ((head + "$", _WHOLE), (head + "/", _FOLDER))
    # "a/**": whatever lies inside a; "a/": the same, as a folder match
    return head + "/", ((head + "/", _FOLDER if is_dir else _WHOLE),)


@dataclass(frozen=True)
class _Pattern:
    """One line of an ignore file: whether a match ignores (True) or re-includes (False) the
    path, and its regexes with where each match counts."""

    include: bool
    anywhere: str  # matches where any test does: its part of _Spec's combined regex
    tests: tuple[tuple[re.Pattern[str], int], ...]
    fallback: re.Pattern[str] | None = None  # pathspec's own regex, where it could not be cut

    @classmethod
    def of(cls, line: str, include: bool, regex: re.Pattern[str]) -> "_Pattern":
        if regex.pattern in _OVERRIDES:
            return cls(include, regex.pattern, ((regex, _OVERRIDES[regex.pattern]),))
        try:
            anywhere, tests = _pattern_tests(*_segments(line))
            return cls(include, anywhere, tuple((re.compile(r), where) for r, where in tests))
        except (ValueError, re.error):
            return cls(include, regex.pattern, (), regex)

    def where(self, rel: str) -> int:
        if self.fallback is not None:
            found = self.fallback.search(rel)
            return 0 if found is None else _FOLDER if found.groupdict().get("ps_d") else _WHOLE
        for regex, where in self.tests:
            if regex.search(rel):
                return where
        return 0


@dataclass(frozen=True)
class _Spec:
    """An ignore file's patterns, with all of them in one combined regex: a path no pattern
    matches (most paths) is settled in one search (most of a no-op re-index went to trying
    each pattern in turn on the vLLM tree). Without negations, any match means ignored; with
    them, pathspec's order: the last pattern that matches the path itself wins, else the last
    that matches a folder above it."""

    patterns: tuple[_Pattern, ...]
    any_match: re.Pattern[str] | None  # every pattern in one regex (None: could not combine)
    negations: bool

    @classmethod
    def of(cls, spec: pathspec.GitIgnoreSpec) -> "_Spec":
        patterns = tuple(
            _Pattern.of(str(p.pattern), bool(p.include), p.regex) for p in spec.patterns
            if p.include is not None and isinstance(p.regex, re.Pattern))
        negations = any(not p.include for p in patterns)
        if not patterns:  # comments only (git init's .git/info/exclude): "" would match all
            return cls(patterns, re.compile("(?!)"), negations)
        if any(p.fallback is not None for p in patterns):
            return cls(patterns, None, negations)
        combined = "|".join(f"(?:{p.anywhere})" for p in patterns)
        try:
            return cls(patterns, re.compile(re.sub(r"\(\?P<\w+>", "(", combined)), negations)
        except re.error:
            return cls(patterns, None, negations)

    def included(self, rel: str) -> bool | None:
        """True: ignored; False: re-included by a negation; None: no pattern matched."""
        if self.any_match is not None and not self.any_match.search(rel):
            return None  # most paths match no pattern at all
        if not self.negations:
            if self.any_match is not None or any(p.where(rel) for p in self.patterns):
                return True
            return None
        folder: bool | None = None
        for pattern in reversed(self.patterns):
            where = pattern.where(rel)
            if where == _WHOLE:
                return pattern.include
            if where == _FOLDER and folder is None:
                folder = pattern.include
        return folder


#: Names a skipped file or folder, with the reason (Scan.skipped).
Skip = Callable[[Path, str], None]


def _spec_from(path: Path, shown: Path, top: Path, skip: Skip) -> _Spec | None:
    """An ignore file, read as any file ragdb reads: a regular file (a FIFO would block the
    run for ever, a link to /dev/zero never ends), within the size cap, and a symlink only
    where its target lies within `top` (a cloned repository can carry any link)."""
    try:
        is_link = stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:  # none here (most folders), or not a folder (.git as a file)
        return None
    if is_link:
        target = link_target(path)
        if target is None or not inside(target, top):
            skip(shown, "broken symlink" if target is None else "symlink outside the root")
            return None
    raw, reason = read_regular(path)
    if raw is None:
        if reason != VANISHED:
            skip(shown, reason)
        return None
    lines = raw.decode("utf-8", errors="replace").splitlines()
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:  # a malformed line (a trailing backslash): the others still count
        spec = pathspec.GitIgnoreSpec.from_lines([line for line in lines if _valid(line)])
    return _Spec.of(spec) if len(spec) else None


def _valid(line: str) -> bool:
    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except ValueError:
        return False
    return True


def folder_rules(folder: Path, shown: Path, is_repo_top: bool, top: Path,
                 skip: Skip) -> Rules:
    """The rules a folder adds: its .gitignore, and .git/info/exclude at a repository's top.
    `shown` is the folder as skipped paths name it."""
    rules: Rules = []
    base = str(folder).rstrip("/") + "/"
    if is_repo_top:
        exclude = _spec_from(folder / ".git" / "info" / "exclude",
                             shown / ".git" / "info" / "exclude", top, skip)
        if exclude is not None:
            rules.append((base, exclude))
    spec = _spec_from(folder / ".gitignore", shown / ".gitignore", top, skip)
    if spec is not None:
        rules.append((base, spec))
    return rules


def ancestor_rules(root: Path, skip: Skip) -> Rules:
    """Rules of the git repository a root lies inside, from its top down to the root's parent
    (a root that is a subfolder of a repository obeys the repository's .gitignore files).

    A root the repository itself ignores (data/raw in a project that ignores data/) was asked
    for by name: the repository's rules are then left out, its own .gitignore files still count.
    """
    chain = [root, *root.parents]
    for depth, candidate in enumerate(chain):
        if (candidate / ".git").exists():
            rules: Rules = []
            top = candidate.resolve()
            for i in range(depth, 0, -1):  # the repository's top, then down to the root's parent
                rules += folder_rules(chain[i], chain[i], i == depth, top, skip)
                if rules and ignored(rules, str(chain[i - 1]), is_dir=True):
                    return []
            return rules
    return []


def ignored(rules: Rules, path: str, is_dir: bool) -> bool:
    """Git's rule: the last matching pattern wins, a deeper .gitignore after a shallower one."""
    verdict = False
    for base, spec in rules:
        if not path.startswith(base):
            continue
        rel = path[len(base):]
        include = spec.included(rel + "/" if is_dir else rel)
        if include is not None:
            verdict = include
    return verdict
