"""An index run's symbol rows: each file's definitions and references (ragdb.symbols) as rows
of `symbol_defs` and `symbol_refs`, written in the run's transaction, in batches of many files.

Definition ids are given here, from the largest id in the table on (the run holds the index
lock): a reference names the definition enclosing it, and a definition its parent, before any
row is written. A definition's chunk is the one holding its first character.

The rows are stored small (migrations/009_symbols_compact.sql): kinds by id (KIND_IDS), a
definition's qualified name and a use's target by symbol_names id, and a use's name left NULL
where it is its target's last part (the reads take it from the target)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from pathlib import Path

from ragdb.db import Connection, scalar
from ragdb.resources import sql
from ragdb.symbols import KIND_IDS, SYMBOL_LANGUAGES, SYMBOLS_VERSION, FileSymbols, extract


class SymbolRows:
    """Rows waiting to be written, the next definition id, and the qualified names uses
    resolve to (symbol_names), read once when the first file with uses is written."""

    LIMIT = 50_000  # rows held before a batch is written

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.next_id: int | None = None
        self.names: dict[str, int] | None = None
        self.next_name = 1
        self.symbols: list[tuple[Any, ...]] = []
        self.refs: list[tuple[Any, ...]] = []
        self.new_names: list[tuple[int, str]] = []
        self.removed = False  # rows of some file were deleted: names may be left unused

    def write(self, file_id: int, text: str, language: str, path: Path, rel: str,
              chunks: Sequence[tuple[int, int, int]]) -> bool:
        """A new or changed file's rows; False when its parse failed (no rows: the caller
        counts and names it)."""
        if language not in SYMBOL_LANGUAGES:
            return True
        found = extract(text, language, path, rel)
        if found is None:
            return False
        self.add(file_id, found, chunks)
        return True

    def refresh(self, file_id: int, text: str, language: str, path: Path, rel: str) -> bool:
        """An unchanged file whose rows another version of the extraction made (or none:
        an index made before the tables): read again, its chunks kept as they are."""
        self.conn.execute(sql("symbols_file_delete"), {"file_id": file_id})
        self.removed = True
        chunks = [(int(i), int(a), int(b)) for i, a, b in self.conn.execute(
            sql("symbols_file_chunks"), {"file_id": file_id})]
        done = self.write(file_id, text, language, path, rel, chunks)
        self.conn.execute(sql("symbols_file_done"), {"file_id": file_id,
                                                     "version": SYMBOLS_VERSION})
        return done

    def known_names(self) -> dict[str, int]:
        """The qualified names the index holds, by name (read once, then kept up to date)."""
        names = self.names
        if names is None:
            names = self.names = {str(q): int(i) for i, q in self.conn.execute(
                sql("symbol_names_all"))}
            self.next_name = max(names.values(), default=0) + 1
        return names

    def name_id(self, qualified: str) -> int:
        """The id of a qualified name (a definition's, or what a use resolves to), given one
        now if it is new to the index."""
        names = self.known_names()
        found = names.get(qualified)
        if found is None:
            found = names[qualified] = self.next_name
            self.next_name += 1
            self.new_names.append((found, qualified))
        return found

    def add(self, file_id: int, found: FileSymbols,
            chunks: Sequence[tuple[int, int, int]]) -> None:
        """One file's rows; `chunks` are its (id, first, last), in order of first."""
        if not found.symbols and not found.refs:
            return
        if self.next_id is None:
            self.next_id = int(scalar(self.conn, sql("symbols_next_id")))
        base = self.next_id
        name_id = self.name_id
        known = self.known_names().get
        kind_id = KIND_IDS.__getitem__
        starts = [first for _id, first, _last in chunks]
        for n, s in enumerate(found.symbols):
            k = bisect_right(starts, s.first) - 1
            chunk_id = chunks[max(k, 0)][0] if chunks else None
            self.symbols.append((
                base + n, file_id, chunk_id, base + s.parent if s.parent >= 0 else None,
                known(s.qualified) or name_id(s.qualified), kind_id(s.kind), s.first, s.last,
                s.start_line, s.end_line))
        self.next_id = base + len(found.symbols)
        append = self.refs.append
        for r in found.refs:
            target = r.target
            name: str | None = r.name
            if target and name == target.rsplit(".", 1)[-1] and "\0" not in target:
                name = None  # its target's last part (SQL's length() stops at a NUL)
            append((file_id, base + r.enclosing if r.enclosing >= 0 else None, name,
                    (known(target) or name_id(target)) if target else None,
                    name_id(r.alias) if r.alias else None, kind_id(r.kind), r.first, r.line))
        if len(self.symbols) + len(self.refs) >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        """Write what is held."""
        if self.new_names:
            self.conn.executemany(sql("symbol_names_insert"), self.new_names)
        if self.symbols:
            self.conn.executemany(sql("symbols_insert"), self.symbols)
        if self.refs:
            self.conn.executemany(sql("symbol_refs_insert"), self.refs)
        self.new_names = []
        self.symbols = []
        self.refs = []

    def done(self, removed_files: bool) -> None:
        """The run's last rows written; names no use or definition holds any more deleted,
        where some file's rows were."""
        self.flush()
        if self.removed or removed_files:
            self.conn.execute(sql("symbol_names_unused"))
            self.names = None
