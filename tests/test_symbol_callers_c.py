"""The "Called from" line under a code block names the callers of the function the block shows,
and only those (repos5's readers found it naming another function's): a C function whose
`#ifdef`s and computed gotos break the parse ends at its own `}` (it ran to the file's end and
took every later function in), a name each of several files defines and calls for itself
(`static int exec()`) is called there by that file alone, and a block that only overlaps a
definition, without showing where it starts, names no callers. On a real index of small C
files built by the real `ragdb index`."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ragdb import RagDB
from ragdb.db import connect
from ragdb.generate.blocks import BlocksAnswerer, Definition, Located
from ragdb.generate.prompt import PromptSource
from ragdb.navigate import callers_of
from ragdb.symbols import extract
from tests.conftest import run_cli, write_corpus

#: A bytecode loop as Oniguruma's match_at writes it: a brace opened in one `#ifdef` branch
#: and closed in another, labels taken by address, `CASE_OP(X) {` (which the parser reads as
#: a function `X` inside it); then two plain functions.
OPS_C = """\
#include <stdio.h>

/* match from the start, the way match_at does */
static int
interp(regex_t* reg, int n, void* region)
{
#if defined(USE_DIRECT_THREADED_CODE)
  static Operation FinishCode[] = { { .opaddr=&&L_FINISH } };
#else
  static Operation FinishCode[] = { { OP_FINISH } };
#endif
  int best = 0;

  if (region) {
#ifdef USE_POSIX_API
    if (OPTON_POSIX_REGION(n)) {
      best = 1;
    }
    else {
#endif /* USE_POSIX_API */
      best = 2;
#ifdef USE_POSIX_API
    }
#endif
  }
  goto *FinishCode[0].opaddr;

    CASE_OP(WORD_BOUNDARY)
      {
        UChar c;

        c = best;
        best = c + 1;
      }
      JUMP_OUT;

    CASE_OP(BEGIN_LINE)
      if (n > 2) {
        INC_OP;
        JUMP_OUT;
      }
 L_FINISH:
  return best;
}

int
scan_forward(int x)
{
  /* scan forward over the subject string */
  return interp(0, x, 0);
}

