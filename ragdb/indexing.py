"""Indexing: walk the roots, read files, chunk them and write the rows in one transaction;
then bring the vectors in step (`update_index`, what `ragdb index` runs)."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import apsw
import pathspec

from ragdb.chunking import CHUNKER_VERSION, chunk_cap, chunk_text, file_kind
from ragdb.db import Setting, bump_generation, get_setting, scalar, set_setting, write_transaction
from ragdb.embedder import DEFAULT_MODEL, Embedder, embedder_identity, load_embedder
from ragdb.errors import RagdbError
from ragdb.resources import sql
from ragdb.syntax_chunking import (
    SYNTAX_LANGUAGES,
    chunk_source,
    is_generated_or_minified,
    is_vendored_dir,
    language_for,
)
from ragdb.tokenize import TOKENIZER_VERSION, analyse
from ragdb.vectors import VectorStats, sync_vectors, vector_count, vectors_pending

DEFAULT_INCLUDE: tuple[str, ...] = ()  # empty: every language ragdb knows (language_of)
#: What `--include` used to default to: Python and prose only (the benchmarks compare with it).
PYTHON_AND_DOCS = ("*.py", "*.md", "*.txt", "*.rst")
MAX_CHUNK_SIZE = 2000
MAX_FILE_BYTES = 4 * 1024 * 1024
_SKIP_DIRS = frozenset({"__pycache__", "node_modules", ".git", ".hg", ".svn", ".venv", ".tox"})


def language_of(path: str) -> str | None:
    """The language a file is indexed as (stored in files.kind): Python and prose by
    ragdb.chunking, every other language by ragdb.syntax_chunking; None for unknown files."""
    return language_for(path) or file_kind(path)


@dataclass(frozen=True)
class WalkOptions:
    """Which files a walk yields besides the language rule."""

    include: tuple[str, ...] = DEFAULT_INCLUDE  # globs on the file name; empty: known languages
    ignore: bool = True  # honour .gitignore files, .git/info/exclude and their ! negations
    hidden: bool = False  # walk into folders whose name starts with a dot

    def to_json(self) -> str:
        return json.dumps({"include": list(self.include), "ignore": self.ignore,
                           "hidden": self.hidden})

    @classmethod
    def from_json(cls, text: str) -> "WalkOptions":
        raw = json.loads(text or "{}")
        return cls(include=tuple(raw.get("include", DEFAULT_INCLUDE)),
                   ignore=bool(raw.get("ignore", True)), hidden=bool(raw.get("hidden", False)))


@dataclass
class IndexStats:
    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    chunks_written: int = 0
    chunks_total: int = 0
    seconds: float = 0.0
    full_rebuild: bool = False
    skipped: dict[str, int] = field(default_factory=dict)
    parse_fallbacks: int = 0  # source files whose tree was mostly errors: cut as text

    @property
    def files_skipped(self) -> int:
        return sum(self.skipped.values())


# --- ignore rules ---------------------------------------------------------------------------

# (the folder the patterns are relative to, with a trailing slash; its spec)
_Rules = list[tuple[str, pathspec.GitIgnoreSpec]]


def _spec_from(path: Path) -> pathspec.GitIgnoreSpec | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if len(spec) else None


def _folder_rules(folder: Path, is_repo_top: bool) -> _Rules:
    """The rules a folder adds: its .gitignore, and .git/info/exclude at a repository's top."""
    rules: _Rules = []
    base = str(folder).rstrip("/") + "/"
    if is_repo_top:
        exclude = _spec_from(folder / ".git" / "info" / "exclude")
        if exclude is not None:
            rules.append((base, exclude))
    spec = _spec_from(folder / ".gitignore")
    if spec is not None:
        rules.append((base, spec))
    return rules


def _ancestor_rules(root: Path) -> _Rules:
    """Rules of the git repository a root lies inside, from its top down to the root's parent
    (a root that is a subfolder of a repository obeys the repository's .gitignore files).

    A root the repository itself ignores (data/raw in a project that ignores data/) was asked
    for by name: the repository's rules are then left out, its own .gitignore files still count.
    """
    chain = [root, *root.parents]
    for depth, candidate in enumerate(chain):
        if (candidate / ".git").exists():
            rules: _Rules = []
            for i in range(depth, 0, -1):  # the repository's top, then down to the root's parent
                rules += _folder_rules(chain[i], is_repo_top=i == depth)
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
        result = spec.check_file(rel + "/" if is_dir else rel)
        if result.include is not None:
            verdict = result.include
    return verdict


def _is_package(folder: str) -> bool:
    """A vendored folder the project imports as its own Python package (vllm/third_party with
    its __init__.py) is code the project ships and calls: it stays in the index."""
    return os.path.isfile(os.path.join(folder, "__init__.py"))


