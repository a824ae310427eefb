"""Dataset and result files: read into pydantic models with one-line errors, written atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ragdb.errors import RagdbError

if TYPE_CHECKING:  # pydantic loads with the first file read or written, not every command
    from pydantic import BaseModel

Model = TypeVar("Model", bound="BaseModel")


def load_json(path: Path, model: type[Model], what: str) -> Model:
    """Read a pydantic model from a JSON file, or fail with one line that says what is wrong."""
    from pydantic import ValidationError

    from ragdb.schemas import describe

    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RagdbError(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise RagdbError(f"{what} is a directory, not a JSON file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RagdbError(f"cannot read {what} {path}: {exc}") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise RagdbError(f"{what} {path} is not valid JSON: {str(exc)[:200]}") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RagdbError(f"{what} {path} does not have the expected shape ({describe(exc)})"
                         ) from None


def check_writable(path: Path) -> None:
    """Fail in one line now, before any work, when `path` could not be written later: its
    folder cannot be created (a regular file in the way) or is not writable."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise RagdbError(f"cannot write {path}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise RagdbError(f"cannot write {path}: {folder} is not writable")
    if path.is_dir():
        raise RagdbError(f"cannot write {path}: it is a folder")


def check_not_input(out: Path, given: Path, option: str) -> None:
    """Fail in one line when an output file is the command's own input (`--save_directory .`
    beside the dataset: the file is named after its input), which it would overwrite."""
    try:
        same = out.exists() and os.path.samefile(out, given)
    except OSError:
        same = False
    if same:
        raise RagdbError(f"{option} {out.parent} would write {out.name} over the input file "
                         f"{given} itself; choose another folder")


def write_json_atomic(path: Path, model: BaseModel) -> None:
    """Write then rename, so an interrupted run never leaves half a JSON file.

    A folder that cannot be created (a regular file in the way, no permission) is one line.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(model.model_dump_json(indent=2), encoding="utf-8")
        os.replace(tmp, path)
    except (FileExistsError, NotADirectoryError):
        raise RagdbError(f"cannot write {path}: a file stands where a folder is needed") from None
    except OSError as exc:
        raise RagdbError(f"cannot write {path}: {exc.strerror or exc}") from None
