"""Vectors: which chunks get one, the text each is embedded as, and keeping `chunk_vectors`
in step with `chunks`.

Vectors are stored as int8 in a sqlite-vec vec0 table; `settings('embedder')` records which
embedder made them so that a different one re-embeds instead of mixing incomparable vectors.
"""

from __future__ import annotations

import fnmatch
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ragdb.db import (
    Connection,
    Setting,
    bump_vectors_version,
    get_setting,
    scalar,
    set_setting,
    write_transaction,
)
from ragdb.embedder import DEFAULT_BATCH_SIZE, DEFAULT_MAX_LENGTH, VECTOR_DIM, Embedder
from ragdb.errors import RagdbError
from ragdb.resources import sql
from ragdb.chunking import PROSE_FILE_KINDS
from ragdb.file_types import SYNTAX_LANGUAGES

if TYPE_CHECKING:  # numpy is imported where vectors are made: a no-op index run needs none
    import numpy as np

# --- What represents a chunk, and which chunks get a vector ---------------------------------

CODE_KINDS = frozenset({"python", "module", "function", "class", "statements"})
_SKIP_LINE = re.compile(r"^(# SPDX-|#!|# -\*-)|^[\W_]*$")
_IMPORT = re.compile(r"^(from\s+\S+\s+)?import\s")


def _short_path(path: str) -> str:
    """The last three parts: `vllm/lora/models.py` says more than the corpus prefix."""
    return "/".join(Path(path).parts[-3:])


def _code_lines(text: str) -> Iterator[str]:
    """Lines that carry meaning: no licence headers, imports, blank or punctuation-only lines."""
    in_import = False
    for raw in text.splitlines():
        line = raw.strip()
        if in_import:
            in_import = ")" not in line
            continue
        if _IMPORT.match(line):
            in_import = "(" in line and ")" not in line
            continue
        if _SKIP_LINE.search(line):
            continue
        yield " ".join(line.replace('"""', "").replace("'''", "").split())


def _doc_lines(text: str) -> Iterator[str]:
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if line and not _SKIP_LINE.search(line):
            yield line


def _head(path: str, kind: str, context: str, style: str) -> list[str]:
    """The head of an embedding text in one of HEAD_STYLES.

    "full": the last three path parts and every context line (signatures, heading trail).
    "last-heading": the file name and the innermost heading only (docs); code keeps "full".
    "none": nothing.
    """
    lines = [" ".join(line.split()) for line in context.splitlines() if line.strip()]
    if style == "none":
        return []
    if style == "last-heading" and kind not in CODE_KINDS:
        trail = " > ".join(lines).split(" > ") if lines else []
        return [Path(path).name] + trail[-1:]
    return [_short_path(path)] + lines


HEAD_STYLES = ("full", "last-heading", "none")


def embedding_text(path: str, kind: str, context: str, text: str, *, head: str = "full") -> str:
    """The text a chunk is embedded as: where it is (path, enclosing signatures or headings)
    first, then its content without the parts that only cost tokens.

    `kind` is the file kind or the chunk kind: python ones get the code treatment. The head
    comes first because long chunks are truncated to the embedder's max length; `head` is
    one of HEAD_STYLES.
    """
    head_lines = _head(path, kind, context, head)
    lines = _code_lines(text) if kind in CODE_KINDS else _doc_lines(text)
    body = "\n".join(lines)
    return " | ".join(head_lines) + "\n" + body if head_lines else body


_COMMENT = re.compile(
    r"^\s*(?:#(?![\[!]|include|define|if|endif|else|pragma|import)|//+!?|/\*+!?|\*(?!/)|--)\s?")
_DEF_LINE = re.compile(
    r"^\s*(?:export\s+)?(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+|static\s+|inline\s+|unsafe\s+"
    r"|const\s+|extern\s+|default\s+|abstract\s+)*"
    r"(?:def|class|fn|function|struct|enum|trait|impl|interface|type|union|macro_rules!|"
    r"#define|func|module|namespace)\b"
)
_C_FUNC = re.compile(r"^[A-Za-z_][\w\s\*]*\b[A-Za-z_]\w*\s*\([^;]*$")
_LEGAL = re.compile(r"SPDX|[Cc]opyright|License|LICENSE")
CODE_TEXTS = ("full", "sig")


