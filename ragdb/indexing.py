"""Indexing: walk the roots, read files, chunk them and write the rows in one transaction;
then bring the vectors in step (`update_index`, what `ragdb index` runs)."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shlex
import stat
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

import pathspec

from ragdb.chunking import CHUNKER_VERSION, chunk_cap, chunk_text, file_kind, is_mdx
from ragdb.db import (
    Connection,
    Setting,
    bump_generation,
    full_text_done,
    get_setting,
    index_lock,
    scalar,
    set_setting,
    write_full_text,
    write_transaction,
)
from ragdb.embedder import DEFAULT_MODEL, Embedder, embedder_identity, load_embedder
from ragdb.errors import RagdbError
from ragdb.resources import sql
from ragdb.syntax_chunking import (
    SYNTAX_LANGUAGES,
    chunk_source,
    is_build_metadata,
    is_generated_or_minified,
    is_vendored_dir,
    language_for,
)
from ragdb.tokenize import TOKENIZER_VERSION, Analyser, analyse_names, defined_names
from ragdb.vectors import VectorStats, sync_vectors, vector_count, vectors_pending

DEFAULT_INCLUDE: tuple[str, ...] = ()  # globs --include adds to the default file-type rule
DEFAULT_EXCLUDE: tuple[str, ...] = ()  # globs --exclude takes out of it
#: Python and prose only, what `--include` used to select (the benchmarks compare with it):
#: WalkOptions(include=PYTHON_AND_DOCS, exclude=EVERYTHING).
PYTHON_AND_DOCS = ("*.py", "*.md", "*.txt", "*.rst")
EVERYTHING = ("*",)
MAX_CHUNK_SIZE = 2000
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_GLOB_CHARS = 1000  # a longer --include/--exclude glob is refused, not compiled
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", ".git", ".hg", ".svn", ".venv", ".tox"})

# --- the file-type rule -----------------------------------------------------------------------
# Every file the walk reaches is indexed, each in its language (file_language), any other
# UTF-8 text as "text"; binary content, non-UTF-8, huge, lockfiles, generated and minified
# files are left out when read. Files in a binary format, .gitignore files and credentials are
# known by name and never opened (WalkOptions.verdict).
BINARY_SUFFIXES = frozenset("""
    .png .jpg .jpeg .gif .bmp .ico .icns .webp .tif .tiff .psd .xcf .heic .avif
    .pdf .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .epub
    .zip .gz .tgz .bz2 .xz .zst .lz4 .7z .rar .tar .jar .war .whl .egg .deb .rpm .dmg .iso .apk
    .so .dll .dylib .a .o .obj .lib .exe .bin .elf .wasm .pyc .pyo .pyd .class
    .woff .woff2 .ttf .otf .eot .mp3 .mp4 .m4a .wav .ogg .flac .avi .mov .mkv .webm
    .npy .npz .pt .pth .ckpt .safetensors .onnx .gguf .pb .tflite .h5 .hdf5 .pkl .pickle
    .parquet .arrow .feather .db .sqlite .sqlite3 .mdb
""".split())
#: Files that hold credentials by convention (.env, private keys): never indexed unless an
#: --include names them, so a served rag.db cannot leak them (templates like .env.example stay).
_SECRETS = re.compile(r"\.env(?:rc|\.(?!example$|sample$|template$|dist$)[\w.-]+)?|\.netrc"
                      r"|\.pypirc|\.pgpass|id_(?:rsa|dsa|ecdsa|ed25519)|.+\.(?:pem|key|p12|pfx"
                      r"|keystore|jks|env)")
#: A file whose first line names one of these interpreters is in that language.
_SHEBANG = re.compile(r"#![ \t]*(?:/usr)?(?:/local)?/bin/(?:env[ \t]+(?:-\S+[ \t]+)*)?"
                      r"(sh|bash|dash|ksh|zsh|python[\d.]*|node|nodejs|ruby|perl|lua)\b")
_SHEBANG_LANGUAGES = {"sh": "shell", "bash": "shell", "dash": "shell", "ksh": "shell",
                      "zsh": "shell", "node": "javascript", "nodejs": "javascript",
                      "ruby": "ruby", "perl": "perl", "lua": "lua"}


def language_of(path: str) -> str | None:
    """The language a file is indexed as (stored in files.kind), by name: Python and prose by
    ragdb.chunking, every other language by ragdb.syntax_chunking; None for a file whose name
    says nothing (file_language then reads its first line, else it is "text")."""
    return language_for(path) or file_kind(path)


def file_language(name: str, text: str) -> str:
    """The language of a file read as `text`: by name, else by its #! line, else "text"."""
    known = language_of(name)
    if known is not None:
        return known
    if text.startswith("#!"):
        m = _SHEBANG.match(text)
        if m is not None:
            interpreter = m.group(1)
            return "python" if interpreter.startswith("python") else _SHEBANG_LANGUAGES[interpreter]
    return "text"


