"""The answer model of one RagDB: where it is, found once and only when an answer needs it (a
hub probe at most, no load), its warnings held back until the model is really used (an
extractive answer needs none); then loaded once and kept, one load for every thread that
answers (an endpoint's: nothing to load, its requests are made per answer).
"""

from __future__ import annotations

import threading
from typing import Callable

from ragdb.generate.generator import Generator, time_limit_from_env
from ragdb.generate.models import ResolvedModel, resolve_model
from ragdb.generate.remote import RemoteGenerator, first_token_limit_from_env
from ragdb.resources import models_dir


class AnswerModel:
    """`spec`: --model (`NAME`, a folder, `NAME@URL`), None for the default."""

    def __init__(self, spec: str | None) -> None:
        self.spec = spec
        self._generator: Generator | RemoteGenerator | None = None
        self._lock = threading.Lock()
        self._resolved: ResolvedModel | None = None
        self._notes: list[str] = []

    def resolved(self) -> ResolvedModel:
        """Where the model is (found once); its warnings wait for generator()."""
        if self._resolved is None:
            notes: list[str] = []
            self._resolved = resolve_model(self.spec, models_dir(), warn=notes.append)
            self._notes = notes
        return self._resolved

    def generator(self, warn: Callable[[str], None]) -> Generator | RemoteGenerator:
        """The model, resolved and loaded on first use and kept; the warnings of its
        resolution are told to `warn` then."""
        with self._lock:
            if self._generator is None:
                resolved = self.resolved()
                for note in self._notes:
                    warn(note)
                limit = time_limit_from_env()
                self._generator = (
                    RemoteGenerator(resolved, time_limit_s=limit,
                                    first_token_limit_s=first_token_limit_from_env())
                    if resolved.endpoint is not None
                    else Generator(resolved, time_limit_s=limit))
            return self._generator

    @property
    def loaded(self) -> Generator | RemoteGenerator | None:
        """The model in memory, if any (None until generator() loads it)."""
        return self._generator
