"""The prompt: numbered sources fitted to the model's context, measured with its own tokenizer."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

from ragdb.errors import RagdbError

if TYPE_CHECKING:  # pragma: no cover - imported lazily at run time (slow, writes telemetry)
    import openvino_genai

    from ragdb.retrieve import Hit

SYSTEM_PROMPT = (
    "You answer questions about a software project using only the numbered sources you are "
    "given. Answer concisely, in a few sentences. Cite the sources that support each statement "
    "by their numbers in square brackets, like [1] or [2]. Do not use outside knowledge. If the "
    "sources do not contain the answer, say plainly that the sources do not contain it."
)
# The writer (Qwen2.5-Coder-1.5B) sees only the blocks the answer shows beneath its sentences
# (generate/styles.py) and must cite every sentence: its sentences are checked against the
# cited block afterwards, so what it should write is the answer in the source's own words, not
# a paraphrase of the question; code it writes is dropped (the blocks show the code).
WRITER_SYSTEM_PROMPT = (
    "You answer questions about a software project using only the numbered sources given. "
    "Write one to three short sentences that give the answer itself: the value, name, flag, "
    "command or steps the question asks for, or where and how the code does it, in the words "
    "of the source. Do not repeat the "
    "question. End every sentence with the number of the source it comes from, like [1], and "
    "never write about the sources themselves. Copy names, flags, paths and numbers exactly "
    "as the sources write them, in backticks. Write no code blocks: the sources are shown in "
    "full below your sentences. If the sources do not give the answer, write only: The "
    "sources do not say. [1]"
)
QUESTION_PREFIX = "Question: "
# One worked example before the question, about a made-up project (the check drops anything
# taken from it). On the 65 tuning questions (benchmarks/bench_writer.py), with the prompt
# before it 7 drafts ended a sentence on the citation instead of the value ("The default is
# [1].") and none with it.
WRITER_EXAMPLES = ((
    "Sources:\n\n[1] docs/serve.md:12-15\nThe server listens on port 8080 unless `--port` "
    "is given. Set `ACME_LOG=debug` to log every request.\n\n[2] acme/config.py:40-41\n"
    "def load(path: str, strict: bool = False) -> Config:\n    return parse(path, strict)"
    "\n\nQuestion: Which port does the server use by default, and how do I change it?\n\n"
    "Answer the question using the sources above, citing them like [1].",
    "By default the server listens on port 8080 [1]. Pass `--port` to use another port [1].",
),)
# Not kept: a second example in which the source does not answer ("The sources do not say.
# [1]") made the writer say so for 23 of the 65 tuning questions, most of which their passages
# did answer (without it, for none); a question half answered ("... The sources do not say how
# long logs are kept [1].") gave 40 supported sentences and 29 unsupported against 44 and 26,
# and 19 answers falling back to passages against 15 (the tuner's labels, labels.json).
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
# The writer's prompt is the answer's blocks: on 2 cores its prefill runs at tens of tokens a
# second, so a short prompt is what keeps the first token within seconds (the first block is
# cut at a line boundary where it does not fit, a second one that does not fit is left out);
# four short cited sentences fit in the new tokens. (Measured on the passages ragdb showed
# before the blocks, of at most ~1,000 characters: a 2,048-token window was not kept.)
WRITER_CONTEXT_TOKENS = 1024
WRITER_MAX_NEW_TOKENS = 176
# Wall-clock seconds a model may write for (any model): the 30 s an answer, less the
# passages' choice and the check. On an AVX2-only host the writer decodes a few tokens a
# second, and its slowest answers ran past 40 s; stopped here, the finished sentences are
# checked as those of an answer cut by max_new_tokens are.
DEFAULT_TIME_LIMIT_S = 25.0
# > 1.0 sent SmolLM2 off the rails (it must repeat the sources' words): loops are cut in code.
DEFAULT_REPETITION_PENALTY = 1.0
MIN_SOURCE_BUDGET = 64


@dataclass(frozen=True)
class PromptSource:
    """One retrieved chunk with its text, as the prompt numbers and cites it."""

    file_path: str
    first: int
    last: int
    start_line: int
    end_line: int
    text: str
    score: float = 0.0  # the search's fused score (blocks.MARGIN reads the ranking's margin)


def _source_block(number: int, source: PromptSource) -> str:
    """`[1] path:45-80` and the source's text."""
    text = source.text.strip("\n")
    return f"[{number}] {source.file_path}:{source.start_line}-{source.end_line}\n{text}"