#: Reasons a file is left out by its name alone (counted, not named one by one).
EXCLUDED = "excluded"
BINARY = "binary"
IGNORE_RULES = "ignore rules"  # a .gitignore: read as the walk's rules, not indexed as text
SECRETS = "may hold secrets"  # _SECRETS
INCLUDED = "included"  # WalkOptions.verdict: an --include names the file


def _glob_matcher(globs: Sequence[str]) -> Callable[[str, str], bool]:
    """Whether a file matches any glob: a glob with a '/' is matched against the path under
    the root (`*` crosses '/'), any other against the file name. Case-sensitive."""
    names = [re.compile(fnmatch.translate(g)) for g in globs if "/" not in g]
    paths = [re.compile(fnmatch.translate(g.lstrip("/") + ("*" if g.endswith("/") else "")))
             for g in globs if "/" in g]
    name_re = re.compile("|".join(f"(?:{r.pattern})" for r in names)) if names else None
    path_re = re.compile("|".join(f"(?:{r.pattern})" for r in paths)) if paths else None

    def matches(name: str, rel: str) -> bool:
        return bool((name_re is not None and name_re.match(name))
                    or (path_re is not None and path_re.match(rel)))
    return matches


@dataclass(frozen=True)
class WalkOptions:
    """Which files a walk yields: the default file-type rule, plus the files `include` names
    and minus those `exclude` names (a file both name is included)."""

    include: tuple[str, ...] = DEFAULT_INCLUDE  # globs: indexed even where the rule says no
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE  # globs: left out, unless include names them
    ignore: bool = True  # honour .gitignore files, .git/info/exclude and their ! negations
    hidden: bool = False  # walk into folders whose name starts with a dot
    follow_symlinks: bool = False  # follow links whose target lies outside the root

    def __post_init__(self) -> None:
        for option, globs in (("--include", self.include), ("--exclude", self.exclude)):
            for glob in globs:
                if not glob.strip():
                    raise RagdbError(f"{option} needs a glob, not an empty string")
                if len(glob) > MAX_GLOB_CHARS:
                    raise RagdbError(f"{option} glob is {len(glob)} characters long; at most "
                                     f"{MAX_GLOB_CHARS} are accepted")
                if not glob.isprintable():
                    raise RagdbError(f"{option} glob {json.dumps(glob)} holds control characters")
        both = sorted(set(self.include) & set(self.exclude))
        if both:
            raise RagdbError(f"--include and --exclude both name {', '.join(map(repr, both))}: "
                             "give it to one of them")

    def verdict(self, name: str, rel: str) -> str:
        """The file-type rule by name alone, for a file the walk reached (`rel`: its path under
        the root, needed only when a glob has a '/'): INCLUDED when an --include names it,
        else the reason it is left out unread, else "" (read, and judged by its content)."""
        if self.include and _matchers(self.include)(name, rel):
            return INCLUDED
        if self.exclude and _matchers(self.exclude)(name, rel):
            return EXCLUDED
        if os.path.splitext(name)[1].lower() in BINARY_SUFFIXES:
            return BINARY
        if name == ".gitignore":
            return IGNORE_RULES
        if _SECRETS.fullmatch(name):
            return SECRETS
        return ""

    def to_json(self) -> str:
        return json.dumps({"include": list(self.include), "exclude": list(self.exclude),
                           "ignore": self.ignore, "hidden": self.hidden,
                           "follow_symlinks": self.follow_symlinks})

    @classmethod
    def from_json(cls, text: str) -> "WalkOptions":
        raw = json.loads(text or "{}")
        include = tuple(raw.get("include", DEFAULT_INCLUDE))
        # Recorded before --exclude existed, --include replaced the rule: the same file set
        # (an --include '*' was every file already).
        legacy = EVERYTHING if include and "*" not in include else DEFAULT_EXCLUDE
        exclude = tuple(raw.get("exclude", legacy))
        return cls(include=include, exclude=exclude,
                   ignore=bool(raw.get("ignore", True)), hidden=bool(raw.get("hidden", False)),
                   follow_symlinks=bool(raw.get("follow_symlinks", False)))


@lru_cache(maxsize=64)
def _matchers(globs: tuple[str, ...]) -> Callable[[str, str], bool]:
    return _glob_matcher(globs)


