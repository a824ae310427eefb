"""`ragdb map`: the definitions a codebase is most built on, ranked over its reference graph
(PageRank), with their signatures, within a token budget: what a coding agent reads to see a
codebase at a glance.

The graph: each definition is a node; each resolved use is an edge from the definition it sits
in to the one it names (through imports that re-export it, ragdb.navigate). The rows are read
with SQL, the ranks computed here (a few power iterations over at most a few hundred thousand
edges). Tokens are counted as characters / 4, the rule of thumb for code.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ragdb.db import Connection
from ragdb.errors import RagdbError
from ragdb.input_rules import one_line
from ragdb.navigate import ALIAS_DEPTH, _params, _prefixes
from ragdb.python_chunking import _drop_comment
from ragdb.resources import sql
from ragdb.retrieve import Filters

CHARS_PER_TOKEN = 4
DAMPING = 0.85
ITERATIONS = 30
MIN_TOKENS, MAX_TOKENS = 64, 1_000_000
#: Kinds a map lists (a module's variables and fields rank, but say little at a glance).
LISTED = frozenset({"function", "method", "class", "struct", "interface", "trait", "type",
                    "enum", "macro", "constant"})


@dataclass
class MapEntry:
    path: str
    line: int
    kind: str
    qualified: str
    signature: str
    rank: float

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "kind": self.kind,
                "qualified": self.qualified, "signature": self.signature,
                "rank": round(self.rank, 6)}


def check_tokens(tokens: object) -> int:
    if isinstance(tokens, str) and tokens.strip().isdigit() and len(tokens.strip()) <= 9:
        tokens = int(tokens.strip())
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not (
            MIN_TOKENS <= tokens <= MAX_TOKENS):
        raise RagdbError(f"tokens must be a whole number from {MIN_TOKENS} to {MAX_TOKENS:,}, "
                         f"got {tokens!r}"[:160])
    return tokens


Rows = dict[int, tuple[Any, ...]]


def ranks(conn: Connection, filters: Filters = Filters()) -> tuple[dict[int, float], Rows]:
    """Each definition's PageRank over the reference graph, and its row."""
    rows = {int(r[0]): tuple(r) for r in conn.execute(sql("map_symbols"), _params(filters, ()))}
    by_name: dict[str, list[int]] = defaultdict(list)
    for sid, row in rows.items():
        by_name[str(row[1])].append(sid)
    aliases: dict[str, list[str]] = defaultdict(list)
    for alias, target in conn.execute(sql("map_aliases")):
        aliases[str(alias)].append(str(target))
    memo: dict[str, list[int]] = {}

    def resolve(target: str, depth: int = 0) -> list[int]:
        found = memo.get(target)
        if found is not None:
            return found
        found = by_name.get(target, [])
        if not found and depth < ALIAS_DEPTH:
            for prefix in _prefixes(target)[:-1] if "." in target else []:
                for source in aliases.get(prefix, ()):
                    found = resolve(source + target[len(prefix):], depth + 1)
                    if found:
                        break
                if found:
                    break
        memo[target] = found
        return found

    edges: dict[int, dict[int, float]] = defaultdict(dict)
    for source, target, count in conn.execute(sql("map_edges")):
        source = int(source)
        if source not in rows:
            continue
        for dest in resolve(str(target)):
            if dest != source:
                edges[source][dest] = edges[source].get(dest, 0.0) + float(count)
    n = len(rows)
    if not n:
        return {}, rows
    rank = dict.fromkeys(rows, 1.0 / n)
    out_weight = {s: sum(d.values()) for s, d in edges.items()}
    for _ in range(ITERATIONS):
        dangling = sum(rank[s] for s in rows if s not in out_weight)
        base = (1.0 - DAMPING) / n + DAMPING * dangling / n
        new = dict.fromkeys(rows, base)
        for source, dests in edges.items():
            share = DAMPING * rank[source] / out_weight[source]
            for dest, weight in dests.items():
                new[dest] += share * weight
        rank = new
    return rank, rows


def signature(head: str, language: str) -> str:
    """A definition's header from the text at its start: its first line, continued while its
    brackets are open (a Python def over several lines), without its body."""
    lines = head.split("\n")
    out = []
    depth = 0
    for line in lines[:12]:
        line = _drop_comment(line) if language == "python" else line
        out.append(line.strip())
        depth += sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
        if depth <= 0:
            break
    text = " ".join(p for p in out if p)
    if language != "python":
        brace = text.find("{")
        text = text[:brace].rstrip() if brace > 0 else text
    return text if len(text) <= 200 else text[:197] + "..."


def empty_note(filters: Filters) -> str:
    """What an empty map means: an index without definitions, or filters that kept none (`map
    --path 'src['` said the index had none and told the user to index again)."""
    if filters.paths or filters.langs or filters.excludes:
        return "no definitions in the files --path/--lang/--exclude keep"
    return "no definitions in the index: `ragdb index` reads them from the code"


def repo_map(conn: Connection, tokens: int, filters: Filters = Filters()
             ) -> tuple[str, list[MapEntry]]:
    """The best-ranked definitions, grouped by file, within `tokens`: the text and its
    entries."""
    tokens = check_tokens(tokens)
    rank, rows = ranks(conn, filters)
    order = sorted((sid for sid in rows if rows[sid][2] in LISTED),
                   key=lambda sid: (-rank[sid], rows[sid][3], rows[sid][6]))
    budget = tokens * CHARS_PER_TOKEN
    chosen: list[int] = []
    used = 0
    heads: dict[int, str] = {}
    for start in range(0, len(order), 200):
        batch = order[start:start + 200]
        for sid, head in conn.execute(sql("symbol_heads"), {"ids": json.dumps(batch)}):
            heads[int(sid)] = str(head or "")
        for sid in batch:
            row = rows[sid]
            line = f"  {row[4]}: {signature(heads.get(sid, ''), str(row[5]))}\n"
            cost = len(line) + (len(str(row[3])) + 2 if not any(
                rows[c][3] == row[3] for c in chosen) else 0)
            if used + cost > budget:
                continue
            chosen.append(sid)
            used += cost
        if used >= budget * 0.98:
            break
    entries = [MapEntry(str(rows[s][3]), int(rows[s][4]), str(rows[s][2]), str(rows[s][1]),
                        signature(heads.get(s, ""), str(rows[s][5])), rank[s]) for s in chosen]
    by_file: dict[str, list[MapEntry]] = defaultdict(list)
    for entry in entries:
        by_file[entry.path].append(entry)
    parts = []
    for path in sorted(by_file, key=lambda p: -max(e.rank for e in by_file[p])):
        parts.append(f"{one_line(path)}:")
        parts += [f"  {e.line}: {one_line(e.signature)}"
                  for e in sorted(by_file[path], key=lambda e: e.line)]
    return "\n".join(parts), entries