def code_summary(path: str, context: str, text: str) -> str:
    """A code chunk's text in the "sig" style (VectorPolicy.code_text): where it is (path,
    enclosing signatures), its definition lines and what its comments and docstrings say,
    without the statements, in any language. Measured (README, Performance): it did not lift
    code questions, so no default policy uses it.
    """
    lines = [_short_path(path)] + [" ".join(c.split()) for c in context.splitlines() if c.strip()]
    in_doc = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        quotes = line.count('"""') + line.count("'''")
        if in_doc or quotes:  # a Python docstring
            body = line.replace('"""', "").replace("'''", "").strip()
            if body:
                lines.append(body)
            if quotes % 2:
                in_doc = not in_doc
            continue
        comment = _COMMENT.match(raw)
        if comment:
            body = raw[comment.end():].strip().rstrip("*/").strip()
            if body and not _SKIP_LINE.search(body) and not _LEGAL.search(body):
                lines.append(body)
        elif _DEF_LINE.match(raw) or (not raw[:1].isspace() and _C_FUNC.match(raw)):
            lines.append(" ".join(line.split()))
    return "\n".join(dict.fromkeys(lines))


@lru_cache(maxsize=8)
def _skip_matcher(patterns: tuple[str, ...]) -> Callable[[str], object]:
    """One regex for the fnmatch patterns (fnmatchcase semantics: case matters)."""
    if not patterns:
        return lambda path: None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match


#: The file kinds the default policies embed as prose.
DOC_KINDS = PROSE_FILE_KINDS
#: The prose kinds of the first policies; the later ones (AsciiDoc, Org, RDoc) enter a policy's
#: key only where a policy leaves them out, so indexes made before them keep their key.
_FIRST_DOC_KINDS = frozenset({"markdown", "rst", "text"})


@dataclass(frozen=True)
class VectorPolicy:
    """Which chunks get a vector and how many tokens of each are embedded.

    Measured on 2 cores (README, Performance): every chunk at 256 tokens takes minutes on the
    vLLM corpus. Docs embedded as ~400-character windows lift hybrid recall on docs questions;
    code heads (path, signatures, docstring, first lines at 64 tokens) did not help code
    questions, where identifiers make BM25 strong already, and cost most of the time. The
    defaults are "docs-lean" (see POLICIES); "docs", "docs+code-head" and "all" remain for
    other corpora.
    """

    name: str = "docs-lean"
    doc_kinds: frozenset[str] = DOC_KINDS
    code_chunk_kinds: frozenset[str] = frozenset()
    doc_max_tokens: int = 64
    code_max_tokens: int = 64
    #: Doc chunks are embedded as windows of about this many characters (0: one vector).
    doc_window_chars: int = 400
    #: What precedes each doc window's text (HEAD_STYLES); code always gets "full".
    doc_head: str = "full"
    #: Only the first this many windows of a doc chunk get a vector (0: all).
    max_windows: int = 3
    #: Doc windows with fewer characters of meaningful lines than this get no vector (a
    #: chunk keeps its first window though).
    min_window_chars: int = 80
    #: Embed each distinct embedding text once per run and store its vector for every window.
    dedupe: bool = True
    #: fnmatch patterns on the file path (as stored): files matching one get no vectors.
    skip_paths: tuple[str, ...] = ("*/CHANGELOG*", "*/requirements/*", "*/docs/api/*")
    #: The file languages whose chunks of code_chunk_kinds get a vector.
    code_languages: frozenset[str] = frozenset({"python"})
    #: What a code chunk is embedded as (CODE_TEXTS): "full" is embedding_text's code
    #: treatment, "sig" code_summary's.
    code_text: str = "full"

    def missing_params(self) -> dict[str, str]:
        """The kinds this policy embeds, as sql/vectors_missing.sql takes them."""
        return {"doc_kinds": json.dumps(sorted(self.doc_kinds)),
                "code_languages": json.dumps(sorted(self.code_languages)),
                "code_chunk_kinds": json.dumps(sorted(self.code_chunk_kinds))}

    def wants_vector(self, file_kind: str, chunk_kind: str, path: str = "") -> bool:
        # The kinds first, as sql/vectors_missing.sql filters them already: the path patterns
        # cost ten times more.
        if file_kind in self.doc_kinds:
            return not (path and _skip_matcher(self.skip_paths)(path))
        if not (file_kind in self.code_languages and chunk_kind in self.code_chunk_kinds):
            return False
        return not (path and _skip_matcher(self.skip_paths)(path))

    def windows(self, file_kind: str, text: str) -> list[tuple[int, str]]:
        """(window number, window text) of a chunk that get a vector under this policy."""
        if file_kind not in self.doc_kinds:
            return [(0, text)]
        windows = text_windows(text, self.doc_window_chars)[:WINDOWS_PER_CHUNK]
        if self.max_windows > 0:
            windows = windows[: self.max_windows]
        picked = list(enumerate(windows))
        if self.min_window_chars > 0:
            # Every wanted chunk keeps at least its first window: a chunk without any vector
            # would look unfinished (vectors_missing) to every later run.
            picked = [(n, w) for n, w in picked
                      if len("".join(_doc_lines(w))) >= self.min_window_chars] or picked[:1]
        return picked

    def max_tokens(self, file_kind: str) -> int:
        return self.doc_max_tokens if file_kind in self.doc_kinds else self.code_max_tokens

    @property
    def key(self) -> str:
        """Everything that changes which vectors exist or what they encode."""
        key: dict[str, object] = {
            "docs": sorted(self.doc_kinds & _FIRST_DOC_KINDS),
            "code": sorted(self.code_chunk_kinds),
            "doc_tokens": self.doc_max_tokens, "code_tokens": self.code_max_tokens,
            "doc_window": self.doc_window_chars,
            "text": 1,  # bump when embedding_text changes
        }
        # Knobs added later enter the key only when set, so existing indexes keep their key.
        extra = {"doc_head": (self.doc_head, "full"), "max_windows": (self.max_windows, 0),
                 "min_window_chars": (self.min_window_chars, 0),
                 "skip_paths": (list(self.skip_paths), []),
                 "code_languages": (sorted(self.code_languages), ["python"]),
                 "code_text": (self.code_text, "full"),
                 "later_docs": (sorted(self.doc_kinds - _FIRST_DOC_KINDS),
                                sorted(DOC_KINDS - _FIRST_DOC_KINDS))}
        key.update({name: value for name, (value, default) in extra.items() if value != default})
        return json.dumps(key, sort_keys=True)  # dedupe changes no vector: not in the key


