"""The answer styles a user chooses between (`--style`), apart from the code that makes them:
every door names a style, and naming one should not load the answering machinery."""

from __future__ import annotations

from enum import Enum


class Style(str, Enum):
    auto = "auto"
    extractive = "extractive"
    generate = "generate"
