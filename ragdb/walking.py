"""The walk: which files under the roots an index run reads, and what it leaves out and why.

The default file-type rule (every UTF-8 text, each file in its language), --include and
--exclude globs, hidden folders, symlinks kept inside the root, and the ignore rules
(ragdb.ignore_rules). Paths are stored relative to the folder the index is built from."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from ragdb.errors import RagdbError
from ragdb.file_types import is_vendored_dir
from ragdb.ignore_rules import Rules, ancestor_rules, folder_rules, ignored
from ragdb.reading import inside, link_target
from ragdb.resources import SAVED_ANSWERS
from ragdb.secret_files import secret_name

DEFAULT_INCLUDE: tuple[str, ...] = ()  # globs --include adds to the default file-type rule
DEFAULT_EXCLUDE: tuple[str, ...] = ()  # globs --exclude takes out of it
#: Python and prose only, what `--include` used to select (the benchmarks compare with it):
#: WalkOptions(include=PYTHON_AND_DOCS, exclude=EVERYTHING).
PYTHON_AND_DOCS = ("*.py", "*.md", "*.txt", "*.rst")
EVERYTHING = ("*",)
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
#: Reasons a file is left out by its name alone (counted, not named one by one).
EXCLUDED = "excluded"
BINARY = "binary"
IGNORE_RULES = "ignore rules"  # a .gitignore: read as the walk's rules, not indexed as text
SECRETS = "may hold secrets"  # secret_files.secret_name
#: A symlink whose target lies in a folder the walk does not enter (.hidden/token.txt): a
#: harmless link name must not let it in (nor one into .git, even with --hidden).
HIDDEN_TARGET = "symlink into a hidden folder"
INCLUDED = "included"  # WalkOptions.verdict: an --include names the file


def _glob_matcher(globs: Sequence[str]) -> Callable[[str, str], bool]:
    """Whether a file matches any glob: a glob with a '/' is matched against the path under
    the root (`*` crosses '/'), any other against the file name. Case-sensitive. A `[` also
    matches itself, as in a search's --path: `--exclude 'pages/posts/[id].tsx'` (a Next.js
    route) read the brackets as a character class and left the file in."""
    globs = [*globs, *(g.replace("[", "[[]") for g in globs if "[" in g)]
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
        if secret_name(name):
            return SECRETS
        return ""

    def skips_folder(self, name: str) -> bool:
        """Whether the walk never enters a folder of this name (hidden, or .git and the like)."""
        return name in _SKIP_DIRS or (name.startswith(".") and not self.hidden)

    def link_verdict(self, target: Path, top: Path, is_dir: bool) -> str:
        """The reason a symlink is left out by what it leads to, else "": the credential and
        hidden-folder rules judge the resolved target as the walk would judge it there (its
        folders under the root; outside the root, which only --follow-symlinks reaches, its
        own name), so `settings.txt -> .env` is left out as .env is. An --include naming the
        target's name lets it in, as it does the target: INCLUDED for a file (its content is
        then not judged either, as the target's is not)."""
        parts = target.relative_to(top).parts if inside(target, top) else (target.name,)
        folders = parts if is_dir else parts[:-1]
        if any(d.startswith(".") and self.skips_folder(d) for d in folders):
            return HIDDEN_TARGET
        named = bool(self.include) and _matchers(self.include)(target.name, "/".join(parts))
        if not is_dir and not named and secret_name(target.name):
            return SECRETS
        return INCLUDED if named and not is_dir else ""

    def under(self, root: str) -> "WalkOptions":
        """These options for a walk of `root`: an absolute glob (`/home/me/proj/tests/*`, as
        a shell completes it) read as the path under the root (`/tests/*`), as the search
        filters read one (stored_glob); an existing folder named without a trailing '/' is
        that folder. Kept absolute in the recorded options, so a re-index reads it again."""
        if not any(g.startswith("/") for g in self.include + self.exclude):
            return self
        return replace(self, include=tuple(_glob_under(g, root) for g in self.include),
                       exclude=tuple(_glob_under(g, root) for g in self.exclude))

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


def _glob_under(glob: str, root: str) -> str:
    """An absolute glob as a path glob under `root` (a leading '/' anchors it there, so
    `/proj/setup.py` is that file, not every setup.py); one outside `root` is as given (it
    matches nothing there)."""
    if not glob.startswith("/"):
        return glob
    if not glob.endswith("/") and not any(c in glob for c in "*?[") and os.path.isdir(glob):
        glob += "/"
    mapped = stored_glob(glob, root)
    return glob if mapped == glob else "/" + mapped


