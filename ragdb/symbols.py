"""Definitions and references of one source file: what `ragdb definition`, `references`,
`callers`, `callees`, `outline` and `map` read (tables `symbols` and `symbol_refs`).

The index run hands each file it writes to `extract`, which reads the syntax tree the chunker
has just parsed (Python's `ast`, ragdb.python_symbols; tree-sitter for Go, Rust, TypeScript,
JavaScript, C, C++, CUDA and Java, and for a Python file ast refuses, ragdb.tree_symbols) and
returns the file's symbols and references; ragdb.symbol_rows writes them in the same
transaction as the chunks.

A reference is resolved as far as its own file tells (its `target`: the qualified name of
what it names, through the file's imports and aliases, `self`/`this`, package qualifiers);
whether a definition of that name exists anywhere in the index, directly or through the
imports that re-export it, is decided when it is read (ragdb.navigate), so a file's rows never
depend on another file's and an incremental run never leaves them out of step. Qualified
names are dot-separated in every language (`pkg.Type.method`, Rust's `a::b` is `a.b`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

#: Bumped when extraction changes: the next index run re-reads the symbols of every file
#: whose rows were made by another version (files.symbols_version), without re-chunking it.
SYMBOLS_VERSION = 10  # 7: a C body left as loose tokens ends at its own `}`; 8: .d.ts functions;
#: 9: no C definitions inside such a body (`CASE_OP(X) {` read as a function); 10: a Python
#: file ast refuses is read from tree-sitter's tree; Go's and Rust's `_` define nothing

#: Languages with an extractor (files.kind). Other files have no symbols.
SYMBOL_LANGUAGES = frozenset({
    "python", "go", "rust", "typescript", "tsx", "javascript", "c", "cpp", "cuda", "java",
})

#: What a definition is (symbols.kind).
KINDS = ("function", "method", "class", "struct", "interface", "trait", "type", "enum",
         "constant", "variable", "macro", "module", "field", "test")
#: What a use is (symbol_refs.kind).
REF_KINDS = ("call", "import", "type", "attribute", "inherit", "decorator", "macro", "use")
#: How rag.db stores a kind (symbol_defs.kind, symbol_refs.kind): the ids of the rows of
#: symbol_kinds (migrations/009_symbols_compact.sql), a small integer where the word would be
#: repeated on every row. A new kind takes the next id, in a migration too.
KIND_IDS = {kind: n for n, kind in enumerate(dict.fromkeys(KINDS + REF_KINDS), 1)}


@dataclass(slots=True)
class Symbol:
    """A definition. Offsets are str offsets of the file's text, lines 1-based; `parent`
    is the index of the enclosing symbol in the file's list (-1: none)."""

    name: str
    qualified: str
    kind: str
    first: int
    last: int
    start_line: int  # the line of its name
    end_line: int
    parent: int = -1


@dataclass(slots=True)
class Ref:
    """A use of a name: `target` is the qualified name it resolves to as far as its file
    tells ('' when the file cannot tell: `obj.method()` on an object of unknown type);
    `enclosing` the index of the innermost symbol holding it (-1: none); `alias` the
    qualified name a module-level import binds (`pkg.mod.name`), through which other files'
    uses of that name reach the definition (re-exports)."""

    name: str
    target: str
    kind: str
    first: int  # where the name as written starts (it ends len(name) further)
    line: int
    enclosing: int = -1
    alias: str = ""


@dataclass
class FileSymbols:
    symbols: list[Symbol] = field(default_factory=list)
    refs: list[Ref] = field(default_factory=list)


def extract(text: str, language: str, path: Path, rel: str) -> FileSymbols | None:
    """The file's symbols and references; None when its parse failed or ran out of time
    (the caller counts and names it; its chunks are indexed as text). `path` is the file on
    disk (a Python module's package is found by its folders' __init__.py), `rel` its stored
    path (TypeScript and JavaScript modules are named by it)."""
    if language == "python":
        from ragdb.python_symbols import python_symbols

        module, package = python_module(path)
        found = python_symbols(text, module, package, is_test_file(rel))
        if found is not None:
            return found
        # ast refuses it (a syntax error, Python 2, syntax newer than this Python): read from
        # tree-sitter's tree, unless that is mostly errors too (the file is then cut as text).
        from ragdb.tree_symbols import tree_symbols

        return tree_symbols(text, "python", rel, module, package)
    if language in SYMBOL_LANGUAGES:
        from ragdb.tree_symbols import tree_symbols

        return tree_symbols(text, language, rel)
    return FileSymbols()


def python_module(path: Path) -> tuple[str, bool]:
    """A Python file's dotted module name, from the folders above it that hold an
    __init__.py (`vllm/engine/llm.py` -> `vllm.engine.llm`), and whether it is a package's
    __init__.py (its relative imports start from itself)."""
    stem = path.name.rsplit(".", 1)[0]
    package = stem == "__init__"
    parts = [] if package else [stem]
    folder = os.path.dirname(os.path.abspath(path))
    for _ in range(64):
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            break
        parts.append(os.path.basename(folder))
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    if not parts:
        parts = [stem]
    return ".".join(reversed(parts)), package


def is_test_file(rel: str) -> bool:
    """A file of tests by its name (test_x.py, x_test.go, x.test.ts, x_test.py)."""
    name = rel.rsplit("/", 1)[-1]
    stem = name.split(".", 1)[0]
    return (stem.startswith("test_") or stem.endswith("_test") or ".test." in name
            or ".spec." in name)


class ByteOffsets:
    """str offsets of tree-sitter's UTF-8 byte offsets: the same numbers in ASCII text."""

    def __init__(self, text: str, data: bytes) -> None:
        self.pos = int if len(data) == len(text) else self._mapped(text, data)

    @staticmethod
    def _mapped(text: str, data: bytes) -> Callable[[int], int]:
        import numpy as np  # here: a run over ASCII files never loads numpy

        raw = np.frombuffer(data, dtype=np.uint8)
        char_at = np.empty(len(data) + 1, dtype=np.int64)
        char_at[:-1] = np.cumsum((raw & 0xC0) != 0x80) - 1
        char_at[-1] = len(text)
        return char_at.tolist().__getitem__  # type: ignore[no-any-return]