#: "docs" is what ragdb embedded before issue 8 (every window of every doc chunk, 256 tokens).
#: "docs-lean" (the default) embeds about half its tokens, 217,821 against 444,581 on vLLM
#: 0.10.1, at the same recall@5 (docs R@1 0.69 against 0.71; benchmarks/embed_cost.py, README
#: Performance): 64 tokens per window, a chunk's first 3 windows, no window under 80 characters
#: of text, no changelog, requirements or generated API pages.
_EVERY_WINDOW = {"doc_max_tokens": DEFAULT_MAX_LENGTH, "max_windows": 0, "min_window_chars": 0,
                 "dedupe": False, "skip_paths": ()}
POLICIES = {
    "docs-lean": VectorPolicy(
        name="docs-lean", doc_max_tokens=64, max_windows=3, min_window_chars=80, dedupe=True,
        skip_paths=("*/CHANGELOG*", "*/requirements/*", "*/docs/api/*"),
    ),
    "docs": VectorPolicy(name="docs", **_EVERY_WINDOW),  # type: ignore[arg-type]
    "docs+code-head": VectorPolicy(
        name="docs+code-head", code_chunk_kinds=frozenset({"module", "function", "class"}),
        **_EVERY_WINDOW,  # type: ignore[arg-type]
    ),
    "all": VectorPolicy(
        name="all", code_chunk_kinds=frozenset({"module", "function", "class", "statements"}),
        code_max_tokens=DEFAULT_MAX_LENGTH, **_EVERY_WINDOW,  # type: ignore[arg-type]
    ),
    # "docs-lean" plus one 64-token vector per code chunk of every language, embedded as its
    # signatures and doc comments (code_summary). Measured on the repos benchmark: no better
    # than no code vectors, at several times the index time (README, Performance).
    "docs+code-sig": VectorPolicy(
        name="docs+code-sig",
        code_chunk_kinds=frozenset({"module", "function", "class", "statements"}),
        code_languages=frozenset({"python"}) | SYNTAX_LANGUAGES, code_text="sig",
        code_max_tokens=64, doc_max_tokens=64, max_windows=3, min_window_chars=80,
        dedupe=True, skip_paths=("*/CHANGELOG*", "*/requirements/*", "*/docs/api/*"),
    ),
}
DEFAULT_POLICY = POLICIES["docs-lean"]


