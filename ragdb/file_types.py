"""What a file is, by its name and first bytes: its language, and whether it is someone else's
(vendored), machine-written (lockfiles, generated, minified) or packaging metadata.

The walk and the index run decide on these which files to read and how to cut them; the
chunkers only cut the text they are given."""

from __future__ import annotations

import os
import re

from ragdb.chunking import file_kind

# --- which files, in which language ----------------------------------------------------------

# Languages cut along their syntax tree.
LANGUAGES: dict[str, str] = {
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".hxx": "cpp", ".inl": "cpp", ".ipp": "cpp",
    ".cu": "cuda", ".cuh": "cuda",
    ".sh": "shell", ".bash": "shell",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".kt": "kotlin", ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala", ".sc": "scala",
    ".lua": "lua",
    ".ex": "elixir", ".exs": "elixir",
    ".hs": "haskell",
    ".ml": "ocaml", ".mli": "ocaml",
    ".zig": "zig",
    ".dart": "dart",
}

# Languages cut as text: no tree would make their chunks better.
TEXT_LANGUAGES: dict[str, str] = {
    ".yaml": "yaml", ".yml": "yaml",
    ".toml": "toml",
    ".json": "json", ".jsonc": "json", ".json5": "json",
    ".dockerfile": "dockerfile",
    ".cmake": "cmake",
    ".mk": "make", ".mak": "make",
    ".ini": "ini", ".cfg": "ini", ".conf": "ini", ".properties": "ini",
    ".proto": "proto",
    ".sql": "sql",
    ".html": "html", ".htm": "html", ".css": "css", ".scss": "css",
    ".zsh": "shell", ".ps1": "powershell",
    ".jinja": "jinja", ".j2": "jinja",
    # Languages with no grammar here, named so `--lang` and the index summary can say what
    # they are (any other text file is indexed too, as "text").
    ".pyi": "python", ".pyx": "cython", ".pxd": "cython",
    ".fish": "fish", ".pl": "perl", ".pm": "perl",
    ".fs": "fsharp", ".r": "r", ".jl": "julia", ".erl": "erlang",
    ".clj": "clojure", ".el": "elisp", ".vim": "vim", ".nim": "nim",
    ".groovy": "groovy", ".gradle": "groovy", ".tf": "hcl", ".hcl": "hcl", ".nix": "nix",
    ".bzl": "starlark", ".bazel": "starlark", ".bat": "batch", ".cmd": "batch",
    ".xml": "xml", ".graphql": "graphql", ".vue": "html", ".svelte": "html",
    ".jsonl": "json", ".ipynb": "json", ".patch": "diff", ".diff": "diff",
}

# Whole file names, for files known by name rather than suffix.
FILE_NAMES: dict[str, str] = {
    "Dockerfile": "dockerfile", "Containerfile": "dockerfile",
    "CMakeLists.txt": "cmake",
    "Makefile": "make", "makefile": "make", "GNUmakefile": "make",
    ".bashrc": "shell", ".profile": "shell",
    # Manifests without a telling suffix (Cargo.toml and package.json have one).
    "go.mod": "gomod", "go.work": "gomod", "Pipfile": "toml", "Gemfile": "ruby",
    "Rakefile": "ruby", "Vagrantfile": "ruby", "Jenkinsfile": "groovy", "BUILD": "starlark",
    "WORKSPACE": "starlark",
}

SYNTAX_LANGUAGES = frozenset(LANGUAGES.values())


def language_for(path: str) -> str | None:
    """The language of a file by name or suffix; None for files no chunker here handles."""
    name = os.path.basename(path)
    if name in FILE_NAMES:
        return FILE_NAMES[name]
    lower = name.lower()
    if lower.startswith(("dockerfile.", "containerfile.")):  # docker/Dockerfile.rocm
        return "dockerfile"
    ext = os.path.splitext(lower)[1]
    return LANGUAGES.get(ext) or TEXT_LANGUAGES.get(ext)


