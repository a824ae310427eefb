"""Code-aware chunking: files cut into ranges of their own text, sized for retrieval.

A chunk is a range [first, last) of the file's text, never rewritten, so a hit can always be
cited by offset. Python is cut along its syntax tree so a function or class stays whole when
it fits (python_chunking); Markdown, reStructuredText and plain text along headings and
paragraphs (prose_chunking); the rules they share in chunk_packing. This module is what the
walk and the index run ask: a file's kind, its cap, the chunker version, and its chunks.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ragdb.chunk_packing import (
    _LINE_SEPS, _NONWS, _PARA, _PROSE_SEPS, Chunk, _chunk_units, _Unit,
)
from ragdb.prose_chunking import (
    asciidoc_units, markdown_units, org_units, paragraph_units, rdoc_units, rst_units,
)
from ragdb.python_chunking import chunk_python


_FILE_KINDS = {".py": "python", ".rst": "rst", ".txt": "text", ".adoc": "asciidoc",
               ".asciidoc": "asciidoc", ".org": "org", ".rdoc": "rdoc"}
# Markdown in all its spellings; MDX (Markdown with JSX and ES module lines) too.
MARKDOWN_SUFFIXES = (".md", ".mdx", ".markdown", ".mkd", ".mkdn", ".mdown", ".mdwn", ".mdtext")
_FILE_KINDS.update({suffix: "markdown" for suffix in MARKDOWN_SUFFIXES})
#: Prose cut along its headings, and all prose (the docs: what the vectors embed by default).
HEADING_KINDS = frozenset({"markdown", "rst", "asciidoc", "org", "rdoc"})
PROSE_FILE_KINDS = HEADING_KINDS | {"text"}
_HEADING_UNITS = {"rst": rst_units, "asciidoc": asciidoc_units, "org": org_units,
                  "rdoc": rdoc_units}


def file_kind(path: str) -> str | None:
    """'python', a prose kind (PROSE_FILE_KINDS) by suffix; None for any other file."""
    return _FILE_KINDS.get(os.path.splitext(path)[1].lower())


def is_mdx(path: str) -> bool:
    """MDX: its `import`/`export` lines and JSX tags are not Markdown headings or prose."""
    return path.lower().endswith(".mdx")


# Prose is chunked at this share of max_chunk_size: a doc section packs more distinct facts per
# character than code does, and smaller prose chunks let both BM25 and the vectors point at
# the right paragraph (measured: hybrid docs recall@5 0.91 -> 0.93; README, Performance).
PROSE_CAP_SHARE = 0.5
# Bump when chunk boundaries change for the same settings: the next run rebuilds everything.
# 4: MDX's import/export blocks are not read for headings.
# 5: Ruby, PHP, C#, Kotlin, Swift, Scala and Lua cut along their syntax tree; `#` comments
#    left out of signatures; AsciiDoc, Org and RDoc cut along their headings; then Elixir,
#    Haskell, OCaml, Zig and Dart along their syntax tree.
# 6: MkDocs' snippet section markers (`# --8<-- [start:name]`) are not Markdown headings.
# 7: a file saved with a UTF-8 byte order mark: its first heading is read past the mark, and
#    its Python parses (it was cut as text).
# 8: a Python file ast refuses (a syntax error, Python 2, newer syntax) is cut along
#    tree-sitter's Python tree; cut as text only when that tree is mostly errors too.
CHUNKER_VERSION = "8"


def chunk_cap(kind: str, max_chunk_size: int) -> int:
    """The largest chunk for a file kind: max_chunk_size for code, half of it for prose."""
    if kind == "python":
        return max_chunk_size
    return max(1, int(max_chunk_size * PROSE_CAP_SHARE))


def chunk_text(text: str, kind: str, max_chunk_size: int = 2000, mdx: bool = False
               ) -> list[Chunk]:
    """Chunks of one file's text, in order of `first`; none longer than max_chunk_size.
    `mdx`: Markdown written as MDX (is_mdx)."""
    if max_chunk_size < 1:
        raise ValueError(f"max_chunk_size must be positive, not {max_chunk_size}")
    if not _NONWS.search(text):
        return []
    if kind == "python":
        return chunk_python(text, max_chunk_size)
    if kind == "markdown":
        return _chunk_units(text, _past_bom(lambda t: markdown_units(t, mdx), text),
                            max_chunk_size, _PROSE_SEPS, _PARA + 1)
    if kind in _HEADING_UNITS:
        return _chunk_units(text, _past_bom(_HEADING_UNITS[kind], text), max_chunk_size,
                            _PROSE_SEPS, _PARA + 1)
    if kind == "text":
        return _chunk_units(text, paragraph_units(text), max_chunk_size, _LINE_SEPS, _PARA + 1)
    raise ValueError(f"unknown file kind {kind!r}")


def _past_bom(units: Callable[[str], list[_Unit]], text: str) -> list[_Unit]:
    """The headings of a text saved with a byte order mark (Windows editors write one), read
    past it: `\ufeff# Title` is a heading. Offsets stay the text's own, the BOM in the first
    unit."""
    if not text.startswith("\ufeff"):
        return units(text)
    found = [(first + 1, last + 1, strength, context, kind)
             for first, last, strength, context, kind in units(text[1:])]
    if found:
        found[0] = (0, *found[0][1:])
    return found
