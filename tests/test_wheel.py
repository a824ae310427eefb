"""The wheel is the program: built, installed into a fresh virtualenv, run from an empty folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, write_corpus


def _uv() -> list[str]:
    found = shutil.which("uv")
    if found:
        return [found]
    probe = subprocess.run([sys.executable, "-m", "uv", "--version"], capture_output=True)
    if probe.returncode == 0:
        return [sys.executable, "-m", "uv"]
    pytest.skip("uv is not installed")


def test_installed_wheel_indexes_and_searches(tmp_path: Path) -> None:
    uv = _uv()
    dist = tmp_path / "dist"
    subprocess.run([*uv, "build", "--wheel", "-q", "-o", str(dist)], cwd=REPO, check=True,
                   timeout=300)
    wheel = next(dist.glob("ragdb-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([*uv, "venv", "-q", str(venv)], check=True, timeout=120)
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    # The venv's interpreter named outright: uv run as `python -m uv` would otherwise install
    # into the environment of the python running it.
    subprocess.run([*uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                    "--overrides", str(REPO / "overrides.txt"), str(wheel)], check=True,
                   timeout=600, env=env)
    empty = tmp_path / "elsewhere"
    write_corpus(empty / "proj")
    ragdb = str(venv / "bin" / "ragdb")
    clean_env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    clean_env["RAGDB_MODELS_DIR"] = str(REPO / "data" / "models")
    indexed = subprocess.run([ragdb, "index", "proj", "--db", "rag.db"], cwd=empty,
                             capture_output=True, text=True, timeout=300, env=clean_env)
    assert indexed.returncode == 0, indexed.stderr
    assert "4 indexed" in indexed.stdout
    found = subprocess.run([ragdb, "search", "load a LoRA adapter at run time", "--db",
                            "rag.db"], cwd=empty, capture_output=True, text=True, timeout=300,
                           env=clean_env)
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[0].split()[1].startswith("proj/docs/features/lora.md:1-")
