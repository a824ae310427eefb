"""Every example of README.md and docs/*.md runs, so the docs cannot drift from the program.

The fenced blocks are read from the Markdown and run against a real project: a copy of this
checkout's `ragdb/` and `docs/` folders, indexed once per session with the real models (what
the README's first example does), with `ragdb` and `python` of this environment on PATH.

Conventions a doc writer follows (docs/development.md says the same):

- ```console blocks are transcripts. A line starting with `$ ` is a command (a line ending in
  `\\` continues it); the lines after it, up to the next command, are its output as the
  terminal shows it (stdout and stderr together). The output must match line for line, except
  that any number matches any number (counts, scores, timings, line numbers), `...` inside a
  line matches any text, and a line that is only `...` stands for any number of lines. A command
  must exit 0, unless its whole output is one line starting with `ragdb: ` (an error: then it
  must fail). `ragdb serve` and `datasette` commands are started in the background and stopped
  when the block ends; their output is not compared.
- ```bash / ```sh blocks are scripts, run with `set -euo pipefail`; their output is not compared.
- The shell blocks of one file run in order in one shell session: what a block exports and the
  folder it `cd`s into carry over to the next block of the same file (as in a reader's
  terminal). Every file starts in the shared project; a block that changes the shared index
  must put it back.
- Port 8001 (`127.0.0.1:8001`, `localhost:8001`, `--port 8001`, and a bare `ragdb serve`) is
  replaced by a free port: the block's own server if it starts one, else a `ragdb serve` the
  tests start on the shared project. `/path/to/ragdb` is this checkout.
- ```json blocks must parse. A JSON block right after a shell block whose last command is a
  `curl` is that response's example: each key it shows must be in the real response. MCP
  client configurations (`mcpServers`, `servers`) are spawned from an empty folder and must
  answer a search without writing there; plugin settings, dataset and results files are read
  by ragdb's own parsers.
- ```sql blocks run against the index the file's shell session names (`$RAGDB_DB`, a rag.db or
  a PostgreSQL URL; else data/processed/rag.db); ```python blocks run with `python -`.
- A block that cannot run here carries `<!-- example: not run (the reason) -->` on the line
  right above its fence.
- A `ragdb ...` in backticks in the prose names a real command and real options; one a reader
  types as it is (no synopsis word such as NAME, not a bare command name and options) is run
  by a fenced example or by INLINE_RUN below, or INLINE_NOT_RUN says why not.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import free_port, models_dir_without_writer

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

SHELL = {"bash", "sh", "console"}
RUN = SHELL | {"json", "sql", "python"}
SHOWN = {"text", "mermaid"}  # pictures and output samples: nothing to run
NOT_RUN = re.compile(r"^<!-- example: not run \((?P<why>[^)]{10,}.*)\) -->$")
FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
PLACEHOLDER = "/path/to/ragdb"
PROJECT = "/path/to/your/project"  # the shared project, where MCP configurations name it


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # of the opening fence, 1-based
    end: int  # of the closing fence
    lang: str
    text: str
    not_run: str | None  # the reason given in the marker above it

    @property
    def name(self) -> str:
        return f"{self.doc}:{self.line}"


def read_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with the not-run marker right above each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    doc = path.relative_to(REPO).as_posix()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence = opening["fence"]
        end = i + 1
        while end < len(lines) and not (
            lines[end].startswith(fence[0] * len(fence))
            and not lines[end].strip(fence[0]).strip()
        ):
            end += 1
        marker = NOT_RUN.match(lines[i - 1].strip()) if i else None
        blocks.append(Block(doc, i + 1, end + 1, opening["info"].strip().split(" ")[0],
                            "\n".join(lines[i + 1:end]) + "\n", marker["why"] if marker else None))
        i = end + 1
    return blocks


ALL = [block for path in DOCS for block in read_blocks(path)]


def _runnable(*langs: str) -> list[Any]:
    return [pytest.param(b, id=b.name) for b in ALL if b.lang in langs and b.not_run is None]


# -- reading transcripts ------------------------------------------------------------------------

@dataclass
class Command:
    text: str
    expected: list[str] = field(default_factory=list)


def transcript(text: str) -> list[Command]:
    """The commands of a console block, each with the output lines shown after it."""
    commands: list[Command] = []
    continued = False
    for line in text.splitlines():
        if continued:
            commands[-1].text += "\n" + line
        elif line.startswith("$ "):
            commands.append(Command(line[2:]))
        elif commands:
            commands[-1].expected.append(line.rstrip())
        elif line.strip():
            raise AssertionError(f"output before the first command: {line!r}")
        continued = bool(commands) and line.endswith("\\") and (
            continued or line.startswith("$ "))
    for command in commands:
        while command.expected and not command.expected[-1]:
            command.expected.pop()
    return commands


NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _line_pattern(line: str) -> str:
    """One expected line as a regex: numbers match any number, `...` any text."""
    out = []
    for part in re.split(r"(\.\.\.|\d+(?:[.,]\d+)*)", line):
        if part == "...":
            out.append(".*?")
        elif NUMBER.fullmatch(part):
            out.append(r"-?\d+(?:[.,]\d+)*")
        else:
            out.append(re.escape(part))
    return "".join(out)


def output_matches(expected: list[str], output: str) -> bool:
    """Whether the output is what the doc shows, by the conventions above."""
    actual = [line.rstrip() for line in output.splitlines()]
    while actual and not actual[-1]:
        actual.pop()
    pattern = "".join("(?:[^\n]*\n)*?" if line.strip() == "..." else _line_pattern(line) + "\n"
                      for line in expected)
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual)) is not None


def is_error_line(expected: list[str]) -> bool:
    return len(expected) == 1 and expected[0].startswith("ragdb: ")


# -- running shell blocks -----------------------------------------------------------------------

SERVE = re.compile(r"^(?:uv run (?:--frozen )?)?(?:ragdb serve|datasette)\b")
MARK = "@@ragdb-docs@@"

WAIT_SERVING = """
import sys, time, urllib.request
deadline = time.monotonic() + 90
while True:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/-/ragdb/status", timeout=5)
        break
    except Exception:
        if time.monotonic() > deadline:
            sys.exit("the server did not answer within 90 s")
        time.sleep(0.2)