@lru_cache(maxsize=64)
def _matchers(globs: tuple[str, ...]) -> Callable[[str, str], bool]:
    return _glob_matcher(globs)


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


def _is_package(folder: str) -> bool:
    """A vendored folder the project imports as its own Python package (vllm/third_party with
    its __init__.py) is code the project ships and calls: it stays in the index."""
    return os.path.isfile(os.path.join(folder, "__init__.py"))


def name_ok(name: str) -> bool:
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


def _walk(root: Path, options: WalkOptions, scan: Scan, own: frozenset[str] = frozenset()
          ) -> None:
    """Files under a root (or the root itself when it is a file), in a stable order: ignore
    rules, vendored and hidden folders, symlinks that leave the root or lead where the rules
    leave out, and ragdb's own files (`own`: real paths, ragdb_files; and the outputs/answers
    folder beside any rag.db the walk meets) are left out.

    Depth first with a stack of its own (os.walk recurses, and a tree about 990 folders deep
    ended the run in a RecursionError)."""
    if not root.is_dir():
        # Named by the user: read as given, but a link by what it leads to, as in a walk
        # (`ragdb index notes.txt` with notes.txt -> ~/.ssh/id_rsa names no key).
        target = link_target(root) if root.is_symlink() else None
        why = "" if target is None else options.link_verdict(
            target, Path(os.path.abspath(root.parent)).resolve(), False)
        if why and why != INCLUDED:
            scan.skipped.append((root, why))
        else:
            if why == INCLUDED:
                scan.included.add(root)
            scan.files.append(root)
        return
    base = Path(os.path.abspath(root))
    top = root.resolve()
    visited = {top}
    options = options.under(str(base))
    use_paths = any("/" in g for g in options.include + options.exclude)
    named: set[Path] = set()  # ignore files the rules skipped and named: counted once

    def skip(path: Path, reason: str) -> None:
        named.add(path)
        scan.skipped.append((path, reason))

    inherited = ancestor_rules(base, skip) if options.ignore else []
    # (folder, the folder as the root spells it, its real path, the rules above it); a child
    # is made with `/`, which parses only its name: deep trees cost no more per folder than
    # shallow ones (its real path too: only a followed link is resolved)
    stack: list[tuple[Path, Path, str, Rules]] = [(base, root, str(top), inherited)]
    while stack:
        folder, out, real, rules = stack.pop()
        dirpath = str(folder)
        try:
            dirnames, filenames = _entries(dirpath)
        except OSError as exc:
            scan.unreadable_dirs.append(out)
            scan.skipped.append((out, f"unreadable folder ({exc.strerror})"))
            continue
        if options.ignore:
            rules = rules + folder_rules(folder, out, (folder / ".git").is_dir(), top, skip)
        if "rag.db" in filenames:
            # Another project's index under this root (indexed alone before): the answers
            # `ragdb answer` saved beside it are ragdb's output, not the project's files.
            own = own | {os.path.join(real, SAVED_ANSWERS)}
        kept = []
        for d in sorted(dirnames):
            if options.skips_folder(d):
                continue
            full = os.path.join(dirpath, d)
            if is_vendored_dir(d) and not _is_package(full):
                continue
            if rules and ignored(rules, full, is_dir=True):
                continue
            if not name_ok(d):
                scan.skipped.append((_escaped(out / d), "name not UTF-8"))
                continue
            real_d = os.path.join(real, d)
            if os.path.islink(full):
                target = link_target(Path(full))
                if target is None:
                    scan.skipped.append((out / d, "broken symlink"))
                    continue
                if not options.follow_symlinks:
                    if not inside(target, top):
                        scan.skipped.append((out / d, "symlink outside the root"))
                    continue  # a link inside the root: its files are indexed where they are
                if target in visited or str(target) in own:
                    continue  # a loop, or a folder reached twice
                why = options.link_verdict(target, top, is_dir=True)
                if why:
                    scan.left_out.append((out / d, why))
                    continue
                visited.add(target)
                real_d = str(target)
            elif real_d in own:
                continue
            kept.append((d, real_d))
        stack.extend((folder / d, out / d, real_d, rules) for d, real_d in reversed(kept))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if rules and ignored(rules, full, is_dir=False):
                continue
            if not name_ok(name):
                scan.skipped.append((_escaped(out / name), "name not UTF-8"))
                continue
            if own and os.path.join(real, name) in own:
                continue  # rag.db, its -wal and lock: never its own input
            verdict = options.verdict(name, full[len(str(base)) + 1:] if use_paths else "")
            if verdict == INCLUDED:
                pass  # scan.included once a link's target passes its own rules, below
            elif verdict == IGNORE_RULES and out / name in named:
                continue  # skipped as a rules file already (a FIFO, a link out of the root)
            elif verdict:
                scan.left_out.append((out / name, verdict))
                continue
            if os.path.islink(full):
                target = link_target(Path(full))
                if target is None:
                    scan.skipped.append((out / name, "broken symlink"))
                    continue
                if not options.follow_symlinks and not inside(target, top):
                    scan.skipped.append((out / name, "symlink outside the root"))
                    continue
                if str(target) in own:
                    continue
                # Judged by its target even where an --include names the link: `--include
                # '*.txt'` must not let in `notes.txt -> id_rsa` (an --include naming the
                # target does, in link_verdict).
                why = options.link_verdict(target, top, False)
                if why == INCLUDED:
                    verdict = INCLUDED
                elif why:
                    scan.left_out.append((out / name, why))
                    continue
            if verdict == INCLUDED:
                scan.included.add(out / name)
            scan.files.append(out / name)