def get_policy(name: str) -> VectorPolicy:
    try:
        return POLICIES[name]
    except KeyError:
        raise RagdbError(
            f"unknown vector policy {name!r}; choose one of {', '.join(POLICIES)}"
        ) from None


def wants_vector(file_kind: str, chunk_kind: str, policy: VectorPolicy = DEFAULT_POLICY) -> bool:
    return policy.wants_vector(file_kind, chunk_kind)


# --- int8 vectors in sqlite-vec ----------------------------------------------------------------

def to_int8(vectors: np.ndarray) -> np.ndarray:
    """Unit vectors to int8 (scale 127): cosine is kept to about 0.9999, storage is 4x smaller."""
    import numpy as np

    return np.clip(np.rint(np.asarray(vectors) * 127.0), -127, 127).astype(np.int8)


def query_blob(embedder: Embedder, text: str) -> bytes:
    """The bytes for `vec_int8(:query_vector)` in a KNN query over chunk_vectors."""
    return to_int8(embedder.embed_queries([text]))[0].tobytes()


def vector_count(conn: Connection) -> int:
    """Vectors (windows), not chunks: see migrations/002_vectors.sql."""
    return cast(int, conn.execute(sql("vectors_count")).fetchall()[0][0])


def has_vectors(conn: Connection) -> bool:
    return bool(conn.execute(sql("vectors_any")).fetchall())


def vector_kinds(conn: Connection) -> frozenset[str] | None:
    """The file kinds (languages) whose chunks the index's vector policy embeds, read from the
    policy key stored with the vectors; None when that key is missing or unreadable."""
    try:
        key = json.loads(get_setting(conn, Setting.EMBED_POLICY) or "")
    except ValueError:
        return None
    if not isinstance(key, dict) or not isinstance(key.get("docs"), list):
        return None
    kinds = set(map(str, key["docs"]))
    if key.get("code"):
        kinds.update(map(str, key.get("code_languages", ["python"])))
    return frozenset(kinds)


@dataclass
class VectorStats:
    embedded: int = 0
    removed: int = 0
    seconds: float = 0.0
    total: int = 0
    reset: bool = field(default=False)  # True when a new embedder or policy wiped old vectors
    windows: int = 0  # texts run through the model (a chunk may have several windows)
    tokens: int = 0  # tokens run through the model, after truncation

    @property
    def windows_per_s(self) -> float:
        return self.windows / self.seconds if self.seconds else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


def vectors_pending(conn: Connection, identity: str,
                    policy: VectorPolicy = DEFAULT_POLICY) -> bool:
    """Whether sync_vectors would change anything: another embedder or policy, orphan vectors,
    or a chunk the policy wants that has no vector yet."""
    if (get_setting(conn, Setting.EMBEDDER) != identity
            or get_setting(conn, Setting.EMBED_POLICY) != policy.key):
        return True
    if conn.execute(sql("vectors_orphans_any")).fetchall():
        return True
    return any(policy.wants_vector(str(file_kind), str(chunk_kind), str(path))
               for _id, path, file_kind, chunk_kind, _n
               in conn.execute(sql("vectors_missing"), policy.missing_params()))


def dense_coverage(conn: Connection, policy: VectorPolicy = DEFAULT_POLICY) -> float:
    """The share of the chunks the policy wants a vector for that have one: below 1.0 while an
    index run is still embedding (the lexical index is already complete then), or after one
    was interrupted until the next run completes them."""
    have = cast(int, conn.execute(sql("vectors_count")).fetchall()[0][1])
    missing = sum(1 for _id, path, file_kind, chunk_kind, _n
                  in conn.execute(sql("vectors_missing"), policy.missing_params())
                  if policy.wants_vector(str(file_kind), str(chunk_kind), str(path)))
    return have / (have + missing) if have + missing else 1.0