"""


RUN_SQL = """
import os, sys
statements = [s for s in sys.stdin.read().split(";\\n") if s.strip(" \\n;")]
where = os.environ.get("RAGDB_DB") or "data/processed/rag.db"
if where.startswith(("postgresql://", "postgres://")):
    import psycopg
    with psycopg.connect(where) as conn:
        for statement in statements:
            print(conn.execute(statement).fetchall())
else:
    import apsw, sqlite_vec
    conn = apsw.Connection(where, flags=apsw.SQLITE_OPEN_READONLY)
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    for statement in statements:
        print(conn.execute(statement).fetchall())
"""


@dataclass
class Ran:
    commands: list[tuple[str, int, str]]  # command, exit status, output
    rc: int
    output: str
    ok: bool = True  # every command exited as the doc says it does


class Runner:
    """Runs the shell blocks of each file in order, in one shell session per file."""

    def __init__(self, project: Path, env: dict[str, str], scratch: Path) -> None:
        self.project, self.env, self.scratch = project, env, scratch
        self.results: dict[Block, Ran] = {}
        self.server: subprocess.Popen[bytes] | None = None
        self.server_port = 0
        (scratch / "wait_serving.py").write_text(WAIT_SERVING, encoding="utf-8")
        (scratch / "run_sql.py").write_text(RUN_SQL, encoding="utf-8")

    def state(self, doc: str) -> Path:
        return self.scratch / ("state-" + re.sub(r"\W", "_", doc) + ".sh")

    def run(self, block: Block) -> Ran:
        """The block's result, running first (once each) the README's examples, which every
        doc builds on, and the earlier blocks of its own file."""
        for earlier in ALL:
            if earlier == block:
                break
            if (earlier.doc in (block.doc, "README.md")
                    and earlier.lang in SHELL | {"sql", "python"}
                    and earlier.not_run is None and earlier not in self.results):
                self.results[earlier] = self._run(earlier)
        if block not in self.results:
            self.results[block] = self._run(block)
        return self.results[block]

    def shared_server(self) -> int:
        """A `ragdb serve` on the shared project, started on first use."""
        if self.server is None:
            self.server_port = free_port()
            log = (self.scratch / "server.log").open("wb")
            self.server = subprocess.Popen(
                ["ragdb", "serve", "--port", str(self.server_port)], cwd=self.project,
                env=self.env, stdout=log, stderr=subprocess.STDOUT)
            subprocess.run([sys.executable, str(self.scratch / "wait_serving.py"),
                            str(self.server_port)], check=True, env=self.env, timeout=120)
        return self.server_port

    def stop(self) -> None:
        """The shared server, and a PostgreSQL an example started and did not stop."""
        if self.server is not None:
            self.server.terminate()
            self.server.wait(timeout=30)
        for pid in self.project.glob("*/postmaster.pid"):
            subprocess.run([sys.executable, "-c", "import pgserver, sys; "
                            "pgserver.get_server(sys.argv[1])", str(pid.parent)],
                           env=self.env, timeout=60, capture_output=True)

    def _script(self, block: Block) -> tuple[str, list[Command]]:
        text = block.text.replace(PLACEHOLDER, str(REPO))
        starts_server = any(SERVE.match(c.text) for c in transcript(text)) if (
            block.lang == "console") else False
        port = free_port() if starts_server else 0
        if "8001" in text:
            port = port or self.shared_server()
            text = re.sub(r"(127\.0\.0\.1:|localhost:|--port )8001\b", rf"\g<1>{port}", text)
        state = self.state(block.doc)
        lines = [f"cd {self.project}", f"[ -f {state} ] && source {state}", "_servers=()"]
        commands: list[Command] = []
        if block.lang == "console":
            commands = transcript(text)
            for n, command in enumerate(commands):
                lines.append(f"printf '\\n{MARK} {n}\\n'")
                if SERVE.match(command.text):
                    serve = command.text
                    if "--port" not in serve:
                        serve += f" --port {port}"
                    lines += [f"{serve} > {self.scratch}/serve-{block.line}.log 2>&1 &",
                              "_servers+=($!)",
                              f"python {self.scratch}/wait_serving.py {port}"]
                else:
                    lines.append(command.text)
                lines.append(f"printf '\\n{MARK} rc %s\\n' $?")
        elif block.lang == "sql":
            lines.append(f"python {self.scratch}/run_sql.py <<'RAGDB_DOCS_SQL'\n{text}"
                         "RAGDB_DOCS_SQL")
        elif block.lang == "python":
            lines.append(f"python - <<'RAGDB_DOCS_PY'\n{text}RAGDB_DOCS_PY")
        else:
            lines += ["set -euo pipefail", text, "set +euo pipefail"]
        lines += [f"export -p > {state}", f'printf "cd %q\\n" "$PWD" >> {state}',
                  'for p in "${_servers[@]}"; do kill "$p"; wait "$p" 2>/dev/null; done',
                  "true"]
        return "\n".join(lines) + "\n", commands

    def _run(self, block: Block) -> Ran:
        script, commands = self._script(block)
        done = subprocess.run(["bash", "-c", script], cwd=self.project, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        output = done.stdout.decode("utf-8", errors="replace")
        ran: list[tuple[str, int, str]] = []
        for n, command in enumerate(commands):
            part = output.split(f"\n{MARK} {n}\n", 1)[-1]
            body, _, rest = part.partition(f"\n{MARK} rc ")
            ran.append((command.text, int(rest.split("\n", 1)[0] or -1) if rest else -1, body))
        expected = [is_error_line(c.expected) for c in commands]
        ok = done.returncode == 0 and all((rc != 0) == error
                                          for (_, rc, _), error in zip(ran, expected))
        return Ran(ran, done.returncode, output, ok)

    def failed_before(self, block: Block) -> str:
        """The earlier examples this one builds on that failed: the likelier cause."""
        earlier = ALL[:ALL.index(block)]
        failed = [b.name for b in earlier if b.doc in (block.doc, "README.md")
                  and b in self.results and not self.results[b].ok]
        return f" (after earlier examples failed: {', '.join(failed)})" if failed else ""


def _copy_checkout(folder: str, project: Path) -> None:
    """The checkout's `folder` as git sees it (tracked files and new ones not ignored): a
    scratch file someone left there and git ignores (a copy of a module kept for a timing) would
    be indexed and move the examples' results. Outside a git checkout, the whole folder."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard", folder],
                            cwd=REPO, capture_output=True)
    names = [n for n in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    if listed.returncode != 0 or not names:
        shutil.copytree(REPO / folder, project / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        return
    for name in names:
        if (REPO / name).is_file():  # not one deleted in the working tree
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, project / name)


@pytest.fixture(scope="session")
def runner() -> Iterator[Runner]:
    """The shared project: a copy of this checkout's package, docs and SQL, where the README's
    examples index ragdb/ and docs/. (`python -m ragdb` run there imports the copy.) It lives
    under /tmp, not pytest's basetemp, which every pytest start makes private again: the
    PostgreSQL example's server runs as another user when the tests run as root."""
    top = Path(tempfile.mkdtemp(prefix="ragdb-docs-"))
    project, scratch = top / "project", top / "scratch"
    for folder in ("ragdb", "docs", "sql", "migrations"):
        _copy_checkout(folder, project)
    (scratch / "runtime").mkdir(parents=True, mode=0o700)  # XDG_RUNTIME_DIR, as a login has
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGDB_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(scratch / "home"), XDG_CACHE_HOME=str(scratch / "cache"),
        XDG_RUNTIME_DIR=str(scratch / "runtime"), TMPDIR=str(scratch), PYTHONUNBUFFERED="1",
        RAGDB_MODELS_DIR=str(models_dir_without_writer()),
    )
    runner = Runner(project, env, scratch)
    try:
        yield runner
    finally:
        runner.stop()
        shutil.rmtree(top, ignore_errors=True)