def relative(path: Path) -> str:
    """The stored path: relative to the current directory, as the user typed the corpus root."""
    if not path.is_absolute() and ".." not in path.parts:
        return path.as_posix()  # already relative and normal: what relpath would give
    return Path(os.path.relpath(path)).as_posix()


def stored_path(path: Path) -> str:
    """How rag.db names a file or root: relative to the current directory, '/'-separated."""
    return relative(path)


def stored_under(path: str, top: str) -> str | None:
    """`path`, as the shell spells it, through its real path relative to `top` (the folder
    the index was built from), in the form the index stores paths ('.' for `top` itself);
    None when it lies outside `top` or cannot be resolved."""
    try:
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(top))
    except (OSError, ValueError):
        return None
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return rel.replace(os.sep, "/")


def stored_glob(glob: str, top: str) -> str:
    """A path filter as a coding agent passes it (`/home/me/proj/src/*.py`, absolute) in the
    form the index stores paths (`src/*.py`): its folders before the first wildcard,
    stored_under `top`; a trailing `/` kept. A glob that is not absolute, or lies outside
    `top`, is as given."""
    if not glob.startswith("/") or not top:
        return glob
    trailing = "/" if glob.endswith("/") else ""
    parts = glob.rstrip("/").split("/")
    fixed = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")),
                 len(parts))
    rel = stored_under("/".join(parts[:fixed]) or "/", top)
    if rel is None:
        return glob
    pieces = ([] if rel == os.curdir else [rel]) + parts[fixed:]
    return "/".join(pieces) + trailing if pieces else "*"


def real_root(root: Path) -> str:
    """What a root is, whatever its spelling: a folder's real path (through symlinks), a
    file's name in its folder's real path (a symlinked file is a file of its own, as in a walk)."""
    if os.path.isdir(root):
        return os.path.realpath(root)
    return os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(root))), root.name)


def distinct_roots(roots: Sequence[Path]) -> list[Path]:
    """The roots once each: `a`, `$PWD/a`, `a/../a` and a symlink to `a` are one root (by its
    real path), spelled as it was first given."""
    unique: dict[str, Path] = {}
    for root in roots:
        unique.setdefault(real_root(root), root)
    return list(unique.values())


def scan_roots(roots: Sequence[Path], options: WalkOptions = WalkOptions(),
               own: frozenset[str] = frozenset()) -> Scan:
    """Every file to consider, checked up front so a bad root fails before anything changes.

    Symlinks whose target lies outside their root are skipped unless options.follow_symlinks.
    A file reached through two roots (a folder and a subfolder of it, spelled differently or
    through a symlinked folder) is listed once. `own`: ragdb's own files, never listed.
    """
    roots = distinct_roots(roots)
    check_roots(roots)
    scan = Scan()
    for root in roots:
        found, left_out = len(scan.files), len(scan.left_out)
        _walk(root, options, scan, own)
        excluded = sum(1 for _, why in scan.left_out[left_out:] if why == EXCLUDED)
        if excluded and len(scan.files) == found:
            # Its rows would all be deleted: refused before anything is written.
            raise RagdbError(
                f"--exclude {' '.join(map(repr, options.exclude))} leaves no file to index "
                f"under {root} ({excluded} excluded); nothing was changed")
    scan.files = _unique_files(scan.files)
    if len(roots) > 1:  # a file under two roots (a root and a subfolder root) is left out once
        scan.skipped = _unique_reasons(scan.skipped)
        scan.left_out = _unique_reasons(scan.left_out)
    return scan


