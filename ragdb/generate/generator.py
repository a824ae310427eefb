"""The writers: what a model answering from numbered sources does, wherever it runs (Writer),
and the local one, an OpenVINO GenAI pipeline loaded once (Generator)."""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ragdb.errors import RagdbError
from ragdb.generate.cleaning import STOP_STRINGS, stream_view, clean_answer
from ragdb.generate.models import (
    ResolvedModel,
    first_line,
    model_context_length,
)
from ragdb.generate.prompt import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_MAX_NEW_TOKENS,
    DEFAULT_QUESTION_CAP,
    DEFAULT_REPETITION_PENALTY,
    DEFAULT_TIME_LIMIT_S,
    OFFLINE_CONTEXT_TOKENS,
    OFFLINE_MAX_NEW_TOKENS,
    MIN_SOURCE_BUDGET,
    SYSTEM_PROMPT,
    WRITER_CONTEXT_TOKENS,
    WRITER_MAX_NEW_TOKENS,
    WRITER_EXAMPLES,
    WRITER_SYSTEM_PROMPT,
    PromptSource,
    build_prompt,
    render_chat,
)

NO_SOURCES_MESSAGE = (
    "No sources were found for this question in the index, so there is nothing to answer from."
)
NO_SOURCES_ASKED_MESSAGE = "No sources were asked for (k = 0), so there is nothing to answer from."
EMPTY_ANSWER_MESSAGE = "The model gave no usable answer from these sources."


#: Seconds a model may write for, where the default (DEFAULT_TIME_LIMIT_S) does not suit the
#: host: a slower CPU, or a user who would rather wait; 0 lifts the limit.
TIME_LIMIT_ENV = "RAGDB_WRITE_SECONDS"


def time_limit_from_env() -> float | None:
    """The writing limit $RAGDB_WRITE_SECONDS sets (None: no limit), else the default."""
    return seconds_from_env(TIME_LIMIT_ENV, DEFAULT_TIME_LIMIT_S)