# -- the tests ----------------------------------------------------------------------------------

def test_every_example_runs_or_says_why() -> None:
    """Each fenced block has a language; a block that is not run says why, right above it."""
    assert ALL, "no examples found"
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            if line.strip().startswith("<!-- example"):
                assert NOT_RUN.match(line.strip()), f"{path.name}:{n + 1}: malformed marker"
                assert n + 1 < len(lines) and FENCE.match(lines[n + 1]), (
                    f"{path.name}:{n + 1}: the marker is not right above a fence")
    for block in ALL:
        assert block.lang, f"{block.name}: a fence without a language"
        assert block.lang in RUN | SHOWN, f"{block.name}: unknown language {block.lang!r}"
        assert block.not_run is None or block.lang in RUN, (
            f"{block.name}: a {block.lang} block is never run; it needs no marker")


def skip_without_curl(block: Block) -> None:
    """The HTTP examples need curl, as the browser test needs Chromium."""
    if re.search(r"^(\$ )?curl ", block.text, re.M) and shutil.which("curl") is None:
        pytest.skip("curl is not installed")


@pytest.mark.parametrize("block", _runnable(*SHELL))
def test_shell_example(block: Block, runner: Runner) -> None:
    skip_without_curl(block)
    ran = runner.run(block)
    after = runner.failed_before(block)
    if block.lang != "console":
        assert ran.rc == 0, f"{block.name} failed{after}:\n{ran.output[-4000:]}"
        return
    expected = transcript(block.text.replace(PLACEHOLDER, str(REPO)))
    assert len(ran.commands) == len(expected), ran.output[-4000:]
    for (text, rc, output), command in zip(ran.commands, expected):
        where = f"{block.name}, `{text}`{after}"
        if SERVE.match(text):
            assert rc == 0, f"{where}: the server did not start\n{output[-2000:]}"
            continue
        if is_error_line(command.expected):
            assert rc != 0, f"{where}: should fail, exited 0\n{output}"
        else:
            assert rc == 0, f"{where}: exit status {rc}\n{output[-4000:]}"
        if not command.expected:
            assert not _error_response(output), f"{where}: an error response\n{output}"
        else:
            assert output_matches(command.expected, output), (
                f"{where}: the output differs from the doc\n--- doc\n"
                + "\n".join(command.expected) + f"\n--- real\n{output}")


