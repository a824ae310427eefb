"""Extractive answers, round 7 of issue 19: a question that writes an identifier of the code
(`psutil_pid_exists`) and asks how it works was answered by the docs sentence on what the
Python function is for, while the retrieved C file defines it. Real chunks of psutil (its
docs/index.rst and psutil/arch/posix/pids.c, as the repository index cuts them); every
passage stays verbatim (check_verbatim)."""

from __future__ import annotations

from ragdb.generate.answer_signals import asked, defined_names, signals
from ragdb.generate.passage_choice import select_passages
from tests.test_extractive_choice import check_verbatim
from tests.test_extractive_coherence import answer, source

DOCS = ("psutil_index_pid_exists", "psutil/docs/index.rst", "rst")
PIDS_C = ("psutil_posix_pids", "psutil/psutil/arch/posix/pids.c", "c")


def test_c_function_heads_are_definitions() -> None:
    """`int\\npsutil_pid_exists(pid_t pid) {` defines the function; a call or a prototype
    (`;`) and an indented `if (...) {` do not."""
    code = source(*PIDS_C).text
    names = defined_names(code)
    assert {"psutil_pid_exists", "has_pid_zero"} <= names
    assert "kill" not in names and "if" not in names
    assert defined_names("int psutil_pid_exists(pid_t pid);\n") == set()


def test_code_defining_an_identifier_the_question_writes_answers_how() -> None:
    """The docs sentence ("Check whether the given PID exists ...") shares the question's
    words and came first; the C function the question names by its identifier holds how."""
    question = "In what way does `psutil_pid_exists` tell whether a process id is in use?"
    sources = [source(*DOCS, number=1), source(*PIDS_C, number=2)]
    text = answer(question, sources)
    assert "psutil_pid_exists(pid_t pid) {" in text
    assert "[2]" in text
    assert not text.startswith("Check whether the given PID")


def test_an_identifier_defined_by_no_source_changes_nothing() -> None:
    """A written identifier that no retrieved code defines (`pid_exists_fast`) leaves prose
    and code weighed as before: the docs sentence answers."""
    question = "How does `pid_exists_fast` check whether a PID exists?"
    sources = [source(*DOCS, number=1), source(*PIDS_C, number=2)]
    passages = select_passages(question, sources)
    check_verbatim(passages, sources)
    assert passages[0].number == 1
    assert "Check whether the given PID exists" in passages[0].text


def test_class_names_and_constants_are_not_identifiers() -> None:
    """PascalCase names a class as the place of the question (its head seldom answers;
    `routines` reads "X's forward method"), ALL_CAPS a constant, a dunder every class."""
    ask = asked("What does HybridKVCacheCoordinator check in `__init__` for VLLM_RPC_TIMEOUT "
                "and get_num_new_matched_tokens or `getAppDir`?")
    assert ask.identifiers == {"get_num_new_matched_tokens", "getappdir"}
    code = "def get_num_new_matched_tokens(self, request):\n    return 0\n"
    sig = signals(ask, code, code, code=True, listed=False)
    assert sig.identifiers == {"get_num_new_matched_tokens"}