def seconds_from_env(name: str, default: float | None) -> float | None:
    """A limit in seconds from the environment variable `name` (0: none, returned as None),
    else `default`; anything else is one line naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not math.isfinite(seconds) or seconds < 0:
        shown = raw if len(raw) <= 20 else raw[:17] + "..."
        raise RagdbError(f"{name} must be a number of seconds (0: no limit), got {shown!r}")
    return seconds or None


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
    check: dict[str, Any] | None = None  # what the claim check kept and dropped, when it ran
    stopped_at_time_limit: bool = False  # the writing was cut by Generator.time_limit_s
    shown: dict[str, Any] | None = None  # a blocks answer's variant, blocks and notes


def no_sources(model: str) -> GeneratedAnswer:
    """The answer where the search found nothing to answer from."""
    return GeneratedAnswer(NO_SOURCES_MESSAGE, [], model, 0, 0, 0.0, 0.0, [])


class Emitter:
    """Passes a growing text on to `on_token` piece by piece: what it adds to the text passed
    on so far (a text that does not extend it passes nothing)."""

    on_token: Callable[[str], None] | None
    emitted = ""

    def emit(self, text: str) -> None:
        if self.on_token is not None and text.startswith(self.emitted) and text != self.emitted:
            delta = text[len(self.emitted):]
            self.emitted = text
            self.on_token(delta)


class TokenStream(Emitter):
    """What a model wrote so far: the part safe to show passed on as it grows (stream_view),
    a repetition loop and the writing limit noticed at each piece."""

    def __init__(self, n_sources: int, on_token: Callable[[str], None] | None,
                 deadline: float | None) -> None:
        self.n_sources = n_sources
        self.on_token = on_token
        self.deadline = deadline  # time.perf_counter() past which writing stops
        self.raw = ""
        self.first_at: float | None = None
        self.looping = False
        self.timed_out = False
        self.truncated = False  # stopped at the token limit, or broken off
        self.prompt_tokens = 0
        self.new_tokens = 0

    def piece(self, piece: str) -> None:
        now = time.perf_counter()
        if self.first_at is None:
            self.first_at = now
        self.new_tokens += 1
        self.raw += piece
        view, self.looping = stream_view(self.raw, self.n_sources)
        self.emit(view)
        self.timed_out = self.deadline is not None and now >= self.deadline


class Writer:
    """What the local model (Generator) and one behind an endpoint (remote.RemoteGenerator)
    share: the prompt fitted, one answer at a time, the writing limit, what was written
    cleaned and cited, timed. A subclass fits the prompt (prompt_for) and writes (write)."""

    model: str
    time_limit_s: float | None  # None: no limit but the new tokens
    load_s = 0.0

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def prompt_for(self, question: str, sources: list[PromptSource]
                   ) -> tuple[Any, list[PromptSource]]:
        raise NotImplementedError

    def write(self, prompt: Any, stream: TokenStream, started: float) -> None:
        """Write the answer into `stream`, raising RagdbError where nothing can be written."""
        raise NotImplementedError

    def answer(self, question: str, sources: list[PromptSource],
               on_token: Callable[[str], None] | None = None) -> GeneratedAnswer:
        """Answer from `sources` only, streamed; Ctrl-C raises KeyboardInterrupt once writing
        stops. Writing stops `time_limit_s` after the call (a slow host must not hold an
        answer, or the HTTP request waiting on it, for a minute): what was finished stands."""
        if not sources:
            return no_sources(self.model)
        with self._lock:
            started = time.perf_counter()
            prompt, used = self.prompt_for(question, sources)
            if not used:
                raise RagdbError("no source fits in the model's context: raise the context size")
            limit = self.time_limit_s
            stream = TokenStream(len(used), on_token,
                                 started + limit if limit is not None else None)
            self.write(prompt, stream, started)
            total = time.perf_counter() - started
        stopped = stream.timed_out and not stream.looping
        text, cited = clean_answer(stream.raw, len(used),
                                   truncated=(stream.truncated or stopped) and not stream.looping)
        text = text or EMPTY_ANSWER_MESSAGE
        stream.emit(text)
        return GeneratedAnswer(
            text=text, cited=cited, model=self.model, prompt_tokens=stream.prompt_tokens,
            new_tokens=stream.new_tokens, first_token_s=(stream.first_at or started) - started,
            total_s=total, sources=used, stopped_at_time_limit=stopped)


class Generator(Writer):
    """One loaded model answering many questions; the HTTP server keeps one alive.

    The writer writes one to three sentences, each ending with the [n] of a given source, by a
    grammar (cited_sentences_regex); other models as they will, and the check keeps what it
    can. Not kept: making the offline SmolLM2 start "According to [n], " by a grammar (written
    for the passages ragdb showed before the blocks): the check drops such a sentence for its
    word "According", and on 8 questions over tests' corpus none of SmolLM2's answers was
    shown with it or without it (the blocks alone each time); the writer's prompt and grammar
    made it copy the worked example and loop.
    """

    def __init__(self, resolved: ResolvedModel, *,
                 time_limit_s: float | None = DEFAULT_TIME_LIMIT_S) -> None:
        import openvino_genai

        super().__init__()
        self.resolved = resolved
        self.model = resolved.name
        small, writer = resolved.offline_fallback, resolved.writer
        self.max_new_tokens = (OFFLINE_MAX_NEW_TOKENS if small else WRITER_MAX_NEW_TOKENS
                               if writer else DEFAULT_MAX_NEW_TOKENS)
        context = (OFFLINE_CONTEXT_TOKENS if small else WRITER_CONTEXT_TOKENS if writer
                   else DEFAULT_CONTEXT_TOKENS)
        self.system_prompt = WRITER_SYSTEM_PROMPT if writer else SYSTEM_PROMPT
        self.examples = WRITER_EXAMPLES if writer else ()
        trained = model_context_length(resolved.path)
        self.context_tokens = min(context, trained) if trained else context
        self.time_limit_s = time_limit_s
        self.prompt_budget = self.context_tokens - self.max_new_tokens
        if self.prompt_budget < DEFAULT_QUESTION_CAP + MIN_SOURCE_BUDGET + 200:
            raise RagdbError(
                f"context of {self.context_tokens} tokens leaves no room for sources after "
                f"{self.max_new_tokens} new tokens: raise the context or lower max_new_tokens"
            )
        started = time.perf_counter()
        try:
            self._pipe = openvino_genai.LLMPipeline(str(resolved.path), "CPU")
        except RuntimeError as exc:
            raise RagdbError(
                f"cannot load model {resolved.name} from {resolved.path}: {first_line(exc)}"
            ) from None
        self.load_s = time.perf_counter() - started
        self.tokenizer = self._pipe.get_tokenizer()
        config = self._pipe.get_generation_config()
        config.max_new_tokens = self.max_new_tokens
        config.do_sample = False
        config.apply_chat_template = False  # we render the template ourselves (enable_thinking)
        config.repetition_penalty = DEFAULT_REPETITION_PENALTY
        config.stop_strings = set(STOP_STRINGS)
        self._config = config
        self._grammar = openvino_genai.StructuredOutputConfig
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
        for _ in range(4):
            messages, used = build_prompt(question, sources, self.count_tokens, budget,
                                          DEFAULT_QUESTION_CAP, self.system_prompt,
                                          self.examples)
            prompt = self.render(messages)
            excess = self.count_tokens(prompt) - self.prompt_budget
            if excess <= 0:
                break
            budget -= excess
        return prompt, used

    def write(self, prompt: str, stream: TokenStream, started: float) -> None:
        import openvino_genai

        status = openvino_genai.StreamingStatus
        # A template that opens a think block itself leaves the model inside it: no grammar.
        stream.raw = "<think>\n" if prompt.rstrip().endswith("<think>") else ""
        self._config.structured_output_config = None if stream.raw or not self.resolved.writer \
            else self._grammar(compound_grammar=self._grammar.Regex(
                cited_sentences_regex(stream.n_sources)))
        error: list[BaseException] = []

        def streamer(piece: str) -> Any:
            # Exceptions (KeyboardInterrupt above all) must not cross the C++ boundary as
            # tracebacks from inside the library: kept, and raised once generate() returned.
            try:
                stream.piece(piece)
            except BaseException as exc:  # noqa: B036 - raised below
                error.append(exc)
                return status.CANCEL
            return status.STOP if stream.looping or stream.timed_out else status.RUNNING

        prefix = stream.raw
        try:
            result = self._pipe.generate([prompt], self._config, streamer)
        except RuntimeError as exc:
            if error:
                raise error[0] from None
            raise RagdbError(f"generation failed: {first_line(exc)}") from None
        if error:
            raise error[0]
        metrics = result.perf_metrics
        stream.prompt_tokens = int(metrics.get_num_input_tokens())
        stream.new_tokens = int(metrics.get_num_generated_tokens())
        finish = list(getattr(result, "finish_reasons", []) or [])
        stream.truncated = (finish[0] == openvino_genai.GenerationFinishReason.LENGTH
                            if finish else stream.new_tokens >= self.max_new_tokens)
        if not stream.looping:
            stream.raw = prefix + result.texts[0]
        if stream.first_at is None:
            stream.first_at = started + float(metrics.get_ttft().mean) / 1000.0


def cited_sentences_regex(n_sources: int) -> str:
    """What the writer may write: one to three sentences (issue 39: the writer narrates over
    the blocks shown beneath), each ending with [n] of a given source next to its full stop,
    before or after it (several may follow each other). No code: the answer's code is the
    blocks', and written code would only be dropped by the check. Allowing only one order of
    stop and citation made the model, stopped at '.', run on into '.Human:' or stop: measured
    on 12 public questions, 10 answers fell back to passages.

    Inside a sentence '.', '!' and '?' may only be followed by more of the word (`vllm.LLM`,
    0.9): the model can end a sentence only by citing. Brackets appear only in citations.
    """
    numbers = "|".join(str(n) for n in range(n_sources, 0, -1))
    cite = f"\\[({numbers})\\]"
    # Printable ASCII by positive classes (xgrammar warns on negated ones): prose without
    # brackets, backticks or sentence ends; what may follow a '.' inside a word.
    word = r"[\x20\x22-\x2d\x2f-\x3e\x40-\x5a\x5c\x5e\x5f\x61-\x7e]"
    after_stop = r"[\x21-\x5a\x5c\x5e\x5f\x61-\x7e]"
    other = "[\u00a0-\uffff]"  # letters and marks beyond ASCII: é, ’, –, →
    text = f"({word}|{other}|[.!?]{after_stop}|`[ -\\x5f\\x61-\\x7e]+`)+"
    end = f"( ?{cite}({cite})*[.!?:]|[.!?:] ?{cite}({cite})*)"
    sentence = text + end
    return f"{sentence}(( |\n|\n\n){sentence}){{0,2}}"