def sync_vectors(conn: Connection, embedder: Embedder, *,
                 batch_size: int = DEFAULT_BATCH_SIZE,
                 progress: Callable[[int, int], None] | None = None,
                 policy: VectorPolicy = DEFAULT_POLICY,
                 name: str | None = None) -> VectorStats:
    """Bring chunk_vectors in step with chunks: reset on a new embedder or policy, drop orphans,
    embed what is missing.

    Each batch commits on its own, so an interrupted run keeps all but one batch and the next
    run only embeds what is still missing. A reset commits the new model's identity and `name`
    (settings 'embedder_name', what loads it) together with the removal of the old vectors:
    at every commit, all vectors are the recorded model's and that model embeds the queries,
    and a run killed mid-switch leaves the switch recorded for the next run to finish.
    """
    started = time.perf_counter()
    stats = VectorStats()
    texts_before, tokens_before = embedder.texts_embedded, embedder.tokens_embedded
    if embedder.dim != VECTOR_DIM:
        raise RagdbError(
            f"embedder {embedder.identity} makes {embedder.dim}-d vectors but rag.db stores "
            f"{VECTOR_DIM}-d ones; use a {VECTOR_DIM}-d model"
        )
    with write_transaction(conn):
        if (get_setting(conn, Setting.EMBEDDER) != embedder.identity
                or get_setting(conn, Setting.EMBED_POLICY) != policy.key):
            stats.removed += vector_count(conn)
            stats.reset = True
            conn.execute(sql("vectors_delete_all"))
            set_setting(conn, Setting.EMBEDDER, embedder.identity)
            set_setting(conn, Setting.EMBED_POLICY, policy.key)
            if name is not None:
                set_setting(conn, Setting.EMBEDDER_NAME, name)
            bump_vectors_version(conn)
    with write_transaction(conn):
        before = vector_count(conn)
        conn.execute(sql("vectors_orphans_delete"))
        after = vector_count(conn)
        if after != before:
            stats.removed += before - after
            bump_vectors_version(conn)

    groups: dict[int, list[tuple[int, int]]] = {}
    memo: dict[str, np.ndarray] | None = {} if policy.dedupe else None
    missing = conn.execute(sql("vectors_missing"), policy.missing_params())
    for chunk_id, path, file_kind, chunk_kind, n_chars in missing:
        if policy.wants_vector(str(file_kind), str(chunk_kind), str(path)):
            bucket = groups.setdefault(policy.max_tokens(str(file_kind)), [])
            bucket.append((cast(int, n_chars), cast(int, chunk_id)))
    total = sum(len(group) for group in groups.values())
    if progress is not None:
        progress(0, total)
    for max_tokens, group in sorted(groups.items()):
        # Similar lengths side by side so batches pad less (Embedder.embed sorts within a call).
        group.sort(key=lambda item: (min(item[0], max_tokens * 8), item[1]))
        for start in range(0, len(group), batch_size):
            part = [chunk_id for _, chunk_id in group[start:start + batch_size]]
            stats.embedded += _embed_batch(conn, embedder, part, max_tokens, batch_size, policy,
                                           memo=memo)
            if progress is not None:
                progress(stats.embedded, total)
    stats.total = vector_count(conn)
    stats.seconds = time.perf_counter() - started
    stats.windows = embedder.texts_embedded - texts_before
    stats.tokens = embedder.tokens_embedded - tokens_before
    return stats


def _embed_batch(conn: Connection, embedder: Embedder, chunk_ids: list[int],
                 max_tokens: int, batch_size: int, policy: VectorPolicy,
                 memo: dict[str, np.ndarray] | None = None) -> int:
    """Embed and store one batch (every window of its chunks) in its own transaction.

    With `memo` (policy.dedupe), a text already embedded in this run is not embedded again:
    its vector is reused, which costs no model time.
    """
    import numpy as np

    keys: list[tuple[int, int]] = []
    texts: list[str] = []
    rows = conn.execute(sql("vectors_chunks"), {"ids": json.dumps(chunk_ids)}).fetchall()
    for chunk_id, path, file_kind, _chunk_kind, context, text in rows:
        is_doc = str(file_kind) in policy.doc_kinds
        head = policy.doc_head if is_doc else "full"
        for number, window in policy.windows(str(file_kind), str(text)):
            keys.append((cast(int, chunk_id), number))
            if is_doc or policy.code_text == "full":
                texts.append(embedding_text(str(path), str(file_kind), str(context), window,
                                            head=head))
            else:
                texts.append(code_summary(str(path), str(context), window))
    if memo is None:
        vectors = to_int8(embedder.embed(texts, max_length=max_tokens, batch_size=batch_size))
    else:
        todo = [t for t in dict.fromkeys(texts) if t not in memo]
        fresh = to_int8(embedder.embed(todo, max_length=max_tokens, batch_size=batch_size))
        memo.update(zip(todo, fresh))
        vectors = np.stack([memo[t] for t in texts]) if texts else np.zeros((0, VECTOR_DIM))
    with write_transaction(conn):
        if (get_setting(conn, Setting.EMBEDDER) != embedder.identity
                or get_setting(conn, Setting.EMBED_POLICY) != policy.key):
            raise RagdbError(  # one index run at a time (ragdb.run_lock.index_lock) prevents this
                f"the vectors of {conn.filename} were switched to another embedder while this "
                "run computed them; nothing of this batch was kept: run `ragdb index` again")
        bump_vectors_version(conn)
        conn.executemany(sql("vectors_insert"), [{
            "vector_id": chunk_id * WINDOWS_PER_CHUNK + number, "chunk_id": chunk_id,
            "blob": vector.tobytes(),
        } for (chunk_id, number), vector in zip(keys, vectors)])
    return len(rows)