def _walk(root: Path, options: WalkOptions = WalkOptions()) -> Iterator[Path]:
    """Files under a root (or the root itself when it is a file), in a stable order."""
    if root.is_file():
        yield root
        return
    base = Path(os.path.abspath(root))
    inherited = _ancestor_rules(base) if options.ignore else []
    rules_at: dict[str, _Rules] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        folder = Path(dirpath)
        rules = rules_at.pop(dirpath, inherited)
        if options.ignore:
            rules = rules + _folder_rules(folder, is_repo_top=(folder / ".git").is_dir())
        kept = []
        for d in sorted(dirnames):
            if d in _SKIP_DIRS or (d.startswith(".") and not options.hidden):
                continue
            if is_vendored_dir(d) and not _is_package(os.path.join(dirpath, d)):
                continue
            if rules and _ignored(rules, os.path.join(dirpath, d), is_dir=True):
                continue
            kept.append(d)
            rules_at[os.path.join(dirpath, d)] = rules
        dirnames[:] = kept
        out = root / folder.relative_to(base)
        for name in sorted(filenames):
            if options.include:
                if not any(fnmatch.fnmatch(name, pattern) for pattern in options.include):
                    continue
            elif language_of(name) is None:
                continue
            if rules and _ignored(rules, os.path.join(dirpath, name), is_dir=False):
                continue
            yield out / name


def _relative(path: Path) -> str:
    """The stored path: relative to the current directory, as the user typed the corpus root."""
    return Path(os.path.relpath(path)).as_posix()


def stored_path(path: Path) -> str:
    """How rag.db names a file or root: relative to the current directory, '/'-separated."""
    return _relative(path)


def collect_files(roots: Sequence[Path], options: WalkOptions = WalkOptions()) -> list[Path]:
    """Every file to consider, checked up front so a bad root fails before anything changes."""
    files: list[Path] = []
    for root in roots:
        if not root.exists():
            raise RagdbError(f"cannot index {root}: no such file or directory")
        if not os.access(root, os.R_OK) or (root.is_dir() and not os.access(root, os.X_OK)):
            raise RagdbError(f"cannot index {root}: permission denied")
        files.extend(_walk(root, options))
    return sorted(set(files))


def _root_prefixes(roots: Sequence[Path]) -> list[str]:
    prefixes = []
    for root in roots:
        rel = _relative(root)
        prefixes.append(rel if root.is_file() else ("" if rel == "." else rel.rstrip("/") + "/"))
    return prefixes


def _under(path: str, prefixes: Sequence[str]) -> bool:
    """Whether a stored path lies under one of this run's roots ("" is the current directory)."""
    return any(p == "" or path == p or path.startswith(p) for p in prefixes)


