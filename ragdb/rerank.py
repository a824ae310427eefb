"""The reranking stage: after fusion, a cross-encoder scores the top candidates of a search and
the final order combines its ranks with the fused ones.

It runs behind `RagDB` on every door and both engines: the Searcher hands it the fused hits
(rag.db or PostgreSQL, the same order) and caches what it returns under a key holding the
reranker's identity (`Reranking.key`), so a cached result of one model is never served for
another. Off by default: no reranker has yet been shown to beat the fused order on the unseen
sets (issue 40); `--rerank`, `--reranker NAME|FOLDER` or RAGDB_RERANKER turn it on.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from ragdb.errors import RagdbError
from ragdb.resources import models_dir, sql
from ragdb.rerank_models import (MAX_TOKENS, CrossEncoder, RerankerFiles, load_cross_encoder,
                                 resolve_reranker)

if TYPE_CHECKING:
    from ragdb.db import Connection
    from ragdb.retrieve import Hit

#: The environment variable that names the reranker (servers, MCP, and the CLI by default);
#: `off` (or empty) turns reranking off.
RERANKER_ENV = "RAGDB_RERANKER"
#: Whether searches rerank when nothing says: off until a model wins on the unseen sets.
DEFAULT_RERANK = False
#: The reranker used when reranking is on and none is named (none ships yet).
DEFAULT_RERANKER: str | None = None
_OFF = frozenset({"", "off", "none", "no", "0", "false"})
#: The combinations of the fused order and the reranker's (combined_score).
ORDERS = ("rrf", "reranker")


@dataclass(frozen=True)
class RerankParams:
    """How many candidates the reranker scores and how its order meets the fused one (chosen
    by measurement; see combined_score)."""

    depth: int = 30  # the fused top N the reranker scores
    order: str = "rrf"  # "rrf": both orders fused by rank; "reranker": its order alone
    weight: float = 1.0  # the reranker's rank weight in the RRF (the fused rank's is 1)
    c: float = 10.0  # the RRF constant, as the fusion's (SearchParams.rrf_c)
    # Tokens of a (question, candidate) pair where the model's window is longer: its cost
    # grows faster than its length (ragdb's chunks have a median of about 320 tokens).
    max_tokens: int = MAX_TOKENS


def combined_score(fused_rank: int, reranker_rank: int, params: RerankParams) -> float:
    """A candidate's final score from its rank in the fused order and in the reranker's (both
    from 1): RRF of the two with the reranker's weight, or its rank alone. Ranks, not scores:
    a logit and a fused RRF score are on unrelated scales."""
    if params.order == "reranker":
        return 1.0 / (params.c + reranker_rank)
    return 1.0 / (params.c + fused_rank) + params.weight / (params.c + reranker_rank)


def passage(hit: Hit, context: str) -> str:
    """What the reranker reads of a candidate: its path, its context (enclosing signatures or
    headings) and its text; the model's window cuts the end."""
    head = f"{hit.file_path}\n{context}".strip()
    return f"{head}\n{hit.text}"


def rerank_order(hits: Sequence[Hit], scores: Sequence[float],
                 params: RerankParams) -> list[Hit]:
    """The hits scored (the first len(scores)) in their final order, then the rest in fused
    order, each with its combined score (those past the scored ones rank as if the reranker
    put them where fusion did: always below)."""
    scored = len(scores)
    by_model = sorted(range(scored), key=lambda i: (-scores[i], i))
    model_rank = {i: rank for rank, i in enumerate(by_model, 1)}
    final = [(combined_score(i + 1, model_rank.get(i, i + 1), params), i)
             for i in range(len(hits))]
    final.sort(key=lambda item: (-item[0], item[1]))
    return [replace(hits[i], score=round(score, 6)) for score, i in final]


