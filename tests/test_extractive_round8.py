"""Extractive answers, round 8 of issue 19: a code window that stops before the key fact.
Real chunks: psutil's psutil/arch/posix/pids.c (as the repository index cuts it) and click's
`get_app_dir` (src/click/utils.py, the whole function); every passage stays verbatim."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ragdb.generate.answer_signals import question_platforms
from ragdb.generate.extractive import SourceText
from ragdb.generate.extractive import compose
from ragdb.generate.passage_choice import DEFAULT_SETTINGS, select_passages
from ragdb.generate.spans import line_spans
from tests.test_extractive_choice import check_verbatim
from ragdb.generate.code_window import platform_branches
from tests.test_extractive_coherence import answer, code_lines, source

PIDS_C = ("psutil_posix_pids", "psutil/psutil/arch/posix/pids.c", "c")
APP_DIR = Path(__file__).parent / "sources" / "click_utils_get_app_dir.txt"


def app_dir() -> SourceText:
    return SourceText(1, "click/src/click/utils.py", "python", APP_DIR.read_text())


def test_a_window_grows_to_the_end_of_the_function_it_lies_in() -> None:
    """The window of `psutil_pid_exists` stopped after `if (ret == 0)` (a `...` below): with
    `window_whole_chars` 1000 (off by default: it cost code tuning F1 0.187 -> 0.180) the
    `kill(pid, 0)` result and its ESRCH / EPERM cases, the rest of the function, are shown, to
    the closing brace; by default the window stops as before."""
    question = "How does `psutil_pid_exists` decide whether a given process id exists?"
    sources = [source(*PIDS_C, number=1)]
    assert "    if (errno == EPERM)" not in code_lines(answer(question, sources))
    passages = select_passages(question, sources,
                               settings=replace(DEFAULT_SETTINGS, window_whole_chars=1000))
    check_verbatim(passages, sources)
    lines = code_lines(compose(passages)[0])
    assert "    ret = kill(pid, 0);" in lines
    assert "    if (errno == EPERM)" in lines
    assert lines[-1] == "}"


def test_a_question_names_operating_systems_by_their_proper_names() -> None:
    assert question_platforms("Where is it on Linux, and on Windows?") == {"linux", "windows"}
    assert question_platforms("What does the sliding window size default to?") == frozenset()
    assert question_platforms("Which path on macOS?") == {"macos"}


def test_branches_whose_condition_names_an_operating_system() -> None:
    """`if WIN:` and `if sys.platform == "darwin":` are platform branches, with their bodies;
    `if force_posix:` names none."""
    text = app_dir().text
    lines = line_spans(text)
    found = {text[slice(*lines[n])].strip(): (last - n, named)
             for n, last, named in platform_branches(text, lines)}
    assert found == {"if WIN:": (5, {"windows"}),
                     'if sys.platform == "darwin":': (3, {"macos"})}


def test_a_window_shows_the_branch_of_the_platform_asked_not_another() -> None:
    """Asked about macOS, the `get_app_dir` window held the Windows branch (its `folder`
    lines share the question's words): a branch for another operating system scores
    nothing: the answer shows the macOS folder (from the `darwin` branch or the docstring's
    list), no line of the Windows branch."""
    text = answer("Which folder does `get_app_dir` give for an app on macOS?", [app_dir()])
    lines = code_lines(text)
    assert "Library/Application Support" in text
    assert "    if WIN:" not in lines
    assert '        key = "APPDATA" if roaming else "LOCALAPPDATA"' not in lines


def test_the_platform_asked_keeps_its_own_branch() -> None:
    """Asked about Windows, the Windows branch stays the window, and the `darwin` branch is
    not grown into."""
    text = answer("What folder does `get_app_dir` return on Windows when roaming is off?",
                  [app_dir()])
    lines = code_lines(text)
    assert '        key = "APPDATA" if roaming else "LOCALAPPDATA"' in lines
    assert '    if sys.platform == "darwin":' not in lines