def _user_content(question: str, blocks: list[str]) -> str:
    sources = "\n\n".join(blocks)
    return f"Sources:\n\n{sources}\n\n{QUESTION_PREFIX}{question}\n\n{ANSWER_CUE}"


def cap_question(question: str, count_tokens: Callable[[str], int], cap: int) -> str:
    """Keep at most `cap` tokens of the question, cutting between words, never inside one."""
    question = " ".join(question.split())
    if count_tokens(question) <= cap:
        return question
    words = question.split(" ")
    return " ".join(words[:_longest(len(words),
                                    lambda n: count_tokens(" ".join(words[:n])) <= cap)])


def _longest(count: int, fits: Callable[[int], bool]) -> int:
    """The largest n in 0..count with fits(n), for a `fits` that holds up to some n and no
    further (a binary search; fits(0) is never asked)."""
    low, high = 0, count  # invariant: fits(low)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


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
        return _longest(len(pieces), lambda n: fits(
            head(joiner.join(pieces[:n]), 1 if joiner == " " else n)))

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
    system_prompt: str = SYSTEM_PROMPT,
    examples: tuple[tuple[str, str], ...] = (),
) -> tuple[list[dict[str, str]], list[PromptSource]]:
    """Chat messages holding as many whole sources as `budget` tokens allow, in rank order.

    Sources are numbered [1]..[n] in the order given; the first one is cut at a line boundary
    when it does not fit whole, later ones are left out whole so numbers keep their rank.
    `examples` are (question turn, answer turn) pairs shown before the question.
    """
    question = cap_question(question, count_tokens, question_cap)
    system_tokens = count_tokens(system_prompt) + sum(
        count_tokens(user) + count_tokens(assistant) for user, assistant in examples)

    def total(blocks: list[str]) -> int:
        return system_tokens + count_tokens(_user_content(question, blocks))

    def fits(candidate: PromptSource) -> bool:  # as the only source
        return total([_source_block(1, candidate)]) <= budget

    used: list[PromptSource] = []
    running = total([])
    for source in sources:
        number = len(used) + 1
        cost = count_tokens(_source_block(number, source) + "\n\n")
        if running + cost <= budget:
            used.append(source)
            running += cost
            continue
        if not used:
            head = _truncate_source(source, fits)
            if head is not None:
                used.append(head)
        break
    # Token counts of pieces do not add up exactly (merges across the joins): measure the
    # whole and drop from the end until it fits.
    while used and total([_source_block(i, s) for i, s in enumerate(used, 1)]) > budget:
        if len(used) == 1:
            head = _truncate_source(used[0], fits)
            used = [head] if head is not None else []
        else:
            used.pop()
    blocks = [_source_block(i, s) for i, s in enumerate(used, 1)]
    messages = [{"role": "system", "content": system_prompt}]
    for user, assistant in examples:
        messages += [{"role": "user", "content": user},
                     {"role": "assistant", "content": assistant}]
    messages.append({"role": "user", "content": _user_content(question, blocks)})
    return messages, used


def render_chat(tokenizer: openvino_genai.Tokenizer, messages: list[dict[str, str]]) -> str:
    """Apply the model's chat template, with thinking turned off where the template has it.

    Qwen3's template emits an empty `<think>\\n\\n</think>` block when enable_thinking is false,
    which makes it answer at once instead of reasoning for hundreds of tokens first.
    """
    template = tokenizer.chat_template
    if not template.strip():
        raise RagdbError("the model has no chat template: use an instruction-tuned model")
    extra: dict[str, Any] = {"enable_thinking": False} if "enable_thinking" in template else {}
    return tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, chat_template=template, extra_context=extra
    )


def prompt_source(hit: Hit) -> PromptSource:
    """A retrieved chunk as the prompt shows it."""
    return PromptSource(
        file_path=hit.file_path, first=hit.first, last=hit.last,
        start_line=hit.start_line, end_line=hit.end_line, text=hit.text, score=hit.score,
    )