def reranking_spec(rerank: bool | None = None, reranker: str | None = None) -> str | None:
    """The reranker to use, or None for no reranking: --no-rerank wins; else the one named
    (--reranker, then RAGDB_RERANKER, then DEFAULT_RERANKER); reranking is on when asked
    (--rerank), when one is named, or by default (DEFAULT_RERANK)."""
    if rerank is False:
        return None
    named = (reranker or "").strip() or None
    env = os.environ.get(RERANKER_ENV)
    if named is None and env is not None:
        if env.strip().lower() in _OFF:
            if rerank:
                raise RagdbError(f"--rerank, but {RERANKER_ENV}={env!r} turns reranking off: "
                                 "name one with --reranker NAME|FOLDER")
            return None
        named = env.strip()
    if named is not None:
        return named
    if rerank or DEFAULT_RERANK:
        if DEFAULT_RERANKER is None:
            raise RagdbError(
                "--rerank needs a reranker: --reranker FOLDER (an OpenVINO cross-encoder: "
                "openvino_model.xml/.bin and tokenizer.json) or a hub name such as "
                f"cross-encoder/ms-marco-MiniLM-L-6-v2, or {RERANKER_ENV}")
        return DEFAULT_RERANKER
    return None


class Reranking:
    """One reranker and its parameters: resolved (its identity) on first need, compiled on the
    first search it must score (a cached search loads nothing). Records its time and any
    search it left in fused order."""

    def __init__(self, spec: str, params: RerankParams = RerankParams()) -> None:
        if params.order not in ORDERS:
            raise RagdbError(f"rerank order must be one of {', '.join(ORDERS)}, "
                             f"got {params.order!r}")
        if params.depth < 1 or params.max_tokens < 8:
            raise RagdbError(f"rerank depth must be at least 1 and max_tokens at least 8, got "
                             f"{params.depth} and {params.max_tokens}")
        self.spec = spec
        self.params = params
        self._files: RerankerFiles | None = None
        self._encoder: CrossEncoder | None = None
        self.ms = 0.0  # time spent scoring since the last reset()
        self.notes: list[str] = []  # searches left in fused order since the last reset()

    @property
    def files(self) -> RerankerFiles:
        if self._files is None:
            self._files = resolve_reranker(self.spec, models_dir())
        return self._files

    @property
    def identity(self) -> str:
        """The model's name, weights fingerprint and window."""
        return self.files.identity

    @property
    def key(self) -> str:
        """What a reranked result depends on besides the search: the query cache key's part."""
        return json.dumps([self.identity, asdict(self.params)], sort_keys=True)

    @property
    def encoder(self) -> CrossEncoder:
        if self._encoder is None:
            self._encoder = load_cross_encoder(self.files, self.params.max_tokens)
        return self._encoder

    def reset(self) -> None:
        self.ms = 0.0
        self.notes = []

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        """Scores of texts for a question (higher: more relevant): for the answer stage's
        choice between candidate blocks too. NaN where the model gave NaN."""
        started = time.perf_counter()
        try:
            return self.encoder.score(question, list(texts))
        finally:
            self.ms += (time.perf_counter() - started) * 1000

    def reorder(self, conn: Connection, question: str, hits: list[Hit],
                k: int) -> tuple[list[Hit], bool]:
        """The first k of `hits` (the fused order, at least depth long where there are that
        many) after reranking their first `depth`; and whether the reranker's scores were
        used: False when it gave a NaN (the fused order is kept, and noted)."""
        scored = hits[: self.params.depth]
        if len(scored) < 2:
            return hits[:k], True
        ids = json.dumps([hit.chunk_id for hit in scored])
        contexts = {int(row[0]): str(row[1] or "")
                    for row in conn.execute(sql("rerank_contexts"), {"ids": ids})}
        scores = self.score(question, [passage(h, contexts.get(h.chunk_id, "")) for h in scored])
        bad = sum(1 for value in scores if not math.isfinite(value))
        if bad:
            self.notes.append(
                f"reranker {self.spec} gave {bad} of {len(scores)} candidates no score (NaN): "
                "the fused order is kept")
            return hits[:k], False
        return rerank_order(hits, scores, self.params)[:k], True

    def info(self) -> dict[str, Any]:
        """What the last searches did, for the JSON timings: the reranker, its time and any
        search left in fused order."""
        return {"reranker": self.identity, "rerank_ms": round(self.ms, 2),
                "rerank_notes": list(self.notes)}