int
scan_twice(int y)
{
  return scan_forward(y) + scan_forward(y + 1);
}
"""


def _harness(kind: str) -> str:
    """A fuzzing harness that defines its own `exec` and calls it (as Oniguruma's do)."""
    return (f"static int\nexec(int {kind}_input)\n{{\n"
            f"  /* run one {kind} pattern over the input */\n"
            f"  return {kind}_input * 2;\n}}\n\n"
            f"int\nLLVMFuzzerTestOneInput(const unsigned char* data, int size)\n{{\n"
            f"  return exec(size);\n}}\n")


FILES = {
    "src/ops.c": OPS_C,
    "src/fuzz/base.c": _harness("base"),
    "src/fuzz/regset.c": _harness("regset"),
    # calls an `exec` it does not define: a caller of either, as far as the index can tell
    "src/app/main.c": "int exec(int);\n\nint\nmain(void)\n{\n  return exec(3);\n}\n",
}


def rows(db: Path, query: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(query).fetchall()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("callers_c")
    write_corpus(root, FILES)
    done = run_cli("index", "src", "--no-vectors", "--db", "rag.db", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def test_a_body_broken_by_ifdefs_ends_at_its_own_brace() -> None:
    found = extract(OPS_C, "c", Path("ops.c"), "ops.c")
    assert found is not None
    functions = {s.name: s for s in found.symbols if s.kind == "function"}
    assert sorted(functions) == ["interp", "scan_forward", "scan_twice"]  # no WORD_BOUNDARY
    lines = OPS_C.splitlines()
    assert (functions["interp"].start_line, functions["interp"].end_line) == (5, 44)
    assert lines[43] == "}"
    for name, start, end in [("scan_forward", 47, 51), ("scan_twice", 54, 57)]:
        assert (functions[name].start_line, functions[name].end_line) == (start, end)
        assert functions[name].parent == -1, name  # its own definition, not interp's


def test_the_index_holds_each_function_at_its_own_lines(indexed: Path) -> None:
    got = rows(indexed / "rag.db",
               "SELECT name, start_line, end_line, parent_id IS NULL FROM symbols "
               "WHERE qualified IN ('interp', 'scan_forward', 'scan_twice') ORDER BY start_line")
    assert got == [("interp", 5, 44, 1), ("scan_forward", 47, 51, 1), ("scan_twice", 54, 57, 1)]


def test_a_file_that_defines_the_name_calls_its_own(indexed: Path) -> None:
    done = run_cli("callers", "exec", "--db", "rag.db", cwd=indexed)
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == [
        "src/app/main.c", "src/fuzz/base.c", "src/fuzz/regset.c"]  # every exec's callers
    with closing(connect(indexed / "rag.db")) as conn:
        for home in ("src/fuzz/base.c", "src/fuzz/regset.c"):
            places, total = callers_of(conn, "exec", 5, home=home)
            assert [(p.path, p.qualified) for p in places] == [
                ("src/app/main.c", "main"), (home, "LLVMFuzzerTestOneInput")], home
            assert total == 2
        everyone, total = callers_of(conn, "exec", 5)
        assert total == 3 and len(everyone) == 3


def test_the_block_line_names_the_shown_functions_callers(indexed: Path) -> None:
    with RagDB(indexed / "rag.db", use_cache=False) as rag:
        answer = rag.answer("How does scan_forward scan forward over the subject string?",
                            k=5, mode="lexical")
        assert answer.shown is not None
        block = answer.shown["blocks"][0]
        assert block["file_path"] == "src/ops.c"
        # scan_twice's call: scan_forward's caller, not interp's (scan_forward, line 50,
        # when interp ran to the file's end and held it)
        assert block["callers"] == "Called from `src/ops.c:56`."
        answer = rag.answer("How does the regset harness run one regset pattern in exec?",
                            k=5, mode="lexical")
        assert answer.shown is not None
        block = answer.shown["blocks"][0]
        assert block["file_path"] == "src/fuzz/regset.c"
        assert block["callers"] == "Called from `src/app/main.c:6`, `src/fuzz/regset.c:11`."


def test_a_block_that_does_not_show_a_definitions_start_names_no_callers() -> None:
    """A block of lines deep in a 200-line definition, with no signature over it (as a wrong
    extent gave): it is not shown as that definition, so it names none of its callers."""
    text = "def prepare():\n    pass\n\n\ndef long_loop():\n" + "".join(
        f"    step_{i} = run({i})\n" for i in range(200))
    lines = text.split("\n")
    about = Definition("long_loop", 4, 204, ("src/a.py:9",), 1, start=4)

    def located(source: PromptSource) -> Located:
        return Located(text=text, language="python", definitions=(about,))

    first = text.index("    step_150 ")
    source = PromptSource("src/loop.py", first, first + len(lines[155]) + 1, 156, 156,
                          lines[155] + "\n", score=1.0)
    blocks, _notes = BlocksAnswerer(located).build("What does step_150 run?", [source])
    block = blocks[0]
    assert block.start_line > 6 and not block.heads and block.callers == ""
    # Shown from its name's line, or under it, it names them; under the line above (C's
    # `static int` over a GNU-style name), it does not.
    assert about.shown_in(4, 10, []) and about.shown_in(20, 30, [4])
    gnu = Definition("exec", 143, 244, ("regset.c:346",), 1, start=144)
    assert not gnu.shown_in(208, 237, [143]) and gnu.shown_in(208, 237, [143, 144])
    assert not about.shown_in(20, 30, [1]) and not about.shown_in(0, 3, [])


def test_postgresql_names_the_same_callers(indexed: Path, pg_url: str) -> None:
    assert run_cli("index", "src", "--no-vectors", "--db", pg_url, cwd=indexed).returncode == 0
    lite = run_cli("callers", "exec", "--db", "rag.db", cwd=indexed)
    pg = run_cli("callers", "exec", "--db", pg_url, cwd=indexed)
    assert (pg.returncode, pg.stdout) == (lite.returncode, lite.stdout)
    with closing(connect(indexed / "rag.db")) as sqlite, closing(connect(pg_url)) as post:
        for home in ("src/fuzz/base.c", None):
            assert callers_of(post, "exec", 5, home=home) == callers_of(sqlite, "exec", 5,
                                                                        home=home)
