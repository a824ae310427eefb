"""Tree-sitter parsing for every grammar ragdb reads: the grammar modules, one parser per
grammar and thread, CUDA's noise blanked out, and a time budget per parse. Chunking
(ragdb.syntax_chunking) and definition names (ragdb.definition_names) both read the tree."""

from __future__ import annotations

import importlib
import re
import threading
import time
from functools import lru_cache

import tree_sitter as ts


# grammar -> (module, function returning its language pointer)
GRAMMAR_MODULES: dict[str, tuple[str, str]] = {
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "bash": ("tree_sitter_bash", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "c_sharp": ("tree_sitter_c_sharp", "language"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    "swift": ("tree_sitter_swift", "language"),
    "scala": ("tree_sitter_scala", "language"),
    "lua": ("tree_sitter_lua", "language"),
    "elixir": ("tree_sitter_elixir", "language"),
    "haskell": ("tree_sitter_haskell", "language"),
    "ocaml": ("tree_sitter_ocaml", "language_ocaml"),
    "zig": ("tree_sitter_zig", "language"),
    "dart": ("tree_sitter_dart", "language"),
    # Python is read by its own `ast`; this grammar only for a file ast refuses (a syntax
    # error, Python 2, syntax newer than the running Python): ragdb.python_chunking.
    "python": ("tree_sitter_python", "language"),
}


# Grammars tried in turn: a .h file is as often C++ as C.
GRAMMARS: dict[str, tuple[str, ...]] = {
    "javascript": ("javascript",), "typescript": ("typescript",), "tsx": ("tsx",),
    "go": ("go",), "rust": ("rust",), "java": ("java",), "c": ("c", "cpp"), "cpp": ("cpp",),
    "cuda": ("cpp",), "shell": ("bash",), "ruby": ("ruby",), "php": ("php",),
    "csharp": ("c_sharp",), "kotlin": ("kotlin",), "swift": ("swift",), "scala": ("scala",),
    "lua": ("lua",), "elixir": ("elixir",), "haskell": ("haskell",),
    "ocaml": ("ocaml",), "zig": ("zig",), "dart": ("dart",), "python": ("python",),
}


@lru_cache(maxsize=None)
def grammar_language(grammar: str) -> ts.Language:
    """Imported on first use: each grammar module costs a few milliseconds to load."""
    module, function = GRAMMAR_MODULES[grammar]
    return ts.Language(getattr(importlib.import_module(module), function)())


_local = threading.local()


def parser(grammar: str) -> ts.Parser:
    """One parser per grammar and thread: building one costs more than parsing a small file."""
    parsers: dict[str, ts.Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(grammar)
    if parser is None:
        parser = parsers[grammar] = ts.Parser(grammar_language(grammar))
    return parser


# CUDA's qualifiers and kernel launches are not C++: blanked out (same length, so the same
# offsets) before parsing, or every kernel would be an ERROR node.
# The lookbehind after the leading `__` is `\b` before it: written this way the pattern starts
# with a literal, which the regex engine scans for quickly (3x faster on the vLLM tree).
CUDA_NOISE = re.compile(
    rb"__(?<!\w__)(?:(?:global|device|host|forceinline|noinline|shared|constant|managed"
    rb"|grid_constant)__|launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)|align__\s*\([^()]*\))"
    rb"|<<<(?:[^<>;]|<[^<>;]*>)*>>>")


def blank(m: re.Match[bytes]) -> bytes:
    return re.sub(rb"[^\n]", b" ", m.group())


# A header that says any of these is C++, and is parsed as such first.
# (`using strm.` in a comment and `#include <string.h>` are not.)
_CPP_HINT = re.compile(r"^\s*(?:namespace|template\s*<|class\s+\w"
                       r"|using\s+(?:namespace\s|[\w:]+\s*[=;])|#include\s*<"
                       r"(?:(?:torch|c10|ATen|cuda_runtime|cutlass|cute)[/>.]|(?:vector|string"
                       r"|memory)>)|extern \"C\")|\bstd::", re.M)

MAX_ERROR_SHARE = 0.2  # more of the file than this in ERROR nodes: its tree is not worth cutting


def error_share(root: ts.Node, size: int) -> float:
    """Share of the bytes inside ERROR nodes. Only the branches that hold an error are
    walked (has_error), which costs a tenth of a query over the whole tree."""
    if not root.has_error:
        return 0.0
    if root.type == "ERROR":
        return 1.0
    spans: list[tuple[int, int]] = []
    stack = [root]
    while stack:
        for child in stack.pop().children:
            if child.type == "ERROR":  # errors nested inside lie within its span
                spans.append((child.start_byte, child.end_byte))
            elif child.has_error:
                stack.append(child)
    spans.sort()
    covered, end = 0, 0
    for a, b in spans:
        if b > end:
            covered += b - max(a, end)
            end = b
    return covered / max(size, 1)


@lru_cache(maxsize=1)
def best_tree(text: str, language: str) -> tuple[float, ts.Tree, str, bytes] | None:
    """The tree of the best grammar for the language, with the share of its bytes in ERROR
    nodes; None when every parse ran out of time. The last one is kept: the chunker and the
    index run's symbols (ragdb.tree_symbols) read the same tree."""
    data = text.encode("utf-8", "surrogatepass")
    source = CUDA_NOISE.sub(blank, data) if language in ("cuda", "cpp", "c") else data
    grammars = GRAMMARS[language]
    good_enough = 0.0  # a tree with fewer errors than this ends the search
    if language == "c" and _CPP_HINT.search(text):
        # A header that says it is C++ keeps its C++ tree unless that tree is unusable: the C
        # grammar, slower on C++ and wrong for it, was parsed for nothing on every such header
        # with a stray error (on the vLLM tree the C++ tree won each time).
        grammars = grammars[::-1]
        good_enough = MAX_ERROR_SHARE
    best: tuple[float, ts.Tree, str] | None = None
    for grammar in grammars:
        tree = parse_in_time(grammar, source)
        if tree is None:
            continue
        share = error_share(tree.root_node, len(source))
        if best is None or share < best[0]:
            best = (share, tree, grammar)
        if share <= good_enough:
            break
    if best is None:
        return None
    return best[0], best[1], best[2], data


def parse(text: str, language: str) -> tuple[ts.Tree, str, bytes] | None:
    """The tree of the best grammar for the language; None when it is mostly ERROR nodes (or
    its parse ran out of time)."""
    found = best_tree(text, language)
    if found is None or found[0] > MAX_ERROR_SHARE:
        return None
    return found[1], found[2], found[3]


# A parse's time budget: a fixed part and a part per byte (valid code parses at 1-3 MB/s
# here). Error recovery can grow with the square of the junk it reads: tree-sitter-lua took
# 10 s on 50 KB of bracket soup. Past the budget the file is cut as text.
PARSE_SECONDS = 2.0
PARSE_SECONDS_PER_BYTE = 10e-6
_READ_CHUNK = 1 << 16


def parse_in_time(grammar: str, source: bytes) -> ts.Tree | None:
    """The tree, or None when the parse ran past its budget. The parser reads its input through
    a callback, which ends the input once the budget is spent (the bindings have no timeout):
    on valid code it is called a few times per 64 KiB, on junk every few bytes."""
    deadline = time.perf_counter() + PARSE_SECONDS + PARSE_SECONDS_PER_BYTE * len(source)
    late = False

    def read(offset: int, _point: tuple[int, int]) -> bytes:
        nonlocal late
        if late or time.perf_counter() > deadline:
            late = True
            return b""
        return source[offset:offset + _READ_CHUNK]

    tree = parser(grammar).parse(read)
    return None if late or tree is None else tree