#: vector_id = chunk_id * WINDOWS_PER_CHUNK + window number (migrations/002_vectors.sql).
WINDOWS_PER_CHUNK = 1000


#: What a chunk's vectors are made of, besides its file's path: the file's kind, the chunk's
#: kind, context and text (embedding_text, code_summary and the policy's windows read no more).
_ChunkKey = tuple[str, str, str, str]


class VectorReuse:
    """An edited file's chunks that are the same as before keep their vectors: editing one
    line of a long docs page re-embedded every chunk of it. The old vectors are copied to the
    new chunk ids in the index run's transaction (the same path, kind, context and text give
    the same embedding text); the rest are embedded by sync_vectors as before. They are the
    recorded embedder's and policy's: a run with another one resets them all there.
    `enabled` False (PostgreSQL) or an index without vectors: nothing is read."""

    def __init__(self, conn: Connection, enabled: bool = True) -> None:
        self.conn = conn
        self.enabled = enabled and has_vectors(conn)
        self.reused = 0  # chunks whose vectors were kept

    def before(self, path: str) -> dict[_ChunkKey, int]:
        """The file's chunks as indexed, by what their vectors are made of: their ids."""
        if not self.enabled:
            return {}
        return {(str(k), str(ck), str(ctx), str(text)): int(cid) for cid, k, ck, ctx, text
                in self.conn.execute(sql("vectors_reuse_chunks"), {"path": path})}

    def after(self, path: str, old: dict[_ChunkKey, int]) -> None:
        """Copy the vectors of each old chunk to the new chunk that is the same."""
        if not old:
            return
        rows = []
        for cid, k, ck, ctx, text in list(self.conn.execute(sql("vectors_reuse_chunks"),
                                                            {"path": path})):
            was = old.pop((str(k), str(ck), str(ctx), str(text)), None)
            if was is None:
                continue
            windows = []
            for number in range(WINDOWS_PER_CHUNK):
                found = scalar(self.conn, sql("vectors_window"), {
                    "vector_id": was * WINDOWS_PER_CHUNK + number})
                if found is None:
                    break
                windows.append({"vector_id": int(cid) * WINDOWS_PER_CHUNK + number,
                                "chunk_id": int(cid), "blob": bytes(found)})
            if windows:
                rows += windows
                self.reused += 1
        if rows:
            self.conn.executemany(sql("vectors_insert"), rows)
            bump_vectors_version(self.conn)


def text_windows(text: str, size: int) -> list[str]:
    """Paragraphs packed into windows of about `size` characters; [text] when size is 0.

    A small model reads a 400-character passage far better than the first 256 tokens of a
    2000-character section (README, Performance): each window gets its own vector.
    """
    if size <= 0 or len(text) <= size:
        return [text]
    windows: list[str] = []
    current = ""
    for paragraph in re.split(r"\n\s*\n", text):
        while len(paragraph) > size:  # an over-long paragraph: cut at a line or word end
            cut = max(paragraph.rfind("\n", 0, size), paragraph.rfind(" ", 0, size))
            cut = cut if cut > size // 2 else size
            if current:
                windows.append(current)
                current = ""
            windows.append(paragraph[:cut])
            paragraph = paragraph[cut:].lstrip()
        if current and len(current) + len(paragraph) + 2 > size:
            windows.append(current)
            current = paragraph
        else:
            current = f"{current}\n\n{paragraph}" if current else paragraph
    if current.strip():
        windows.append(current)
    return [w for w in windows if w.strip()] or [text]