def _read_text(path: Path) -> tuple[str | None, bytes, str]:
    """(text, raw bytes, reason it was skipped or '')."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return None, b"", "too large"
        raw = path.read_bytes()
    except OSError:
        return None, b"", "unreadable"
    if b"\x00" in raw[:8192]:
        return None, raw, "binary"
    try:
        return raw.decode("utf-8"), raw, ""
    except UnicodeDecodeError:
        return None, raw, "not UTF-8"


def _line_starts(text: str) -> list[int]:
    starts = [0]
    find = text.find
    pos = find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    return starts


def index_paths(
    conn: apsw.Connection,
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
    files = collect_files(roots, options)
    if on_files:
        on_files(len(files))
    stats = IndexStats(files_seen=len(files))
    prefixes = _root_prefixes(roots)
    with write_transaction(conn):
        stats.full_rebuild = _needs_rebuild(conn, max_chunk_size)
        if stats.full_rebuild:
            conn.execute(sql("index_clear"))
        known = {
            path: (file_id, sha) for file_id, path, sha in conn.execute(sql("index_files_known"))
        }
        seen: set[str] = set()
        for path in files:
            rel = _relative(path)
            seen.add(rel)
            text, raw, reason = _read_text(path)
            if text is not None:
                # Machine-written files crowd out the code people ask about. Judged by name and
                # content: vendored folders were already left out by the walk.
                reason = is_generated_or_minified(path.name, text) or ""
                if reason:
                    text = None
            if text is None:
                stats.skipped[reason] = stats.skipped.get(reason, 0) + 1
                if rel in known:
                    conn.execute(sql("index_file_delete"), {"file_id": known[rel][0]})
                    stats.files_removed += 1
            else:
                digest = hashlib.sha256(raw).hexdigest()
                old = known.get(rel)
                if old is not None and old[1] == digest:
                    stats.files_unchanged += 1
                else:
                    if old is not None:
                        conn.execute(sql("index_file_delete"), {"file_id": old[0]})
                    written, fell_back = _write_file(
                        conn, rel, path, text, len(raw), digest, max_chunk_size
                    )
                    stats.chunks_written += written
                    stats.parse_fallbacks += fell_back
                    stats.files_indexed += 1
            if progress:
                progress(1)
        for rel, (file_id, _sha) in known.items():
            if rel not in seen and _under(rel, prefixes):
                conn.execute(sql("index_file_delete"), {"file_id": file_id})
                stats.files_removed += 1
        if known and (stats.files_indexed or stats.files_removed):
            conn.execute(sql("vectors_orphans_delete"))
        set_setting(conn, Setting.MAX_CHUNK_SIZE, str(max_chunk_size))
        set_setting(conn, Setting.TOKENIZER, TOKENIZER_VERSION)
        set_setting(conn, Setting.CHUNKER, CHUNKER_VERSION)
        now = _now()
        for root in roots:
            conn.execute(sql("roots_touch"), {"path": _relative(root), "now": now,
                                              "options": options.to_json()})
        if stats.files_indexed or stats.files_removed or stats.full_rebuild:
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


def _needs_rebuild(conn: apsw.Connection, max_chunk_size: int) -> bool:
    """Chunk boundaries and analysed text depend on these, so a change invalidates every row."""
    stored = [get_setting(conn, key) for key in (
        Setting.MAX_CHUNK_SIZE, Setting.TOKENIZER, Setting.CHUNKER)]
    if stored == [None, None, None]:
        return False
    return stored != [str(max_chunk_size), TOKENIZER_VERSION, CHUNKER_VERSION]


def _write_file(
    conn: apsw.Connection,
    rel: str,
    path: Path,
    text: str,
    size: int,
    digest: str,
    max_chunk_size: int,
) -> tuple[int, bool]:
    """Write one file's rows; (chunks written, whether its parse failed so it was cut as text).

    files.kind is the file's language: Python and prose are cut by ragdb.chunking, the rest
    by ragdb.syntax_chunking (whole code cap for languages with a syntax tree, the prose share
    for configuration and other text)."""
    kind = language_of(path.name) or "text"
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
        chunks = chunk_text(text, kind, chunk_cap(kind, max_chunk_size))
    else:
        cap = max_chunk_size if kind in SYNTAX_LANGUAGES else chunk_cap(kind, max_chunk_size)
        chunks, fell_back = chunk_source(text, kind, cap)
    if not chunks:
        return 0, fell_back
    starts = _line_starts(text)
    path_terms = analyse(rel)
    insert_chunk = sql("index_chunk_insert")
    insert_fts = sql("index_fts_insert")
    for chunk in chunks:
        body = text[chunk.first:chunk.last]
        chunk_id = _insert_returning_rowid(
            conn,
            insert_chunk,
            {
                "file_id": file_id,
                "first_char": chunk.first,
                "last_char": chunk.last,
                "start_line": bisect_right(starts, chunk.first),
                "end_line": bisect_right(starts, max(chunk.first, chunk.last - 1)),
                "kind": chunk.kind,
                "context": chunk.context,
                "text": body,
            },
        )
        conn.execute(
            insert_fts,
            {
                "chunk_id": chunk_id,
                "path": path_terms,
                "context": analyse(chunk.context),
                "body": analyse(body),
            },
        )
    return len(chunks), fell_back


_CHUNKING_KINDS = frozenset({"python", "markdown", "rst", "text"})


def _insert_returning_rowid(conn: apsw.Connection, statement: str, params: dict) -> int:
    conn.execute(statement, params)
    return int(conn.last_insert_rowid())


def update_index(
    conn: apsw.Connection,
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
) -> tuple[IndexStats, VectorStats | None]:
    """What `ragdb index` does: files -> chunks -> rows in one transaction, then vectors.

    The vector step commits per batch after the rows are in, so a run killed while embedding
    keeps its chunks and the next run embeds only what is missing. `embedder_name` None means
    the one this index was built with (settings 'embedder_name'), else the default model;
    `embedder`, when given, is that model already loaded (the server keeps one) and the name
    recorded is still `embedder_name`, so later queries load the model that made the vectors.
    """
    stats = index_paths(conn, roots, max_chunk_size=max_chunk_size, options=options,
                        progress=progress, on_files=on_files)
    if not vectors:
        return stats, None
    name = embedder_name or get_setting(conn, Setting.EMBEDDER_NAME) or DEFAULT_MODEL
    identity = embedder.identity if embedder is not None else embedder_identity(name)
    if vectors_pending(conn, identity):
        model = embedder if embedder is not None else load_embedder(name)
        vstats = sync_vectors(conn, model, progress=on_embedded)
    else:  # nothing to embed: no model is loaded
        vstats = VectorStats(total=vector_count(conn))
    if vstats.embedded or vstats.removed or get_setting(conn, Setting.EMBEDDER_NAME) != name:
        with write_transaction(conn):
            set_setting(conn, Setting.EMBEDDER_NAME, name)
            if vstats.embedded or vstats.removed:
                bump_generation(conn)
    return stats, vstats