@pytest.mark.parametrize("block", _runnable("sql", "python"))
def test_sql_and_python_example(block: Block, runner: Runner) -> None:
    ran = runner.run(block)
    assert ran.rc == 0, f"{block.name} failed{runner.failed_before(block)}:\n{ran.output[-4000:]}"


@pytest.mark.parametrize("block", [pytest.param(b, id=b.name) for b in ALL if b.lang == "json"])
def test_json_example(block: Block, runner: Runner, tmp_path: Path) -> None:
    """Every JSON example parses; the ones ragdb reads or writes are checked against it."""
    data = json.loads(block.text)
    if block.not_run is not None:
        return
    before = [b for b in ALL if b.doc == block.doc and b.line < block.line]
    previous = before[-1] if before and before[-1].end >= block.line - 2 else None
    if previous is not None and previous.lang in SHELL and previous.not_run is None and (
            "curl" in _last_command(previous)):
        skip_without_curl(previous)
        ran = runner.run(previous)
        output = ran.commands[-1][2] if ran.commands else ran.output
        assert_shape(data, json.loads(output), block.name)
    elif isinstance(data, dict) and ("mcpServers" in data or "servers" in data):
        for server in (data.get("mcpServers") or data["servers"]).values():
            check_mcp_client(server, runner, tmp_path / "elsewhere")
    elif isinstance(data, dict) and "plugins" in data:
        from ragdb.datasette_plugin.service import PluginConfig

        settings = data["plugins"]["ragdb"]
        assert set(settings) <= set(PluginConfig.__dataclass_fields__), block.name
        PluginConfig.from_metadata(settings)
    elif isinstance(data, dict) and "rag_questions" in data:
        from ragdb.schemas import RagDataset

        RagDataset.model_validate(data)
    elif isinstance(data, dict) and "search_results" in data:
        from ragdb.schemas import StudentSearchResults, StudentSearchResultsAndAnswer

        answered = any("answer" in r for r in data["search_results"])
        (StudentSearchResultsAndAnswer if answered else StudentSearchResults).model_validate(data)
    elif isinstance(data, dict) and set(data) <= {"query_prefix", "document_prefix"}:
        assert all(isinstance(v, str) for v in data.values()), block.name
    else:
        raise AssertionError(f"{block.name}: what this JSON is for is not known to the test")


