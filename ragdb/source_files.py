"""A source's file as it reads now, for an answer that shows its lines (generate/blocks): the
file re-read where the index was built and checked against the index's sha256, so an answer
never shows lines that are no longer there."""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path

from ragdb.db import Connection, Setting, get_setting
from ragdb.generate.blocks import Definition, Located
from ragdb.generate.prompt import PromptSource
from ragdb.navigate import callers_of
from ragdb.reading import VANISHED, read_text
from ragdb.resources import sql


#: Callers named under a code block (`ragdb callers NAME` lists them all).
BLOCK_CALLERS = 3
#: Functions of one source a block may be about, at most (a chunk packs small ones).
BLOCK_DEFINITIONS = 8


class SourceFiles:
    """`locate` for BlocksAnswerer: each file read once (one instance per answer)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        base = get_setting(conn, Setting.BASE_DIR)
        self.base = Path(base) if base else Path.cwd()
        self._read: dict[str, tuple[str | None, str]] = {}

    def __call__(self, source: PromptSource) -> Located:
        rows = self.conn.execute(sql("block_source"), {
            "path": source.file_path, "first": source.first, "last": source.last}).fetchall()
        if not rows:
            return Located(stale=True, why="is no longer in the index")
        sha256, language, context = (str(value) for value in rows[0])
        if not self.base.is_dir():
            # The index is read away from the files it was built from (a copy, a server):
            # its own text is all there is, and the answer says so.
            return Located(context, None, why=f"was not found ({self.base} is not here)",
                           language=language)
        text, why = self._file(source.file_path, sha256)
        if text is None or text[source.first:source.last] != source.text:
            return Located(context, None, stale=True,
                           why=why or "changed since it was indexed", language=language)
        return self._with_definition(Located(context, text, language=language), source)

    def included(self, including: str, paths: list[str]) -> tuple[str, str, str] | None:
        """The first of `paths` (where a snippet `including` includes may lie) that is
        indexed: its path, its text, read now and as indexed, and its language; None where
        none is, or it changed since (an answer never shows lines not in the file)."""
        if not self.base.is_dir():
            return None
        for path in paths:
            if path == including:
                continue
            for sha256, language in self.conn.execute(sql("snippet_file"), {"path": path}):
                text, _ = self._file(path, str(sha256))
                return (path, text, str(language)) if text is not None else None
        return None

    def _with_definition(self, located: Located, source: PromptSource) -> Located:
        """The functions and methods a source overlaps (sql/block_definition.sql) as lines of
        the file, each with its first BLOCK_CALLERS callers: the block shows the one it is
        about whole when it fits and names its callers."""
        text = located.text
        if text is None:
            return located
        found = []
        rows = self.conn.execute(sql("block_definition"), {
            "path": source.file_path, "first": source.first, "last": source.last,
            "limit": BLOCK_DEFINITIONS}).fetchall()
        for name, qualified, first_char, last_char, start_line in rows:
            first, last = int(str(first_char)), int(str(last_char))
            places, total = callers_of(self.conn, str(qualified), BLOCK_CALLERS,
                                       home=source.file_path)
            line = text.count("\n", 0, first)
            found.append(Definition(
                str(name), line, text.count("\n", 0, max(first, last - 1)),
                tuple(f"{p.path}:{p.line}" for p in places), total,
                start=max(line, int(str(start_line)) - 1)))
        return replace(located, definitions=tuple(found)) if found else located

    def _file(self, path: str, sha256: str) -> tuple[str | None, str]:
        if path not in self._read:
            full = Path(path) if os.path.isabs(path) else self.base / path
            text, raw, reason = read_text(full)
            if text is None:
                why = ("was deleted since it was indexed" if reason == VANISHED
                       else f"cannot be read now ({reason})")
                self._read[path] = (None, why)
            elif hashlib.sha256(raw).hexdigest() != sha256:
                self._read[path] = (None, "changed since it was indexed")
            else:
                self._read[path] = (text, "")
        return self._read[path]