def check_absolute_globs(roots: Sequence[Path], options: WalkOptions) -> None:
    """An absolute --include or --exclude (`$PWD/tests/*`) names files under a root
    (WalkOptions.under); one given with roots that lies under none of them would name nothing,
    silently (a typo, another checkout): refused in one line before anything is written.
    (Recorded with a root that moved since, it names nothing, and the re-index goes on.)"""
    folders = [str(root) for root in roots if os.path.isdir(root)]
    for option, globs in (("--include", options.include), ("--exclude", options.exclude)):
        for glob in globs:
            # stored_glob gives back an absolute glob as it is where it lies outside `folder`.
            if glob.startswith("/") and folders and all(
                    stored_glob(glob, f) == glob for f in folders):
                raise RagdbError(
                    f"{option} {glob} lies outside the folders indexed "
                    f"({', '.join(map(str, folders))}): it would name no file; give a path "
                    "under one of them, or a glob relative to it")


def _unique_reasons(found: Sequence[tuple[Path, str]]) -> list[tuple[Path, str]]:
    """Each skipped or left-out path once (by its folder's real path and its name), first
    reason kept, in the order found."""
    unique: dict[tuple[str, str], tuple[Path, str]] = {}
    for path, why in found:
        unique.setdefault((os.path.realpath(path.parent), path.name), (path, why))
    return list(unique.values())


def _unique_files(files: Sequence[Path]) -> list[Path]:
    """Each file once, by the real path of its folder (`a/x.md`, `$PWD/a/x.md` and
    `link-to-a/x.md` are one file; a symlinked file is a file of its own), sorted."""
    unique: dict[tuple[str, str], Path] = {}
    folders: dict[Path, str] = {}
    for path in files:
        folder = folders.get(path.parent)
        if folder is None:
            folder = folders[path.parent] = os.path.realpath(path.parent)
        unique.setdefault((folder, path.name), path)
    return sorted(unique.values())


def scan_also(scan: Scan, paths: Sequence[str], recorded: dict[str, str],
              own: frozenset[str] = frozenset()) -> None:
    """Add recorded roots to a scan, each walked with the options of its last run."""
    for path in paths:
        if not os.path.exists(path):
            raise RagdbError(
                f"this run rebuilds the whole index (a different chunk size or ragdb version) "
                f"and the recorded root {path} is gone (no such file or directory): "
                f"`ragdb roots --remove {shlex.quote(path)}` forgets it and its rows")
        check_roots([Path(path)])
        _walk(Path(path), WalkOptions.from_json(recorded[path]), scan, own)
    scan.files = _unique_files(scan.files)


def check_roots(roots: Sequence[Path]) -> None:
    """A root that is missing or unreadable fails the run before anything is written."""
    for root in roots:
        if not name_ok(str(root)) or not name_ok(relative(root)):
            raise RagdbError(f"cannot index {_escaped(root)}: its name is not UTF-8")
        if not root.exists():
            raise RagdbError(f"cannot index {root}: no such file or directory")
        if not root.is_dir() and not root.is_file():
            # A device, FIFO or socket (/dev/null, a named pipe) holds no file to index: as a
            # root it was recorded, and every later run named it as skipped.
            raise RagdbError(f"cannot index {root}: not a file or folder (a device, a FIFO or "
                             "a socket)")
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


def under(path: str, roots: Sequence[str]) -> bool:
    """Whether a stored path lies under one of these stored roots."""
    return any(holds(root, path) for root in roots)


def below_root(path: str, roots: Sequence[str]) -> str:
    """A stored path as seen from the outermost of these stored roots that holds it (a root
    that is the file itself: its name): what the full-text index reads as the path.

    The root's own folders are in every path under it; indexed, they would make their words
    (`requests-2.32.3`: 2, 32, 3) common to every chunk, and a question naming them would find
    nothing."""
    for root in sorted(roots, key=len):
        if holds(root, path):
            if path == root:
                return path.rsplit("/", 1)[-1]
            # `.` holds paths as they are; `..` holds `x` (the current folder) too
            return path[len(root) + 1:] if path.startswith(root + "/") else path
    return path