def _error_response(output: str) -> bool:
    """Whether a command whose output the doc does not show answered `{"error": ...}` (curl
    exits 0 on an HTTP error)."""
    try:
        data = json.loads(output)
    except ValueError:
        return False
    return isinstance(data, dict) and "error" in data


def _last_command(block: Block) -> str:
    if block.lang == "console":
        commands = transcript(block.text)
        return commands[-1].text if commands else ""
    return block.text


def assert_shape(example: Any, actual: Any, where: str) -> None:
    """Each key the example shows is in the real response, at the same place."""
    if isinstance(example, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r:.200}"
        for key, value in example.items():
            assert key in actual, f"{where}: the response has no {key!r}: {sorted(actual)}"
            assert_shape(value, actual[key], f"{where}.{key}")
    elif isinstance(example, list) and example and actual:
        assert isinstance(actual, list), f"{where}: expected a list, got {actual!r:.200}"
        assert_shape(example[0], actual[0], f"{where}[0]")


def check_mcp_client(server: dict[str, Any], runner: Runner, elsewhere: Path) -> None:
    """Spawn the configured command from an empty folder, as a client would, and search."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    def place(value: str) -> str:
        return value.replace(PLACEHOLDER, str(REPO)).replace(PROJECT, str(runner.project))

    elsewhere.mkdir()
    params = StdioServerParameters(
        command=place(server["command"]), args=[place(a) for a in server.get("args", [])],
        env={**runner.env, **server.get("env", {})}, cwd=elsewhere)

    async def session() -> Any:
        with anyio.fail_after(120):
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    return await client.call_tool(
                        "search", {"query": "split identifiers", "k": 1, "mode": "lexical"})

    result = anyio.run(session)
    assert not result.is_error, result
    assert result.structured_content["sources"], result
    assert not list(elsewhere.iterdir()), f"the MCP server wrote {list(elsewhere.iterdir())}"


# -- commands written inline, in the prose --------------------------------------------------------

#: `ragdb ...` (or `python -m ragdb ...`) in backticks outside the fenced blocks; a span may wrap.
INLINE = re.compile(r"`((?:python\s+-m\s+)?ragdb(?:\s[^`]*)?)`")
#: A word of a synopsis, not of a command line: `NAME`, `[PATHS...]`, `"question"`, `"who calls
#: X?"`, `postgresql://...`.
SYNOPSIS = re.compile(r"\.\.\.|\b[A-Z][A-Z_]*\b|^question$")

#: Inline commands a reader types as they are, run in the shared project (exit 0, some output).
INLINE_RUN = ("ragdb --help", "ragdb --version", "python -m ragdb", "ragdb index", "ragdb roots",
              "ragdb roots --json", "ragdb models list", "ragdb models list --json",
              "ragdb legs")
#: Inline command lines that no example here runs, and why.
INLINE_NOT_RUN = {
    "ragdb index pkg.tgz": "names an archive a reader downloaded; tests/test_first_hour_seventh.py"
    "::test_an_archive_named_as_a_root_is_skipped_without_becoming_a_root runs it on one",
    "ragdb models install writer": "needs the writer's 22 parts, 1.1 GB (`make install-writer`, "
    "not run here); tests/test_writer.py runs it where they are installed",
    "ragdb index ../api ../web": "names a reader's own repositories; indexing.md's examples "
    "and tests/test_reliability_index.py index several roots",
    "ragdb index --db ../proj/data/processed/rag.db": "a run refused from a sibling folder; "
    "tests/test_first_hour.py::test_index_from_a_sibling_folder_is_refused_and_removes_nothing",
    "ragdb answer -": "answers.md's 'Many questions, one load' example runs it, with --k and "
    "--json",
    "ragdb index ../web": "a root added beside a running --watch; "
    "tests/test_first_hour_fifth.py::test_a_watch_of_the_recorded_roots_watches_a_root_added_"
    "beside_it runs it",
}


def _resolved(words: list[str]) -> tuple[Any, list[str], str | None]:
    """The click command the words after `ragdb` name, the words left, and what is wrong."""
    import click
    import typer

    from ragdb.cli import app

    command: click.Command = typer.main.get_command(app)
    words = list(words)
    while words and isinstance(command, click.Group) and not words[0].startswith("-"):
        if SYNOPSIS.search(words[0]):
            break  # `ragdb COMMAND --help`
        if words[0] not in command.commands:
            return command, words, f"no command {words[0]!r}"
        command = command.commands[words.pop(0)]
    return command, words, None


#: What the docs name that needs a model hub, which these tests never reach (they run offline):
#: each is run elsewhere against a local stand-in, as said.
NEEDS_HUB = {
    "OpenVINO/Qwen3-0.6B-int4-ov": "answers.md's default answer model where a hub is reachable; "
    "tests/test_models.py fetches a model through a stand-in hub "
    "(test_download_lands_in_models_dir_only_when_complete, "
    "test_downloaded_model_is_used_without_network) and falls back offline "
    "(test_offline_hub_falls_back_fast_with_one_warning)",
    "convert:ORG/NAME": "answers.md: converting a hub model needs the hub and torch (the convert "
    "extra); tests/test_models.py::test_conversion_without_optimum_says_what_to_install",
    "cross-encoder/ms-marco-MiniLM-L-6-v2": "search.md's hub rerankers; tests/test_rerank.py "
    "reranks with a tiny cross-encoder built locally (tests/rerank_support.py)",
    "a model hub id fetched on first use": "indexing.md's --embedder from a hub; "
    "tests/test_reliability_state.py switches to a local one, tests/test_hybrid.py refuses one "
    "that cannot be loaded",
}


def test_what_needs_a_hub_is_still_in_the_docs() -> None:
    """NEEDS_HUB stays the list of what the docs name and no example here can run."""
    docs = "\n".join(path.read_text(encoding="utf-8") for path in DOCS)
    for named in NEEDS_HUB:
        assert named in " ".join(docs.split()), f"{named!r} is no longer in the docs"


@dataclass(frozen=True)
class Inline:
    doc: str
    line: int
    command: str  # its words, on one line

    @property
    def words(self) -> list[str]:
        """The words after `ragdb`."""
        return shlex.split(self.command.removeprefix("python -m "))[1:]

    @property
    def mention(self) -> bool:
        """A command's name, with options at most: `ragdb index --watch`."""
        _command, rest, _error = _resolved(self.words)
        return all(w.startswith("--") and "=" not in w for w in rest)

    @property
    def synopsis(self) -> bool:
        return any(SYNOPSIS.search(w) for w in self.words)


