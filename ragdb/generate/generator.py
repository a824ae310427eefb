"""The generator: one loaded OpenVINO GenAI pipeline answering from numbered sources."""

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
    LEAD_CITATION_PREFIX,
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


class _Streamer:
    """The callback handed to LLMPipeline.generate: forwards clean text, stops on loops.

    Exceptions (KeyboardInterrupt above all) must not cross the C++ boundary as tracebacks
    from inside the library, so they are kept and re-raised once generate() has returned.
    """

    def __init__(
        self, n_sources: int, on_token: Callable[[str], None] | None, prefix: str,
        deadline: float | None = None,
    ) -> None:
        import openvino_genai

        self._status = openvino_genai.StreamingStatus
        self.n_sources = n_sources
        self.on_token = on_token
        self.raw = prefix
        self.emitted = ""
        self.first_piece_at: float | None = None
        self.looping = False
        self.deadline = deadline  # time.perf_counter() past which writing stops
        self.timed_out = False
        self.error: BaseException | None = None

    def __call__(self, piece: str) -> Any:
        try:
            now = time.perf_counter()
            if self.first_piece_at is None:
                self.first_piece_at = now
            self.raw += piece
            view, self.looping = stream_view(self.raw, self.n_sources)
            self.emit(view)
            self.timed_out = self.deadline is not None and now >= self.deadline
            return self._status.STOP if self.looping or self.timed_out else self._status.RUNNING
        except BaseException as exc:  # noqa: B036 - re-raised by Generator.answer
            self.error = exc
            return self._status.CANCEL

    def emit(self, view: str) -> None:
        if self.on_token is not None and view.startswith(self.emitted):
            delta = view[len(self.emitted):]
            if delta:
                self.emitted = view
                self.on_token(delta)


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
        time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
    ) -> None:
        import openvino_genai

        self.resolved = resolved
        self.model = resolved.name
        small = resolved.offline_fallback
        self.max_new_tokens = max_new_tokens or (
            OFFLINE_MAX_NEW_TOKENS if small
            else WRITER_MAX_NEW_TOKENS if resolved.writer else DEFAULT_MAX_NEW_TOKENS
        )
        context = context_tokens or (
            OFFLINE_CONTEXT_TOKENS if small
            else WRITER_CONTEXT_TOKENS if resolved.writer else DEFAULT_CONTEXT_TOKENS
        )
        self.system_prompt = WRITER_SYSTEM_PROMPT if resolved.writer else SYSTEM_PROMPT
        self.examples = WRITER_EXAMPLES if resolved.writer else ()
        trained = model_context_length(resolved.path)
        self.context_tokens = min(context, trained) if trained else context
        self.question_cap = question_cap
        self.lead_citation = small if lead_citation is None else lead_citation
        self.time_limit_s = time_limit_s  # None: no limit but max_new_tokens
        self.prompt_budget = self.context_tokens - self.max_new_tokens
        if self.prompt_budget < question_cap + MIN_SOURCE_BUDGET + 200:
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
                question, sources, self.count_tokens, budget, self.question_cap,
                self.system_prompt, self.examples,
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

    def _set_writer_grammar(self, n_sources: int) -> None:
        """Every sentence of the writer's answer ends citing one of the given sources."""
        grammar = self._grammar
        self._config.structured_output_config = grammar(
            compound_grammar=grammar.Regex(cited_sentences_regex(n_sources))
        )

    def answer(
        self,
        question: str,
        sources: list[PromptSource],
        on_token: Callable[[str], None] | None = None,
    ) -> GeneratedAnswer:
        """Answer from `sources` only; Ctrl-C raises KeyboardInterrupt once generation stops.
        Writing stops `time_limit_s` after the call (a slow host must not hold an answer, or
        the HTTP request waiting on it, for a minute): what was finished by then stands."""
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
            deadline = (started + self.time_limit_s if self.time_limit_s is not None
                        else None)
            streamer = _Streamer(len(used), on_token, prefix, deadline)
            if self.resolved.writer and not thinking:
                self._set_writer_grammar(len(used))
            else:
                self._set_grammar(len(used) if lead else 0)
            try:
                result = self._pipe.generate([prompt], self._config, streamer)
            except RuntimeError as exc:
                if streamer.error is not None:
                    raise streamer.error from None
                raise RagdbError(f"generation failed: {first_line(exc)}") from None
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
        truncated = (truncated or streamer.timed_out) and not streamer.looping
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
            stopped_at_time_limit=streamer.timed_out and not streamer.looping,
        )


def cited_sentences_regex(n_sources: int, max_units: int = 3) -> str:
    """What the writer may write: one to `max_units` sentences (issue 39: the writer narrates
    in one to three over the blocks shown beneath), each ending with [n] of a given source
    next to its full stop, before or after it (several may follow each other). No code: the
    answer's code is the blocks', and written code would only be dropped by the check. Allowing
    only one order of stop and citation made the model, stopped at '.', run on into '.Human:'
    or stop: measured on 12 public questions, 10 answers fell back to passages.

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
    return f"{sentence}(( |\n|\n\n){sentence}){{0,{max_units - 1}}}"


def _finish_reason_length() -> Any:
    import openvino_genai

    return openvino_genai.GenerationFinishReason.LENGTH
