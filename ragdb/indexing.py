"""Indexing: the files a walk found (ragdb.walking) read, chunked and written as rows in one
transaction; then the vectors brought in step (`update_index`, what `ragdb index` runs)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragdb.chunking import (
    CHUNKER_VERSION, HEADING_KINDS, PROSE_FILE_KINDS, chunk_cap, chunk_text, is_mdx,
)
from ragdb.db import (
    Connection,
    Setting,
    answers_dir,
    bump_generation,
    default_db_path,
    full_text_done,
    get_setting,
    scalar,
    set_setting,
    write_full_text,
    write_transaction,
)
from ragdb.embedder import DEFAULT_MODEL, Embedder, embedder_identity, load_embedder
from ragdb.errors import DiskFullError, RagdbError
from ragdb.file_types import (
    SYNTAX_LANGUAGES, file_language, is_build_metadata, is_generated_or_minified,
)
from ragdb.reading import UNREADABLE, VANISHED, inside, read_text
from ragdb.postgres import PostgresConnection, is_url
from ragdb.resources import SAVED_ANSWERS, cache_dir, models_dir, sql
from ragdb.run_lock import index_lock, index_lock_path
from ragdb.symbol_rows import SymbolRows
from ragdb.symbols import SYMBOLS_VERSION
from ragdb.syntax_chunking import chunk_source
from ragdb.tokenize import TOKENIZER_VERSION, Analyser, analyse_names, defined_names
from ragdb.vectors import (
    VectorReuse, VectorStats, sync_vectors, vector_count, vectors_pending,
)
from ragdb.secret_files import read_for_secrets, secret_by_content, secret_name
from ragdb.walking import (
    SECRETS,
    INCLUDED,
    WalkOptions,
    below_root,
    distinct_roots,
    holds,
    name_ok,
    real_root,
    relative,
    scan_also,
    scan_roots,
    under,
)

MAX_CHUNK_SIZE = 2000
#: The smallest chunk: below it a chunk holds less than a line or two of code (prose is cut at
#: half), so no question finds its answer in one, and a typo (`--max_chunk_size 10`, read as
#: lines or tokens) rebuilt every root into hundreds of thousands of fragments.
MIN_CHUNK_SIZE = 100


def check_chunk_size(max_chunk_size: int) -> None:
    """Refuse a chunk size given outside MIN_CHUNK_SIZE..MAX_CHUNK_SIZE, before anything is
    done. An index an older ragdb built smaller keeps its size on a plain run (index_paths
    takes any from 1)."""
    if not MIN_CHUNK_SIZE <= max_chunk_size <= MAX_CHUNK_SIZE:
        raise RagdbError(f"--max_chunk_size must be between {MIN_CHUNK_SIZE} and "
                         f"{MAX_CHUNK_SIZE} characters, got {max_chunk_size}")


#: Where `ragdb search_dataset` and `answer_dataset` save results by default (relative to the
#: folder they run in): ragdb's output, never its input.
RESULT_DIRS = (Path("data/outputs/answers"), Path("data/outputs/search_results"))


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
    #: out by name alone (EXCLUDED, BINARY, IGNORE_RULES, SECRETS): they are only counted
    #: (a key file known by its content, a SECRETS too, is named).
    skipped_paths: list[tuple[str, str]] = field(default_factory=list)
    parse_fallbacks: int = 0  # source files whose tree was mostly errors: cut as text
    #: Stored paths of those files.
    fallback_paths: list[str] = field(default_factory=list)
    #: Unchanged files whose symbols were read again (made by another version of the
    #: extraction, or before rag.db had symbols), their chunks kept.
    symbols_refreshed: int = 0
    #: Chunks of edited files that kept their vectors (the same text as before: not embedded
    #: again; vectors.VectorReuse).
    vectors_reused: int = 0
    #: Files indexed or unchanged, by language (files.kind).
    languages: dict[str, int] = field(default_factory=dict)
    #: Stored paths in skipped_paths that an earlier run over the same root, with the same
    #: walk options, skipped too, unchanged since: the CLI names them only with --verbose.
    skipped_before: list[str] = field(default_factory=list)

    def skip(self, path: str, reason: str, named: bool = True) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if named:
            self.skipped_paths.append((path, reason))

    @property
    def files_skipped(self) -> int:
        return sum(self.skipped.values())


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
             for r, _walk_options, _last in conn.execute(sql("index_roots_known"))}
    there = {r: path for r, path in there.items() if os.path.exists(path)}  # gone: no double
    for root in roots:
        mine = Path(os.path.realpath(root))
        seen_from_there = Path(os.path.relpath(os.path.abspath(root), built)).as_posix()
        if seen_from_there == relative(root):
            continue  # spelled the same from both folders (../shared): the same rows
        for path in there.values():
            real = Path(os.path.realpath(path))
            if inside(mine, real) or inside(real, mine):
                raise RagdbError(f"{refuse}, where {relative(root)} is {seen_from_there}: "
                                 f"{hint}")
    for recorded in there:
        if not os.path.exists(recorded):
            raise RagdbError(f"{refuse} ({recorded} is there, not here): {hint}")
    db = None if isinstance(conn, PostgresConnection) else conn.filename
    if db and inside(Path(os.path.realpath(db)), Path(os.path.realpath(here))):
        return  # a copy of the project that carries its rag.db: it indexes where it lies
    for recorded, path in there.items():
        # `ragdb index --db ../proj/data/processed/rag.db` from a sibling folder re-indexed
        # the recorded root `.` as the sibling, and removed every file of the project.
        if not os.path.samefile(recorded, path):
            raise RagdbError(f"{refuse} ({recorded} there is {path}; here it is "
                             f"{os.path.abspath(recorded)}): {hint}")


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
    if not 1 <= max_chunk_size <= MAX_CHUNK_SIZE:  # the doors refuse one below MIN_CHUNK_SIZE
        raise RagdbError(f"--max_chunk_size must be between 1 and {MAX_CHUNK_SIZE}")
    started = time.perf_counter()
    started_at = _now()
    roots = distinct_roots(_as_recorded(conn, roots))
    own = ragdb_files(conn)
    scan = scan_roots(roots, options, own)
    mine = [relative(root) for root in roots]
    with write_transaction(conn):
        check_working_folder(conn, roots)
        known_roots = list(conn.execute(sql("index_roots_known")))
        recorded = {str(path): str(walk) for path, walk, _last in known_roots}
        seen_before = _seen_before(known_roots, options, mine)
        others = [path for path in recorded if path not in mine]
        full_rebuild = _needs_rebuild(conn, max_chunk_size)
        rebuilt = others if full_rebuild else []
        if rebuilt:
            # A rebuild clears every row: the other recorded roots are walked again too, each
            # with the options of its last run, or their rows would be gone.
            scan_also(scan, rebuilt, recorded, own)
            mine, others = mine + rebuilt, []
        files = scan.files
        if on_files:
            on_files(len(files))
        stats = IndexStats(files_seen=len(files) + len(scan.skipped) + len(scan.left_out),
                           full_rebuild=full_rebuild)
        for path, reason in scan.skipped:
            stats.skip(relative(path), reason)
            if seen_before(path, relative(path)):
                stats.skipped_before.append(relative(path))
        for path, reason in scan.left_out:
            stats.skip(relative(path), reason, named=False)
        languages = stats.languages
        kept = [relative(d) for d in scan.unreadable_dirs]
        if stats.full_rebuild:
            conn.execute(sql("index_clear"))
        known = {path: (file_id, sha, symbols) for file_id, path, sha, symbols
                 in conn.execute(sql("index_files_known"))}
        seen: set[str] = set()
        held: set[str] = set()  # the files this run leaves in the index (indexed, unchanged)
        purge = _Purge(conn)
        fts = _FullText(conn)
        symbol_rows = SymbolRows(conn)
        reuse = VectorReuse(conn, enabled=not isinstance(conn, PostgresConnection))
        for path in files:
            rel = relative(path)
            seen.add(rel)
            text, raw, reason = read_text(path)
            digest = hashlib.sha256(raw).hexdigest() if text is not None else ""
            old = known.get(rel)
            if text is not None and path not in scan.included:
                if old is None or old[1] != digest:
                    # Machine-written files crowd out the code people ask about. Judged by name
                    # and content (new or changed files only): vendored folders were left out
                    # by the walk.
                    reason = (is_generated_or_minified(path.name, text)
                              or ("generated" if is_build_metadata(rel) else ""))
                # A key file with no telling name (deploy_key, key.txt, a service account's
                # JSON), judged on every run: one indexed before this rule loses its rows.
                # Reached through a walk, a root, a symlink or --watch alike, as all read here.
                if not reason and secret_by_content(path, text):
                    reason = SECRETS
                if reason:
                    text = None
            if text is None:
                stats.skip(rel, reason, named=reason != VANISHED)
                if rel in known and reason != UNREADABLE:  # unreadable: keep what it had
                    purge.check(known[rel][0], rel, reason == SECRETS)
                    conn.execute(sql("index_file_delete"), {"file_id": known[rel][0]})
                    stats.files_removed += 1
                elif seen_before(path, rel):
                    stats.skipped_before.append(rel)
            else:
                kind = file_language(path.name, text)
                languages[kind] = languages.get(kind, 0) + 1
                held.add(rel)
                if old is not None and old[1] == digest:
                    stats.files_unchanged += 1
                    if old[2] != SYMBOLS_VERSION:
                        stats.symbols_refreshed += 1
                        if not symbol_rows.refresh(old[0], text, kind, path, rel):
                            stats.parse_fallbacks += 1
                            stats.fallback_paths.append(rel)
                else:
                    reusable = reuse.before(rel) if old is not None else {}
                    if old is not None:
                        purge.check(old[0], rel)
                        conn.execute(sql("index_file_delete"), {"file_id": old[0]})
                    written, fell_back = _write_file(
                        conn, rel, path, text, len(raw), digest, max_chunk_size, fts, kind,
                        below_root(rel, [*mine, *others]), symbol_rows,
                    )
                    reuse.after(rel, reusable)
                    stats.chunks_written += written
                    if fell_back:
                        stats.parse_fallbacks += 1
                        stats.fallback_paths.append(rel)
                    stats.files_indexed += 1
            if progress:
                progress(1)
        fts.flush()
        for rel, (file_id, _sha, _symbols) in known.items():
            if rel in seen or not under(rel, mine) or under(rel, kept):
                continue
            if under(rel, others) and os.path.lexists(rel):
                continue  # another root holds it too (a subfolder this walk ignores): its own
            purge.check(file_id, rel)
            conn.execute(sql("index_file_delete"), {"file_id": file_id})
            stats.files_removed += 1
        if known and (stats.files_indexed or stats.files_removed):
            conn.execute(sql("vectors_orphans_delete"))
        symbol_rows.done(bool(known) and bool(stats.files_indexed or stats.files_removed))
        set_setting(conn, Setting.MAX_CHUNK_SIZE, str(max_chunk_size))
        set_setting(conn, Setting.TOKENIZER, TOKENIZER_VERSION)
        set_setting(conn, Setting.CHUNKER, CHUNKER_VERSION)
        if name_ok(os.getcwd()):
            set_setting(conn, Setting.BASE_DIR, os.getcwd())  # check_working_folder
        # A root's last run is when its walk began: a file changed after that is new to it.
        for root in roots:
            rel = relative(root)
            if rel not in recorded and rel not in held and root.is_file():
                # A file named as a root and skipped (`ragdb index pkg.tgz`: binary): no
                # root of 0 files that every later run walks again.
                continue
            conn.execute(sql("roots_touch"), {"path": rel, "now": started_at,
                                              "options": options.to_json()})
        for other in rebuilt:
            conn.execute(sql("roots_touch"), {"path": other, "now": started_at,
                                              "options": recorded[other]})
        if stats.symbols_refreshed and not (stats.files_indexed or stats.files_removed):
            bump_generation(conn)  # only symbols changed
        purge.done()
        if stats.files_indexed or stats.files_removed or stats.full_rebuild:
            full_text_done(conn)
            conn.execute(sql("index_common_terms"))
            bump_generation(conn)
        stats.vectors_reused = reuse.reused
        stats.chunks_total = int(scalar(conn, "SELECT count(*) FROM chunks"))
        stats.seconds = time.perf_counter() - started
        conn.execute(
            sql("index_run_insert"),
            {
                "started_at": started_at,
                "finished_at": _now(),
                "roots": json.dumps([relative(r) for r in roots]),
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


def secrets_held(conn: Connection) -> list[str]:
    """The stored paths of the files this index holds that the rules now leave out as secrets
    (by name, or by what their chunks hold: secret_by_content), as an older ragdb indexed
    them; the next `ragdb index` removes them. A file its root's recorded --include names was
    let in by its user and is not counted. `ragdb copy` refuses to carry one to a server."""
    base = get_setting(conn, Setting.BASE_DIR) or os.getcwd()
    roots = [(str(path), WalkOptions.from_json(str(walk)).under(os.path.join(base, str(path))))
             for path, walk, _last in conn.execute(sql("index_roots_known")).fetchall()]
    held = []
    for file_id, path, _sha, _version in conn.execute(sql("index_files_known")).fetchall():
        path = str(path)
        name = path.rsplit("/", 1)[-1]
        if any(holds(root, path) and options.verdict(
                name, name if path == root else below_root(path, [root])) == INCLUDED
               for root, options in roots):
            continue
        # Under the index's base folder, not the current one: a symlink is judged by its
        # target's name too, whichever folder the command runs from.
        full = Path(base, path)
        if secret_name(name) or ((read_for_secrets(name) or full.is_symlink())
                                 and secret_by_content(full, "\n".join(
                                     str(row[0]) for row in conn.execute(
                                         sql("index_file_texts"), {"file_id": file_id})))):
            held.append(path)
    return sorted(held)


def refuse_held_secrets(conn: Connection, shown: str, outcome: str) -> None:
    """Refuse (one line ending in `outcome`) to copy or serve an index that holds files the
    rules now leave out as secrets (secrets_held): `ragdb index` removes them first."""
    held = secrets_held(conn)
    if held:
        named = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
        raise RagdbError(f"{shown} holds {len(held)} files that may hold secrets ({named}), "
                         f"indexed by an older ragdb: run `ragdb index` first, which removes "
                         f"them; {outcome}")


class _Purge:
    """Whether a run removed the rows of a secret (a file now skipped as one, or whose chunks
    held one as secret_files.secret_by_content judges it: an --include let it in, or a ragdb
    before the rule did): rag.db then rebuilds its full-text index without the secret's
    terms, which FTS5 would keep in its segments (deleted rows' bytes: PRAGMA secure_delete,
    db.connect). PostgreSQL: not a file a server shares; nothing to do."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.enabled = not isinstance(conn, PostgresConnection)
        self.needed = False

    def check(self, file_id: int, rel: str, secret: bool = False) -> None:
        """Before file `file_id` (stored as `rel`) loses its rows."""
        if not self.enabled or self.needed:
            return
        if secret or secret_name(os.path.basename(rel)):
            self.needed = True
            return
        text = "\n".join(str(row[0]) for row in self.conn.execute(
            sql("index_file_texts"), {"file_id": file_id}))
        self.needed = secret_by_content(Path(rel), text)

    def done(self) -> None:
        if self.needed:
            self.conn.execute(sql("index_fts_optimize"))