@dataclass
class IndexStats:
    """What an index run did. Every file (or unreadable folder) the walk reached is counted
    once: files_seen == files_indexed + files_unchanged + files_skipped. files_removed counts
    rows: files gone from disk, or now skipped, whose rows were deleted."""

    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    chunks_written: int = 0
    chunks_total: int = 0
    seconds: float = 0.0
    full_rebuild: bool = False
    skipped: dict[str, int] = field(default_factory=dict)
    #: (stored path, reason) of every file or folder skipped, in walk order, but those left
    #: out by name alone (EXCLUDED, BINARY, IGNORE_RULES, SECRETS): they are only counted.
    skipped_paths: list[tuple[str, str]] = field(default_factory=list)
    parse_fallbacks: int = 0  # source files whose tree was mostly errors: cut as text
    #: Stored paths of those files.
    fallback_paths: list[str] = field(default_factory=list)
    #: Files indexed or unchanged, by language (files.kind).
    languages: dict[str, int] = field(default_factory=dict)

    def skip(self, path: str, reason: str, named: bool = True) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if named:
            self.skipped_paths.append((path, reason))

    @property
    def files_skipped(self) -> int:
        return sum(self.skipped.values())


@dataclass
class Scan:
    """What a walk of the roots found: files to read, and what it left alone and why."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    #: Files left out by name (--exclude, a binary format): counted, not named.
    left_out: list[tuple[Path, str]] = field(default_factory=list)
    #: Files an --include glob names: the rule's lockfile, generated and minified checks spare
    #: them (they are still left out when binary, not UTF-8 or too large).
    included: set[Path] = field(default_factory=set)
    #: Folders that exist but cannot be listed: their files keep the rows they had.
    unreadable_dirs: list[Path] = field(default_factory=list)


def _inside(target: Path, top: Path) -> bool:
    return target == top or top in target.parents


def _link_target(path: Path) -> Path | None:
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):  # dangling, a loop, or an unreadable step
        return None


# --- ignore rules ---------------------------------------------------------------------------

# (the folder the patterns are relative to, with a trailing slash; its spec)
_Rules = list[tuple[str, "_Spec"]]

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
_Skip = Callable[[Path, str], None]


def _spec_from(path: Path, shown: Path, top: Path, skip: _Skip) -> _Spec | None:
    """An ignore file, read as any file ragdb reads: a regular file (a FIFO would block the
    run for ever, a link to /dev/zero never ends), within the size cap, and a symlink only
    where its target lies within `top` (a cloned repository can carry any link)."""
    try:
        is_link = stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:  # none here (most folders), or not a folder (.git as a file)
        return None
    if is_link:
        target = _link_target(path)
        if target is None or not _inside(target, top):
            skip(shown, "broken symlink" if target is None else "symlink outside the root")
            return None
    raw, reason = _read_regular(path)
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


def _folder_rules(folder: Path, shown: Path, is_repo_top: bool, top: Path,
                  skip: _Skip) -> _Rules:
    """The rules a folder adds: its .gitignore, and .git/info/exclude at a repository's top.
    `shown` is the folder as skipped paths name it."""
    rules: _Rules = []
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


def _ancestor_rules(root: Path, skip: _Skip) -> _Rules:
    """Rules of the git repository a root lies inside, from its top down to the root's parent
    (a root that is a subfolder of a repository obeys the repository's .gitignore files).

    A root the repository itself ignores (data/raw in a project that ignores data/) was asked
    for by name: the repository's rules are then left out, its own .gitignore files still count.
    """
    chain = [root, *root.parents]
    for depth, candidate in enumerate(chain):
        if (candidate / ".git").exists():
            rules: _Rules = []
            top = candidate.resolve()
            for i in range(depth, 0, -1):  # the repository's top, then down to the root's parent
                rules += _folder_rules(chain[i], chain[i], i == depth, top, skip)
                if rules and _ignored(rules, str(chain[i - 1]), is_dir=True):
                    return []
            return rules
    return []


def _ignored(rules: _Rules, path: str, is_dir: bool) -> bool:
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


def _is_package(folder: str) -> bool:
    """A vendored folder the project imports as its own Python package (vllm/third_party with
    its __init__.py) is code the project ships and calls: it stays in the index."""
    return os.path.isfile(os.path.join(folder, "__init__.py"))


def _name_ok(name: str) -> bool:
    """Whether a file or folder name is UTF-8 (rag.db stores text; os.listdir hands a name
    that is not as a str with lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(path: Path) -> Path:
    """A path whose name is not UTF-8, as it can be printed: its bytes escaped (\\xff)."""
    return Path(os.fsencode(path).decode("utf-8", errors="backslashreplace"))


def _entries(folder: str) -> tuple[list[str], list[str]]:
    """(folder names, other names) of a folder, as os.walk sorts them: a symlink to a folder
    counts as a folder; one whose target cannot be told, as a file. OSError: unreadable."""
    dirs: list[str] = []
    files: list[str] = []
    with os.scandir(folder) as listing:
        for entry in listing:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
    return sorted(dirs), sorted(files)


def _walk(root: Path, options: WalkOptions, scan: Scan) -> None:
    """Files under a root (or the root itself when it is a file), in a stable order: ignore
    rules, vendored and hidden folders, and symlinks that leave the root are left out.

    Depth first with a stack of its own (os.walk recurses, and a tree about 990 folders deep
    ended the run in a RecursionError)."""
    if not root.is_dir():
        scan.files.append(root)  # named by the user: read as given
        return
    base = Path(os.path.abspath(root))
    top = root.resolve()
    visited = {top}
    use_paths = any("/" in g for g in options.include + options.exclude)

    def skip(path: Path, reason: str) -> None:
        scan.skipped.append((path, reason))

    inherited = _ancestor_rules(base, skip) if options.ignore else []
    # (folder, the folder as the root spells it, the rules above it); a child is made with
    # `/`, which parses only its name: deep trees cost no more per folder than shallow ones
    stack: list[tuple[Path, Path, _Rules]] = [(base, root, inherited)]
    while stack:
        folder, out, rules = stack.pop()
        dirpath = str(folder)
        try:
            dirnames, filenames = _entries(dirpath)
        except OSError as exc:
            scan.unreadable_dirs.append(out)
            scan.skipped.append((out, f"unreadable folder ({exc.strerror})"))
            continue
        if options.ignore:
            rules = rules + _folder_rules(folder, out, (folder / ".git").is_dir(), top, skip)
        kept = []
        for d in sorted(dirnames):
            if d in _SKIP_DIRS or (d.startswith(".") and not options.hidden):
                continue
            full = os.path.join(dirpath, d)
            if is_vendored_dir(d) and not _is_package(full):
                continue
            if rules and _ignored(rules, full, is_dir=True):
                continue
            if not _name_ok(d):
                scan.skipped.append((_escaped(out / d), "name not UTF-8"))
                continue
            if os.path.islink(full):
                target = _link_target(Path(full))
                if target is None:
                    scan.skipped.append((out / d, "broken symlink"))
                    continue
                if not options.follow_symlinks:
                    if not _inside(target, top):
                        scan.skipped.append((out / d, "symlink outside the root"))
                    continue  # a link inside the root: its files are indexed where they are
                if target in visited:
                    continue  # a loop, or a folder reached twice
                visited.add(target)
            kept.append(d)
        stack.extend((folder / d, out / d, rules) for d in reversed(kept))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if rules and _ignored(rules, full, is_dir=False):
                continue
            if not _name_ok(name):
                scan.skipped.append((_escaped(out / name), "name not UTF-8"))
                continue
            verdict = options.verdict(name, full[len(str(base)) + 1:] if use_paths else "")
            if verdict == INCLUDED:
                scan.included.add(out / name)
            elif verdict:
                scan.left_out.append((out / name, verdict))
                continue
            if os.path.islink(full) and not options.follow_symlinks:
                target = _link_target(Path(full))
                if target is None:
                    scan.skipped.append((out / name, "broken symlink"))
                    continue
                if not _inside(target, top):
                    scan.skipped.append((out / name, "symlink outside the root"))
                    continue
            scan.files.append(out / name)


def _relative(path: Path) -> str:
    """The stored path: relative to the current directory, as the user typed the corpus root."""
    if not path.is_absolute() and ".." not in path.parts:
        return path.as_posix()  # already relative and normal: what relpath would give
    return Path(os.path.relpath(path)).as_posix()


def stored_path(path: Path) -> str:
    """How rag.db names a file or root: relative to the current directory, '/'-separated."""
    return _relative(path)


def distinct_roots(roots: Sequence[Path]) -> list[Path]:
    """The roots once each: `a`, `$PWD/a` and `a/../a` are one root (stored as `a`), spelled
    as it was first given."""
    unique: dict[str, Path] = {}
    for root in roots:
        unique.setdefault(_relative(root), root)
    return list(unique.values())


def scan_roots(roots: Sequence[Path], options: WalkOptions = WalkOptions()) -> Scan:
    """Every file to consider, checked up front so a bad root fails before anything changes.

    Symlinks whose target lies outside their root are skipped unless options.follow_symlinks.
    A file reached through two roots (a folder and a subfolder of it, spelled differently)
    is listed once.
    """
    roots = distinct_roots(roots)
    check_roots(roots)
    scan = Scan()
    for root in roots:
        found, left_out = len(scan.files), len(scan.left_out)
        _walk(root, options, scan)
        excluded = sum(1 for _, why in scan.left_out[left_out:] if why == EXCLUDED)
        if excluded and len(scan.files) == found:
            # Its rows would all be deleted: refused before anything is written.
            raise RagdbError(
                f"--exclude {' '.join(map(repr, options.exclude))} leaves no file to index "
                f"under {root} ({excluded} excluded); nothing was changed")
    scan.files = _unique_files(scan.files)
    return scan


def _unique_files(files: Sequence[Path]) -> list[Path]:
    """Each stored path once (`a/x.md` and `$PWD/a/x.md` are one file), sorted."""
    unique: dict[str, Path] = {}
    for path in files:
        unique.setdefault(_relative(path), path)
    return sorted(unique.values())


def _scan_also(scan: Scan, paths: Sequence[str], recorded: dict[str, str]) -> None:
    """Add recorded roots to a scan, each walked with the options of its last run."""
    for path in paths:
        if not os.path.exists(path):
            raise RagdbError(
                f"this run rebuilds the whole index (a different chunk size or ragdb version) "
                f"and the recorded root {path} is gone (no such file or directory): "
                f"`ragdb roots --remove {shlex.quote(path)}` forgets it and its rows")
        check_roots([Path(path)])
        _walk(Path(path), WalkOptions.from_json(recorded[path]), scan)
    scan.files = _unique_files(scan.files)


def check_roots(roots: Sequence[Path]) -> None:
    """A root that is missing or unreadable fails the run before anything is written."""
    for root in roots:
        if not _name_ok(str(root)) or not _name_ok(_relative(root)):
            raise RagdbError(f"cannot index {_escaped(root)}: its name is not UTF-8")
        if not root.exists():
            raise RagdbError(f"cannot index {root}: no such file or directory")
        if not os.access(root, os.R_OK) or (root.is_dir() and not os.access(root, os.X_OK)):
            raise RagdbError(f"cannot index {root}: permission denied")


def collect_files(roots: Sequence[Path], options: WalkOptions = WalkOptions()) -> list[Path]:
    return scan_roots(roots, options).files


def holds(root: str, path: str) -> bool:
    """Whether the stored root `root` holds the stored path `path`, on whole components:
    `docs` holds `docs/a.md`, never `docs.md`; `docs/a.md` never holds `docs/a.md.txt`. `.`
    holds what lies inside the current folder, not `../other/x`; a root of `..` only (the
    current folder lies inside it) holds what is not further out. sql/roots_list.sql and
    sql/roots_remove.sql apply the same rule."""
    if root == ".":
        return not path.startswith("../")
    if not (root + "/").replace("../", ""):  # "..", "../..": parents of the current folder
        return not path.startswith(root + "/../")
    return path == root or path.startswith(root + "/")


def _under(path: str, roots: Sequence[str]) -> bool:
    """Whether a stored path lies under one of these stored roots."""
    return any(holds(root, path) for root in roots)


def check_working_folder(conn: Connection, roots: Sequence[Path]) -> None:
    """Stored paths are relative to the folder an index is built from: the same files indexed
    from another folder would be stored a second time under other names (every hit twice).
    Such a run is refused in one line that names the folder the index was built from.

    Indexing from another folder is fine where the recorded roots are found there too and no
    root of the run is a recorded root seen from elsewhere (a copy of a project with its
    rag.db; a project that moved, whose old folder is gone)."""
    built = get_setting(conn, Setting.BASE_DIR)
    here = os.getcwd()
    if not built or built == here or not os.path.isdir(built):
        return
    try:
        if os.path.samefile(built, here):
            return
    except OSError:
        return
    refuse = f"this index was built from {built}, and its paths are relative to that folder"
    hint = f"run `ragdb index` from {built}, or use another --db"
    there = {str(r): os.path.normpath(os.path.join(built, str(r)))
             for r, _walk_options in conn.execute(sql("index_roots_known"))}
    there = {r: path for r, path in there.items() if os.path.exists(path)}  # gone: no double
    for root in roots:
        mine = Path(os.path.realpath(root))
        seen_from_there = Path(os.path.relpath(os.path.abspath(root), built)).as_posix()
        if seen_from_there == _relative(root):
            continue  # spelled the same from both folders (../shared): the same rows
        for path in there.values():
            real = Path(os.path.realpath(path))
            if _inside(mine, real) or _inside(real, mine):
                raise RagdbError(f"{refuse}, where {_relative(root)} is {seen_from_there}: "
                                 f"{hint}")
    for recorded in there:
        if not os.path.exists(recorded):
            raise RagdbError(f"{refuse} ({recorded} is there, not here): {hint}")


#: A file that exists but could not be opened or read: its rows are kept, not removed.
UNREADABLE = "unreadable"
VANISHED = "vanished"


def _read_regular(path: Path) -> tuple[bytes | None, str]:
    """(the bytes of a regular file, '') or (None, why it was not read).

    Only regular files are read (a FIFO would block, /dev/zero never ends), checked before
    opening and again on the open descriptor, and never more than the size cap plus one byte.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None, "not a regular file"
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None, VANISHED
    except OSError:
        return None, UNREADABLE
    try:
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None, "not a regular file"
            if info.st_size > MAX_FILE_BYTES:
                return None, "too large"
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None, UNREADABLE
    if len(raw) > MAX_FILE_BYTES:
        return None, "too large"
    return raw, ""


def _read_text(path: Path) -> tuple[str | None, bytes, str]:
    """(text, raw bytes, reason it was skipped or ''): a regular file (_read_regular) that is
    neither binary nor other than UTF-8."""
    raw, reason = _read_regular(path)
    if raw is None:
        return None, b"", reason
    if b"\x00" in raw[:8192]:
        return None, raw, "binary"
    try:
        return raw.decode("utf-8"), raw, ""
    except UnicodeDecodeError:
        return None, raw, "not UTF-8"


def index_paths(
    conn: Connection,
    roots: Sequence[Path],
    *,
    max_chunk_size: int = MAX_CHUNK_SIZE,
    options: WalkOptions = WalkOptions(),
    progress: Callable[[int], None] | None = None,
    on_files: Callable[[int], None] | None = None,
) -> IndexStats:
    """Bring the index in step with the files under `roots`, in a single transaction.

    Only new or changed files (by SHA-256) are re-chunked; files gone from disk lose their rows.
    A kill or Ctrl-C before the commit leaves the previous index whole: WAL readers never see
    a half-written run.
    """
    if not 1 <= max_chunk_size <= MAX_CHUNK_SIZE:
        raise RagdbError(f"--max_chunk_size must be between 1 and {MAX_CHUNK_SIZE}")
    started = time.perf_counter()
    started_at = _now()
    roots = distinct_roots(roots)
    scan = scan_roots(roots, options)
    mine = [_relative(root) for root in roots]
    with write_transaction(conn):
        check_working_folder(conn, roots)
        recorded = {str(path): str(walk) for path, walk in conn.execute(sql("index_roots_known"))}
        others = [path for path in recorded if path not in mine]
        full_rebuild = _needs_rebuild(conn, max_chunk_size)
        rebuilt = others if full_rebuild else []
        if rebuilt:
            # A rebuild clears every row: the other recorded roots are walked again too, each
            # with the options of its last run, or their rows would be gone.
            _scan_also(scan, rebuilt, recorded)
            mine, others = mine + rebuilt, []
        files = scan.files
        if on_files:
            on_files(len(files))
        stats = IndexStats(files_seen=len(files) + len(scan.skipped) + len(scan.left_out),
                           full_rebuild=full_rebuild)
        for path, reason in scan.skipped:
            stats.skip(_relative(path), reason)
        for path, reason in scan.left_out:
            stats.skip(_relative(path), reason, named=False)
        languages = stats.languages
        kept = [_relative(d) for d in scan.unreadable_dirs]
        if stats.full_rebuild:
            conn.execute(sql("index_clear"))
        known = {
            path: (file_id, sha) for file_id, path, sha in conn.execute(sql("index_files_known"))
        }
        seen: set[str] = set()
        fts = _FullText(conn)
        for path in files:
            rel = _relative(path)
            seen.add(rel)
            text, raw, reason = _read_text(path)
            digest = hashlib.sha256(raw).hexdigest() if text is not None else ""
            old = known.get(rel)
            if (text is not None and (old is None or old[1] != digest)
                    and path not in scan.included):
                # Machine-written files crowd out the code people ask about. Judged by name and
                # content (new or changed files only): vendored folders were left out by the walk.
                reason = (is_generated_or_minified(path.name, text)
                          or ("generated" if is_build_metadata(rel) else ""))
                if reason:
                    text = None
            if text is None:
                stats.skip(rel, reason, named=reason != VANISHED)
                if rel in known and reason != UNREADABLE:  # unreadable: keep what it had
                    conn.execute(sql("index_file_delete"), {"file_id": known[rel][0]})
                    stats.files_removed += 1
            else:
                kind = file_language(path.name, text)
                languages[kind] = languages.get(kind, 0) + 1
                if old is not None and old[1] == digest:
                    stats.files_unchanged += 1
                else:
                    if old is not None:
                        conn.execute(sql("index_file_delete"), {"file_id": old[0]})
                    written, fell_back = _write_file(
                        conn, rel, path, text, len(raw), digest, max_chunk_size, fts, kind
                    )
                    stats.chunks_written += written
                    if fell_back:
                        stats.parse_fallbacks += 1
                        stats.fallback_paths.append(rel)
                    stats.files_indexed += 1
            if progress:
                progress(1)
        fts.flush()
        for rel, (file_id, _sha) in known.items():
            if rel in seen or not _under(rel, mine) or _under(rel, kept):
                continue
            if _under(rel, others) and os.path.lexists(rel):
                continue  # another root holds it too (a subfolder this walk ignores): its own
            conn.execute(sql("index_file_delete"), {"file_id": file_id})
            stats.files_removed += 1
        if known and (stats.files_indexed or stats.files_removed):
            conn.execute(sql("vectors_orphans_delete"))
        set_setting(conn, Setting.MAX_CHUNK_SIZE, str(max_chunk_size))
        set_setting(conn, Setting.TOKENIZER, TOKENIZER_VERSION)
        set_setting(conn, Setting.CHUNKER, CHUNKER_VERSION)
        if _name_ok(os.getcwd()):
            set_setting(conn, Setting.BASE_DIR, os.getcwd())  # check_working_folder
        now = _now()
        for root in roots:
            conn.execute(sql("roots_touch"), {"path": _relative(root), "now": now,
                                              "options": options.to_json()})
        for other in rebuilt:
            conn.execute(sql("roots_touch"), {"path": other, "now": now,
                                              "options": recorded[other]})
        if stats.files_indexed or stats.files_removed or stats.full_rebuild:
            full_text_done(conn)
            conn.execute(sql("index_common_terms"))
            bump_generation(conn)
        stats.chunks_total = int(scalar(conn, "SELECT count(*) FROM chunks"))
        stats.seconds = time.perf_counter() - started
        conn.execute(
            sql("index_run_insert"),
            {
                "started_at": started_at,
                "finished_at": _now(),
                "roots": json.dumps([_relative(r) for r in roots]),
                "max_chunk_size": max_chunk_size,
                "tokenizer": TOKENIZER_VERSION,
                "full_rebuild": int(stats.full_rebuild),
                "files_seen": stats.files_seen,
                "files_indexed": stats.files_indexed,
                "files_removed": stats.files_removed,
                "files_skipped": stats.files_skipped,
                "chunks_written": stats.chunks_written,
                "chunks_total": stats.chunks_total,
                "parse_fallbacks": stats.parse_fallbacks,
                "seconds": stats.seconds,
            },
        )
    return stats


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _needs_rebuild(conn: Connection, max_chunk_size: int) -> bool:
    """Chunk boundaries and analysed text depend on these, so a change invalidates every row."""
    stored = [get_setting(conn, key) for key in (
        Setting.MAX_CHUNK_SIZE, Setting.TOKENIZER, Setting.CHUNKER)]
    if stored == [None, None, None]:
        return False
    return stored != [str(max_chunk_size), TOKENIZER_VERSION, CHUNKER_VERSION]


def _write_file(
    conn: Connection,
    rel: str,
    path: Path,
    text: str,
    size: int,
    digest: str,
    max_chunk_size: int,
    fts: "_FullText",
    kind: str,
) -> tuple[int, bool]:
    """Write one file's rows; (chunks written, whether its parse failed so it was cut as text).

    files.kind is the file's language (file_language): Python and prose are cut by
    ragdb.chunking, the rest by ragdb.syntax_chunking (whole code cap for languages with a
    syntax tree, the prose share for configuration and other text)."""
    file_id = conn.execute(
        sql("index_file_insert"),
        {
            "path": rel,
            "sha256": digest,
            "size": size,
            "kind": kind,
            "n_chars": len(text),
            "indexed_at": _now(),
        },
    ).fetchall()[0][0]
    fell_back = False
    if kind in _CHUNKING_KINDS:
        chunks = chunk_text(text, kind, chunk_cap(kind, max_chunk_size),
                            mdx=kind == "markdown" and is_mdx(rel))
    else:
        cap = max_chunk_size if kind in SYNTAX_LANGUAGES else chunk_cap(kind, max_chunk_size)
        chunks, fell_back = chunk_source(text, kind, cap)
    if not chunks:
        return 0, fell_back
    analyse = fts.analyse
    path_terms = analyse(rel)
    rows = []
    line, at = 1, 0  # line number of offset `at`
    count = text.count
    for chunk in chunks:
        first, last = chunk.first, chunk.last
        # Line of an offset: one plus the line breaks before it, counted on from the previous
        # chunk's end (a chunk may start a little before it when it overlaps).
        if first >= at:
            line += count("\n", at, first)
        else:
            line -= count("\n", first, at)
        start_line, at = line, first
        end = max(first, last - 1)
        line += count("\n", at, end)
        end_line, at = line, end
        rows.append((file_id, first, last, start_line, end_line, chunk.kind, chunk.context,
                     text[first:last]))
    ids = conn.executemany(sql("index_chunk_insert"), rows)
    fts.add((chunk_id, path_terms, _context_terms(analyse, row[6], row[7], kind, chunk.names),
             analyse(row[7]))
            for (chunk_id,), row, chunk in zip(ids, rows, chunks))
    return len(chunks), fell_back


class _FullText:
    """Full-text rows waiting to be written, in batches of many files, and the run's analyser.

    FTS5 holds new rows in memory until a statement on another table opens a savepoint (the
    next file or chunk insert does), then writes them out as a segment of its own. Written
    chunk by chunk, the SQLite time of an index run was twice what it is with the same rows
    written together (the Python and prose set under cProfile: 1.66 s -> 0.85 s, each file
    insert 0.44 ms -> 0.05 ms). What is indexed, and so every search, is the same.
    """

    LIMIT = 4_000_000  # characters of analysed text held before a batch is written

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.analyse = Analyser()  # this run's
        self.rows: list[tuple[int, str, str, str]] = []
        self.size = 0

    def add(self, rows: Iterable[tuple[int, str, str, str]]) -> None:
        for row in rows:
            self.rows.append(row)
            self.size += len(row[3])
        if self.size >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        """Write what is held; before anything reads or deletes full-text rows."""
        if self.rows:
            write_full_text(self.conn, sql("index_fts_insert"), self.rows)
        self.rows = []
        self.size = 0


_CHUNKING_KINDS = frozenset({"python", "markdown", "rst", "text"})


def _context_terms(analyse: Callable[[str], str], context: str, body: str, kind: str,
                   names: Sequence[str] = ()) -> str:
    """The context column: the enclosing signatures or headings, then the joined names of the
    definitions the chunk holds (the syntax tree's, else tokenize.defined_names)."""
    joined = analyse_names(list(names) or defined_names(body, kind))
    return f"{analyse(context)} {joined}".strip()


def update_index(
    conn: Connection,
    roots: Sequence[Path],
    *,
    max_chunk_size: int = MAX_CHUNK_SIZE,
    options: WalkOptions = WalkOptions(),
    vectors: bool = True,
    embedder_name: str | None = None,
    embedder: Embedder | None = None,
    progress: Callable[[int], None] | None = None,
    on_files: Callable[[int], None] | None = None,
    on_embedded: Callable[[int, int], None] | None = None,
    wait: bool = False,
    on_wait: Callable[[], None] | None = None,
) -> tuple[IndexStats, VectorStats | None]:
    """What `ragdb index` does: files -> chunks -> rows in one transaction, then vectors.

    The vector step commits per batch after the rows are in, so a run killed while embedding
    keeps its chunks and the next run embeds only what is missing. `embedder_name` None means
    the one this index was built with (settings 'embedder_name'), else the default model;
    `embedder`, when given, is that model already loaded (the server keeps one) and the name
    recorded is still `embedder_name`, so later queries load the model that made the vectors.

    One run at a time per rag.db (ragdb.db.index_lock, whichever door it came through): a
    second is refused with IndexRunningError, or with `wait` waits (`on_wait` says so once).
    """
    with index_lock(conn, wait=wait, on_wait=on_wait):
        return _update_index(conn, roots, max_chunk_size=max_chunk_size, options=options,
                             vectors=vectors, embedder_name=embedder_name, embedder=embedder,
                             progress=progress, on_files=on_files, on_embedded=on_embedded)


def _update_index(
    conn: Connection,
    roots: Sequence[Path],
    *,
    max_chunk_size: int,
    options: WalkOptions,
    vectors: bool,
    embedder_name: str | None,
    embedder: Embedder | None,
    progress: Callable[[int], None] | None,
    on_files: Callable[[int], None] | None,
    on_embedded: Callable[[int, int], None] | None,
) -> tuple[IndexStats, VectorStats | None]:
    stats = index_paths(conn, roots, max_chunk_size=max_chunk_size, options=options,
                        progress=progress, on_files=on_files)
    if not vectors:
        return stats, None
    name = embedder_name or get_setting(conn, Setting.EMBEDDER_NAME) or DEFAULT_MODEL
    if embedder is None:
        identity = embedder_identity(name)
    else:  # the model loaded before the name (or its folder) changed is not the one now
        try:
            identity = embedder_identity(name)
        except RagdbError:  # a hub id not reachable now: the loaded model is all there is
            identity = embedder.identity
        if embedder.identity != identity:
            embedder = None
    if vectors_pending(conn, identity):
        model = embedder if embedder is not None else load_embedder(name)
        vstats = sync_vectors(conn, model, progress=on_embedded, name=name)
    else:  # nothing to embed: no model is loaded
        vstats = VectorStats(total=vector_count(conn))
    if vstats.embedded or vstats.removed or get_setting(conn, Setting.EMBEDDER_NAME) != name:
        with write_transaction(conn):
            set_setting(conn, Setting.EMBEDDER_NAME, name)
            if vstats.embedded or vstats.removed:
                bump_generation(conn)
    return stats, vstats