def inline_commands() -> list[Inline]:
    found = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        for block in read_blocks(path):
            lines[block.line - 1:block.end] = [""] * (block.end - block.line + 1)
        text = "\n".join(lines)
        for m in INLINE.finditer(text):
            found.append(Inline(path.relative_to(REPO).as_posix(),
                                text.count("\n", 0, m.start()) + 1, " ".join(m[1].split())))
    return found


def _fenced_commands() -> set[str]:
    """The commands the runnable shell examples run."""
    commands = set()
    for block in ALL:
        if block.lang in SHELL and block.not_run is None:
            texts = ([c.text for c in transcript(block.text)] if block.lang == "console"
                     else block.text.splitlines())
            commands |= {" ".join(t.split()) for t in texts}
    return commands


def inline_error(inline: Inline) -> str | None:
    """What is wrong with an inline command: a command or option ragdb does not have."""
    import click

    command, rest, error = _resolved(inline.words)
    if error:
        return error
    options = {"--help"} | {o for p in command.params if isinstance(p, click.Option)
                            for o in p.opts + p.secondary_opts}
    for word in rest:
        for option in word.split("=")[0].split("/") if word.startswith("--") else ():
            if option not in options:
                return f"`{command.name}` has no option {option}"
    return None


def test_every_inline_command_is_real_and_runs_or_says_why() -> None:
    """Each `ragdb ...` the prose writes names a real command and real options; one a reader
    types as it is (not a synopsis with NAME, not a command's name) is run: by an example, by
    test_inline_command_runs, or its reason not to be is in INLINE_NOT_RUN."""
    found = inline_commands()
    assert len(found) > 50, "inline commands not found"
    fenced = _fenced_commands()
    for inline in found:
        where = f"{inline.doc}:{inline.line}: `{inline.command}`"
        error = inline_error(inline)
        assert error is None, f"{where}: {error}"
        if not (inline.mention or inline.synopsis):
            assert (inline.command in fenced or inline.command in INLINE_RUN
                    or inline.command in INLINE_NOT_RUN), (
                f"{where} is run by no example: add one, add it to INLINE_RUN, or say why in "
                "INLINE_NOT_RUN")
    written = {inline.command for inline in found}
    for command in (*INLINE_RUN, *INLINE_NOT_RUN):
        assert command in written, f"`{command}` is no longer in the docs"


@pytest.mark.parametrize("command", INLINE_RUN)
def test_inline_command_runs(command: str, runner: Runner) -> None:
    """Run after the README's examples, in the shared project, as a one-command transcript."""
    block = Block("README.md", 1_000_000 + INLINE_RUN.index(command), 0, "console",
                  f"$ {command}\n", None)
    ran = runner.run(block)
    assert len(ran.commands) == 1, ran.output[-4000:]
    _text, rc, output = ran.commands[0]
    assert rc == 0 and output.strip(), f"`{command}`: exit status {rc}\n{output[-4000:]}"