def _as_recorded(conn: Connection, roots: Sequence[Path]) -> list[Path]:
    """Each root, spelled from the recorded root that holds its folder under another name (a
    symlink to it, `../proj` from inside proj): its files keep the names rag.db stores them
    under instead of being stored a second time. Only where the index was built from this
    folder (elsewhere, recorded paths name other places; check_working_folder)."""
    built = get_setting(conn, Setting.BASE_DIR)
    if built and built != os.getcwd():
        return list(roots)
    recorded = {real_root(Path(str(path))): str(path)
                for path, _walk, _last in conn.execute(sql("index_roots_known"))
                if os.path.exists(str(path))}
    spelled = []
    for root in roots:
        real = real_root(root)
        holders = [top for top in recorded if inside(Path(real), Path(top))]
        if not holders or relative(root) in recorded.values():
            spelled.append(root)
            continue
        top = max(holders, key=len)  # the deepest: its own rows and options
        spelled.append(Path(recorded[top]) / os.path.relpath(real, top))
    return spelled


def ragdb_files(conn: Connection) -> frozenset[str]:
    """ragdb's own files and folders, by real path, which no walk reads wherever they lie (a
    root of `.` holds data/processed/rag.db, its -wal and its lock): the database with its
    sidecars and index lock, the models folder, ragdb's cache folder and the folders results
    are saved in (`ragdb answer`'s beside rag.db, the dataset commands' defaults). The index
    a command here uses without --db is ragdb's too, and the project's data/processed/rag.db
    when RAGDB_DB names another: a run into another index never reads it, nor the answers
    saved beside it."""
    paths = [models_dir(), cache_dir(), *RESULT_DIRS]
    databases = [str(default_db_path()), str(default_db_path(env=False))]
    if not isinstance(conn, PostgresConnection) and conn.filename:
        databases.append(conn.filename)
    for database in databases:
        if is_url(database):
            continue
        for db in (database, os.path.realpath(database)):
            paths += [Path(db + suffix) for suffix in ("", "-wal", "-shm", "-journal")]
        paths += [index_lock_path(database), answers_dir(Path(database)),
                  Path(database).parent / SAVED_ANSWERS]
    return frozenset(os.path.realpath(path) for path in paths)