# --- files to leave out -----------------------------------------------------------------------

VENDORED_DIRS = frozenset({
    "vendor", "vendored", "_vendor", "third_party", "third-party", "thirdparty", "3rdparty",
    "node_modules", "bower_components", "site-packages",
})
LOCKFILES = frozenset({
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb",
    "Cargo.lock", "poetry.lock", "uv.lock", "Pipfile.lock", "pdm.lock", "composer.lock",
    "Gemfile.lock", "go.sum", "flake.lock", "conda-lock.yml",
})
# Source maps of scripts, styles and TypeScript's declarations (`index.d.ts.map`, `x.mjs.map`).
_MINIFIED_NAME = re.compile(
    r"[.-]min\.(?:js|mjs|css)$|\.bundle\.js$|\.(?:[cm]?[jt]sx?|css)\.map$")
_GENERATED_NAME = re.compile(
    r"(?:_pb2(?:_grpc)?\.pyi?|\.pb\.(?:go|h|cc)|\.pb\.gw\.go|_grpc\.pb\.go|\.g\.dart"
    r"|\.generated\.\w+|_generated\.\w+)$")
# Markers tools put at the top of what they write (Go's convention, Facebook's @generated).
_GENERATED_MARK = re.compile(
    r"Code generated .{0,200}DO NOT EDIT|@generated\b|\bauto-?generated\b.{0,80}\b(?:do not|don't)"
    r" (?:edit|modify)|\bDO NOT EDIT\b.{0,40}\bgenerated\b|\bthis file (?:is|was) (?:auto-?)?"
    r"generated\b", re.I)
_HEAD_CHARS = 2000
MAX_LINE_CHARS = 10_000  # one line this long is machine-written
MAX_MEAN_LINE = 300  # nor do people write files whose lines average this


def is_vendored_dir(name: str) -> bool:
    """Whether a directory holds someone else's code (for directory walks: prune it)."""
    return name in VENDORED_DIRS


def is_vendored_path(path: str) -> bool:
    """Whether any directory on the path is a vendored one."""
    parts = path.replace("\\", "/").split("/")[:-1]
    return any(part in VENDORED_DIRS for part in parts)


# What packaging tools write: PKG-INFO (the project's metadata with its README pasted in) and
# the files of *.egg-info / *.dist-info folders, copies of what the project already holds.
_BUILD_METADATA = re.compile(r"(?:^|/)(?:PKG-INFO$|[^/]+\.(?:egg|dist)-info/)")


def is_build_metadata(path: str) -> bool:
    """Whether a file is packaging metadata written by a build tool (see _BUILD_METADATA)."""
    return _BUILD_METADATA.search(path.replace("\\", "/")) is not None


def is_generated_or_minified(path: str, text: str) -> str | None:
    """Why a file should stay out of the index, or None: machine-written text crowds out the
    code people ask about, and its chunks are noise for both BM25 and the vectors."""
    name = os.path.basename(path)
    if "\x00" in text[:8192]:
        return "binary"
    if name in LOCKFILES:
        return "lockfile"
    if is_vendored_path(path):
        return "vendored"
    if is_build_metadata(path):
        return "generated"
    if _MINIFIED_NAME.search(name):
        return "minified"
    if _GENERATED_NAME.search(name):
        return "generated"
    # Every marker says "generat...": a plain substring test spares the regex on most files.
    if "generat" in text[:_HEAD_CHARS].lower() and _GENERATED_MARK.search(text, 0, _HEAD_CHARS):
        return "generated"
    if len(text) > 1000:
        lines = text.count("\n") + 1
        if len(text) / lines > MAX_MEAN_LINE:
            return "minified"
        if len(text) > MAX_LINE_CHARS and max(map(len, text.splitlines())) > MAX_LINE_CHARS:
            return "minified"
    return None


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
