"""Defects the third first-hour walkthrough found, each on real things: the CLI as a
subprocess, a real rag.db (SQLite, sqlite-vec), the real parsers."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import index_rows, run_cli


def _indexed(db: Path) -> list[str]:
    return [path for path, _sha, _size in index_rows(db)["files"]]


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_an_absolute_exclude_or_include_is_read_under_the_root(tmp_path: Path) -> None:
    """`ragdb index proj --exclude $PWD/proj/tests/*` (a path as the shell completes it)
    excluded nothing: an absolute glob is read as the path under the root it lies in, as the
    search filters read one; a folder named without a trailing '/' is the folder, and a file
    named by its absolute path is that file, not every file of its name."""
    proj = tmp_path / "proj"
    _write(proj, {"src/app.py": "def run():\n    return 1\n",
                  "src/setup.py": "def build():\n    return 2\n",
                  "setup.py": "def setup():\n    return 3\n",
                  "tests/test_app.py": "def test_run():\n    assert True\n",
                  "vendor/lib.py": "def lib():\n    return 4\n",
                  "poetry.lock": "[[package]]\nname = \"x\"\n"})
    done = run_cli("index", "proj", "--no-vectors",
                   "--exclude", f"{proj}/tests/*", "--exclude", f"{proj}/vendor",
                   "--exclude", f"{proj}/setup.py", "--include", f"{proj}/poetry.lock",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    assert _indexed(db) == ["proj/poetry.lock", "proj/src/app.py", "proj/src/setup.py"]
    # Re-indexing the recorded root walks with the same (absolute) globs.
    (proj / "tests" / "test_more.py").write_text("def test_more():\n    pass\n")
    again = run_cli("index", "--no-vectors", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert _indexed(db) == ["proj/poetry.lock", "proj/src/app.py", "proj/src/setup.py"]


def _gnu_function() -> str:
    """A 90-line C function in GNU style (its return type on the line above its name) whose
    branch on `retry_after` lies deep inside."""
    body = [f"  step_{i} = compute_step ({i}, payload);" for i in range(40)]
    branch = ["  if (response->status == 429)",
              "    {",
              "      /* The server asks to wait: honour its Retry-After header.  */",
              "      retry_after = parse_retry_after (response);",
              "      if (retry_after > MAX_BACKOFF_SECONDS)",
              "        return rate_limited (retry_after);",
              "      sleep (retry_after);",
              "    }"]
    tail = [f"  record_{i} = finish_step ({i}, payload);" for i in range(40)]
    return ("#include <unistd.h>\n\n#define MAX_BACKOFF_SECONDS 30\n\n"
            "static int\n"
            "send_request (struct payload *payload, int attempt)\n"
            "{\n"
            "  struct response *response = transport_post (payload);\n"
            + "\n".join(body + branch + tail) + "\n  return response->status;\n}\n")


def test_a_gnu_style_c_signature_head_holds_the_name_line(tmp_path: Path) -> None:
    """A C function whose return type is on the line above its name (`static int` /
    `send_request (...)`), cut to the region that answers, was headed by `static int` alone:
    the head holds the name line too, and the block is named after the function."""
    _write(tmp_path / "proj", {"src/client.c": _gnu_function()})
    done = run_cli("index", "proj", "--db", "rag.db", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    asked = run_cli("answer", "What happens when the server answers 429 with a retry_after "
                    "longer than MAX_BACKOFF_SECONDS?", "--db", "rag.db", "--k", "3",
                    "--json", cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    shown = json.loads(asked.stdout)
    block = shown["blocks"][0] if "blocks" in shown else shown["shown"]["blocks"][0]
    assert block["signature_lines"] == [5, 6], block
    text = shown["answer"]
    assert "static int\nsend_request (struct payload *payload, int attempt)\n  ...\n" in text
    assert "`send_request`" in text