def _seen_before(known_roots: Sequence[tuple[Any, ...]], options: WalkOptions,
                 mine: Sequence[str]) -> Callable[[Path, str], bool]:
    """Whether an earlier run skipped a file already (and said so): a root of this run it lies
    under was walked before with these options, and the file has not changed since that walk
    began (its ctime: written, renamed, chmod-ed or linked afresh is new). A `ragdb index`
    that changed nothing, or a `--watch` batch, then names only what is new."""
    since: dict[str, float] = {}
    for path, walk, last in known_roots:
        if str(path) in mine and WalkOptions.from_json(str(walk)) == options:
            try:
                since[str(path)] = datetime.fromisoformat(str(last)).timestamp()
            except ValueError:
                continue
    if not since:
        return lambda _path, _rel: False

    def seen(path: Path, rel: str) -> bool:
        try:
            changed = os.lstat(path).st_ctime
        except (OSError, ValueError):
            return False
        return any(holds(root, rel) and changed < start for root, start in since.items())
    return seen


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
    indexed_path: str,
    symbol_rows: SymbolRows,
) -> tuple[int, bool]:
    """Write one file's rows, its symbols included; (chunks written, whether its parse failed
    so it was cut as text and has no symbols). The full-text path column holds
    `indexed_path`, the path below its root (below_root).

    files.kind is the file's language (file_language): Python and prose are cut by
    ragdb.chunking, the rest by ragdb.syntax_chunking (whole code cap for languages with a
    syntax tree, the prose share for configuration and other text)."""
    file_id: int = conn.execute(
        sql("index_file_insert"),
        {
            "path": rel,
            "sha256": digest,
            "size": size,
            "kind": kind,
            "n_chars": len(text),
            "indexed_at": _now(),
            "symbols_version": SYMBOLS_VERSION,
        },
    ).fetchall()[0][0]  # type: ignore[assignment]
    fell_back = False
    if kind in _CHUNKING_KINDS:
        chunks = chunk_text(text, kind, chunk_cap(kind, max_chunk_size),
                            mdx=kind == "markdown" and is_mdx(rel))
    else:
        cap = max_chunk_size if kind in SYNTAX_LANGUAGES else chunk_cap(kind, max_chunk_size)
        chunks, fell_back = chunk_source(text, kind, cap)
    if not chunks:
        return 0, not symbol_rows.write(file_id, text, kind, path, rel, []) or fell_back
    analyse = fts.analyse
    path_terms = analyse(indexed_path)
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
    ids = [int(row[0]) for row in conn.executemany(sql("index_chunk_insert"), rows)]
    fts.add((chunk_id, path_terms, _context_terms(analyse, row[6], row[7], kind, chunk.names),
             analyse(row[7]))
            for chunk_id, row, chunk in zip(ids, rows, chunks))
    # A tree with too many errors to cut along still holds definitions: they are read (a
    # parse that ran out of time has none).
    read = symbol_rows.write(file_id, text, kind, path, rel,
                             [(i, row[1], row[2]) for i, row in zip(ids, rows)])
    return len(chunks), fell_back or not read


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


