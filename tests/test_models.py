"""Finding the answer model: local folders, GGUF files, the hub, the offline fallback."""

from __future__ import annotations

import importlib.util
import os
import re
import time
from pathlib import Path

import pytest

from ragdb.errors import RagdbError
from ragdb.generate.models import OFFLINE_GGUF, _folder_name, resolve_model
from ragdb.generate import models
from ragdb import resources
from ragdb.resources import models_dir
from tests.conftest import MODELS, models_dir_without_writer


# ------------------------------------------------------------------------------------------
# Finding the model


@pytest.fixture
def hub_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HTTPS_PROXY",
                "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def fake_ir(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in ("openvino_model.xml", "openvino_model.bin", "openvino_tokenizer.xml",
                 "openvino_tokenizer.bin", "openvino_detokenizer.xml",
                 "openvino_detokenizer.bin"):
        (folder / name).write_text("x")
    return folder


@pytest.mark.usefixtures("hub_env")
def test_offline_hub_falls_back_fast_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    warnings: list[str] = []
    started = time.perf_counter()
    resolved = resolve_model(None, tmp_path, warn=warnings.append)
    assert time.perf_counter() - started < 1.0
    assert resolved.offline_fallback and resolved.path.name == OFFLINE_GGUF
    assert len(warnings) == 1 and "\n" not in warnings[0] and "HF_HUB_OFFLINE" in warnings[0]


@pytest.mark.usefixtures("hub_env")
def test_unreachable_hub_is_detected_quickly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on discard
    warnings: list[str] = []
    started = time.perf_counter()
    assert resolve_model(None, tmp_path, warn=warnings.append).offline_fallback
    assert time.perf_counter() - started < 2.5
    assert len(warnings) == 1 and "127.0.0.1:9" in warnings[0]
    with pytest.raises(RagdbError, match="cannot get model Qwen/Qwen3-0.6B"):
        resolve_model("Qwen/Qwen3-0.6B", tmp_path, warn=warnings.append)
    assert not list(tmp_path.iterdir())  # nothing half-downloaded left behind


@pytest.mark.usefixtures("hub_env")
def test_downloaded_model_is_used_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = fake_ir(tmp_path / "OpenVINO--Qwen3-0.6B-int4-ov")
    warnings: list[str] = []
    for spec in (None, "Qwen/Qwen3-0.6B", "OpenVINO/Qwen3-0.6B-int4-ov"):
        resolved = resolve_model(spec, tmp_path, warn=warnings.append)
        assert resolved.path == folder and not resolved.offline_fallback
    assert resolve_model(None, tmp_path, warn=warnings.append).name.startswith("Qwen/Qwen3-0.6B")
    assert warnings == []


@pytest.mark.usefixtures("hub_env")
def test_download_lands_in_models_dir_only_when_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    calls: list[tuple[str, Path]] = []

    def snapshot_download(*, repo_id: str, local_dir: Path) -> str:
        calls.append((repo_id, Path(local_dir)))
        fake_ir(Path(local_dir))
        return str(local_dir)

    monkeypatch.setattr(models, "_hub_unreachable_reason", lambda: None)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    resolved = resolve_model(None, tmp_path / "models", warn=pytest.fail)
    assert calls[0][0] == "OpenVINO/Qwen3-0.6B-int4-ov"
    assert resolved.path == tmp_path / "models" / "OpenVINO--Qwen3-0.6B-int4-ov"
    assert (resolved.path / "openvino_model.xml").is_file()
    assert not calls[0][1].exists()  # the .partial folder was renamed into place


def test_bad_local_models_fail_with_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "openvino_model.xml").write_text("x")
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_text("hello")
    cases = {
        str(tmp_path / "missing"): "not found",
        "./nowhere/model.gguf": "not found",
        str(broken): "missing openvino_model.bin, openvino_tokenizer.xml",
        str(not_gguf): "not a GGUF file",
    }
    for spec, message in cases.items():
        with pytest.raises(RagdbError, match=re.escape(message)) as error:
            resolve_model(spec, tmp_path, warn=pytest.fail)
        assert "\n" not in str(error.value)


def test_explicit_offline_and_gguf_paths(tmp_path: Path) -> None:
    offline = resolve_model("offline", tmp_path, warn=pytest.fail)
    assert offline.offline_fallback
    as_path = resolve_model(str(offline.path), tmp_path, warn=pytest.fail)
    assert as_path.path == offline.path and not as_path.offline_fallback


@pytest.mark.skipif(importlib.util.find_spec("optimum") is not None,
                    reason="optimum-intel is installed")
def test_conversion_without_optimum_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(RagdbError, match="optimum-intel"):
        resolve_model("convert:Qwen/Qwen3-0.6B", tmp_path, warn=pytest.fail)


def test_environment_variable_sets_the_models_dir(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """RAGDB_MODELS_DIR wins; else the checkout's data/models where it exists (make
    install-writer's); else the user's cache folder: never a folder relative to where ragdb
    runs (it was data/models of the current folder)."""
    monkeypatch.setenv("RAGDB_MODELS_DIR", "/somewhere/models")
    assert models_dir() == Path("/somewhere/models")
    monkeypatch.delenv("RAGDB_MODELS_DIR")
    monkeypatch.setattr(resources, "checkout_models_dir", lambda: None)  # as from a wheel
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert models_dir() == tmp_path / "cache" / "ragdb" / "models"
    for ignored in ("", "relative/cache"):  # the XDG spec: a relative value is ignored
        monkeypatch.setenv("XDG_CACHE_HOME", ignored)
        assert models_dir() == Path.home() / ".cache" / "ragdb" / "models"
    assert os.sep not in _folder_name("OpenVINO/Qwen3-0.6B-int4-ov")


def test_the_checkout_data_models_is_still_found(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """`make install-writer` installs into the checkout's data/models, and tests find it
    there: ragdb run from this checkout, from any folder, looks there first."""
    models_dir_without_writer()  # makes data/models, as the tests' and CI's install does
    monkeypatch.delenv("RAGDB_MODELS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert models_dir() == MODELS