_CHUNKING_KINDS = frozenset({"python"}) | PROSE_FILE_KINDS


def _context_terms(analyse: Callable[[str], str], context: str, body: str, kind: str,
                   names: Sequence[str] = ()) -> str:
    """The context column: the enclosing signatures or headings, then the joined names of the
    definitions the chunk holds (the syntax tree's, else tokenize.defined_names); prose: the
    titles of the further sections it holds, analysed as its heading path is."""
    if kind in HEADING_KINDS:
        return f"{analyse(context)} {analyse(' '.join(names))}".strip()
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

    One run at a time per rag.db (ragdb.run_lock.index_lock, whichever door it came through): a
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
    try:
        return stats, _update_vectors(conn, embedder_name, embedder, on_embedded)
    except DiskFullError:
        # The rows were committed before the vectors began: say so, not "nothing was kept".
        try:
            embedded = f", {vector_count(conn)} of them with vectors so far"
        except Exception:  # the count is a courtesy: the message must still come out
            embedded = ""
        raise DiskFullError(
            f"the disk is full while embedding: this run's files and chunks were kept in "
            f"{conn.filename} ({stats.files_indexed} files indexed, {stats.chunks_total} "
            f"chunks in the index{embedded}); lexical search works, and once some space is "
            "free `ragdb index` finishes the vectors") from None


def _update_vectors(conn: Connection, embedder_name: str | None, embedder: Embedder | None,
                    on_embedded: Callable[[int, int], None] | None) -> VectorStats:
    """The vectors brought in step with the committed chunks, batch by batch."""
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
    return vstats
