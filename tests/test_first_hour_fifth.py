"""Defects the fifth first-hour walkthrough found, each on real things: the CLI as a
subprocess, a real rag.db (SQLite, sqlite-vec), a real PostgreSQL reached over TCP.

Material: wcwidth 0.9.4 (pip sdist: Python, C, rst) and klona 2.0.6 (npm: JavaScript, .d.ts),
indexed alone and as two roots of one index; search, answer, serve (curl), mcp (JSON-RPC on
stdin), --watch while editing, moving and deleting, bad flags and paths.

Surprises judged not defects (no change):
- A wrong or missing PostgreSQL password over TCP, and issue 39's changed sources, were
  already handled: their tests here are guards.
- `answer --json`'s sources carry each chunk's indexed text (the search's record, as `ragdb
  search` shows it); the answer itself shows no line of a changed file.
- `ragdb index FILE` under a recorded root records the file as a root of its own (removing
  it removes 0 files); `ragdb index /proc/self` or `/` walks procfs (pseudo-files change every
  run; environ and cmdline hold NULs and are skipped as binary).
- A command whose output pipe closes (`| head`) exits 1, silently; `outline`, `callers` of
  nothing exit 0 with a note; a symlink loop as a root is "no such file or directory".
- A docs page with `DB_PASSWORD=hunter2`, Django's `SECRET_KEY = '...'` in settings.py (code
  and docs keep samples), lower-case INI or .tfvars names (`db_password = "..."`; the fourth
  walkthrough's notes.txt `password = ...` fixture relies on it) and YAML `password: x` are
  indexed: a policy question, not changed here. Plain `datasette rag.db` does not refuse an
  older index's secrets as `ragdb serve` now does.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import (free_port, index_leaving_out_secrets, index_rows, one_line_error,
                            run_cli, write_corpus)


def _indexed(db: Path) -> list[str]:
    return [path for path, _sha, _size in index_rows(db)["files"]]


def _held(db: Path) -> bytes:
    """Every byte of rag.db and what lies beside it (-wal), lowercased as FTS5 stores terms."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*")).lower()


#: Credentials the fourth walkthrough's rules let in: a Rails app's secrets.yml (its
#: secret_key_base signs every session), a copy of it, WordPress's deployed wp-config.php (the
#: database password, in PHP), and .env lines whose values are short or lower-case or start
#: with a placeholder, in files under other names (a hard link, a config file).
MISSED_SECRETS = {
    "config/secrets.yml": "development:\n  secret_key_base: 3b7cd727ee24e8444053437c36cc66c3"
                          "W0mark\nproduction:\n"
                          "  secret_key_base: <%= ENV['SECRET_KEY_BASE'] %>\n",
    "backup/rails_secrets.txt": "production:\n  secret_key_base: 9f86d081884c7d659a2feaa0"
                                "c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n",
    "wp-config.php": "<?php\ndefine( 'DB_NAME', 'wordpress' );\n"
                     "define( 'DB_PASSWORD', 'W0markWp' );\n",
    "deploy/app.cfg": "DEBUG=0\nDB_PASSWORD=hunt3r\n",            # short: 6 characters
    "deploy/keys.conf": "SECRET_KEY=changeme-w0markcm\n",         # a placeholder it starts with
    # A password in a URL, where no name says secret.
    "docker-compose.yml": "services:\n  web:\n    environment:\n"
                          "      DATABASE_URL: postgres://app:w0markurl@db:5432/app\n",
    "cache.cfg": "[cache]\nurl = redis://:w0markredis@cache:6379/0\n",
    # An OpenSSH key's body pasted without its BEGIN/END lines.
    "backup/deploy.txt": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
                         "QyNTUxOQAAACBaW0markSshKeyBodyAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
}

#: Kept: placeholders, references, pins, templates and the sample that WordPress ships.
KEPT = {
    "wp-config-sample.php": "<?php\ndefine( 'DB_PASSWORD', 'password_here' );\n",
    "deploy/example.cfg": "DB_PASSWORD=changeme\nAPI_TOKEN=${API_TOKEN}\n"
                          "SECRET_KEY=your-key-here\n",
    "deploy/tox.ini": "[tox]\npassword = %(env_password)s\nmax_token = 4096\n",
    "requirements.txt": "tiktoken==0.7.0\ntokenizers>=0.19\n",
    "src/app.py": "import os\n\nDB_PASSWORD = os.environ['DB_PASSWORD']\n",
    "alembic.ini": "[alembic]\nsqlalchemy.url = driver://user:pass@localhost/dbname\n",
    "deploy/urls.cfg": "repo = https://github.com/pallets/flask\nssh = git@github.com:a/b.git\n"
                       "db = postgres://${DB_USER}:${DB_PASSWORD}@db/app\n",
    "config/secrets.example.yml": "production:\n  secret_key_base: <%= ENV['SECRET_KEY_BASE'] %>\n",
}


def test_rails_wordpress_and_short_env_secrets_are_never_indexed(tmp_path: Path) -> None:
    """A Rails `config/secrets.yml`, a WordPress `wp-config.php`, an OpenSSH key's body
    without its BEGIN line, a password in a URL (docker-compose's DATABASE_URL), and .env
    lines setting a short (`hunt3r`), lower-case or placeholder-prefixed (`changeme-...`)
    value in files under other names were indexed and served: each is now
    left out as 'may hold secrets', and nothing of them reaches rag.db's bytes; templates,
    references and placeholders stay."""
    proj = tmp_path / "proj"
    write_corpus(proj, {**MISSED_SECRETS, **KEPT})
    env = tmp_path / "home" / ".env.production"
    write_corpus(env.parent, {env.name: "DB_PASSWORD=w0rmlnk\n"})  # 7 characters, lower-case
    os.link(env, proj / "notes.txt")
    done = run_cli("index", "proj", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    assert _indexed(db) == sorted(f"proj/{rel}" for rel in KEPT), done.stdout
    assert f"{len(MISSED_SECRETS) + 1} may hold secrets" in done.stdout, done.stdout
    held = _held(db)
    for mark in (b"w0mark", b"hunt3r", b"w0rmlnk", b"9f86d081884c7d659a2f"):
        assert mark not in held, mark
    found = run_cli("search", "db_password", "--db", str(db), "--json", cwd=tmp_path)
    assert found.returncode == 0 and "w0mark" not in found.stdout.lower()


# -- PostgreSQL over TCP -------------------------------------------------------------------------

def _forward(listener: socket.socket, unix_path: str) -> None:
    """Accept TCP connections on `listener` and relay each to the server's Unix socket: the
    client (libpq in ragdb) speaks TCP to 127.0.0.1, as to any remote server."""

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        server = socket.socket(socket.AF_UNIX)
        server.connect(unix_path)
        for a, b in ((client, server), (server, client)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()


@pytest.fixture
def tcp_port(pg_server: Any) -> Iterator[int]:
    """A TCP port on 127.0.0.1 that reaches the session's PostgreSQL (which listens only on
    its Unix socket)."""
    query = parse_qs(urlsplit(pg_server.get_uri()).query)
    socket_dir = query["host"][0]
    port = query.get("port", ["5432"])[0]
    listener = socket.socket()
    listener.bind(("127.0.0.1", free_port()))
    listener.listen()
    threading.Thread(target=_forward, args=(listener, f"{socket_dir}/.s.PGSQL.{port}"),
                     daemon=True).start()
    yield int(listener.getsockname()[1])
    listener.close()


@pytest.mark.parametrize("given", ["wrong-pass-5093", ""])
def test_a_wrong_or_missing_password_over_tcp_is_one_line(
        project: Path, pg_server: Any, own_role: tuple[str, str, str], tcp_port: int,
        given: str) -> None:
    """A role WITH a password, reached over TCP at 127.0.0.1 (as docs/postgresql.md's Docker
    server is), with a wrong password or none: one line on stderr naming the server and the
    cause, a non-zero exit, no traceback, and neither the given nor the right password."""
    role, password, database = own_role
    auth = f"{role}:{given}" if given else role
    url = f"postgresql://{auth}@127.0.0.1:{tcp_port}/{database}"
    for args in (("index", "data/raw", "--no-vectors"), ("search", "lora"), ("roots",)):
        done = run_cli(*args, "--db", url, cwd=project, env={"PGPASSWORD": ""})
        line = one_line_error(done)
        assert line.startswith(f"ragdb: cannot connect to PostgreSQL at postgresql://{role}@"
                               f"127.0.0.1:{tcp_port}/{database}"), line
        cause = "password authentication failed" if given else "no password supplied"
        assert cause in line, line
        shown = done.stdout + done.stderr
        assert password not in shown and (not given or given not in shown), shown


# -- A source changed on disk since it was indexed ------------------------------------------------

_BILLING = ('def monthly_invoice(customer):\n'
            '    """The invoice a customer gets each month: the plan price plus usage fees."""\n'
            '    price = customer.plan.price\n'
            '    fees = sum(item.fee for item in customer.usage)\n'
            '    return {"customer": customer.id, "total": price + fees}  # oldline\n')


def _replace_by_link_to_secret(path: Path) -> None:
    (path.parent.parent / ".env").write_text("DB_PASSWORD=linkedsecretmark\n")
    path.unlink()
    path.symlink_to(Path("..") / ".env")


@pytest.mark.parametrize("change", ["edit", "truncate", "empty", "delete", "link_to_secret"])
def test_an_answer_never_shows_lines_no_longer_in_the_file(tmp_path: Path, change: str) -> None:
    """Issue 39 ("Bad input"): a source edited, truncated, emptied, deleted or replaced by a
    symlink to a .env after `ragdb index`: the answer shows neither the indexed lines that
    are gone nor what the file holds now unchecked, and says the file changed."""
    source = tmp_path / "proj" / "src" / "billing.py"
    write_corpus(tmp_path / "proj", {"src/billing.py": _BILLING})
    assert run_cli("index", "proj", "--no-vectors", cwd=tmp_path).returncode == 0
    if change == "edit":
        source.write_text(_BILLING.replace("# oldline", "# newline"))
    elif change == "truncate":
        source.write_text(_BILLING[:40])
    elif change == "empty":
        source.write_text("")
    elif change == "delete":
        source.unlink()
    else:
        _replace_by_link_to_secret(source)
    done = run_cli("answer", "How is the monthly invoice computed?", "--k", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    answer = done.stdout.split("\nSources:")[0]
    for gone in ("oldline", "newline", "linkedsecretmark", "customer.plan.price"):
        assert gone not in answer, answer
    said = "was deleted" if change == "delete" else "changed since it was indexed"
    assert f"`proj/src/billing.py` {said}" in answer, answer


# -- Bad flags and bad paths ---------------------------------------------------------------------

def test_a_device_or_fifo_is_refused_as_a_root_and_never_recorded(tmp_path: Path) -> None:
    """`ragdb index /dev/null` (or a named pipe) exited 0 and recorded the device as a root:
    every later plain `ragdb index` named it as skipped, for ever. Now one line, exit 1, and
    the roots are as before."""
    write_corpus(tmp_path / "proj", {"src/app.py": "def run():\n    return 1\n"})
    assert run_cli("index", "proj", "--no-vectors", cwd=tmp_path).returncode == 0
    db = tmp_path / "data" / "processed" / "rag.db"
    before = index_rows(db)
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    for given in ("/dev/null", str(fifo), "pipe.md"):
        line = one_line_error(run_cli("index", given, "--no-vectors", cwd=tmp_path, timeout=30))
        assert line == f"ragdb: cannot index {given}: not a file or folder (a device, a FIFO " \
                       "or a socket)", line
    roots = run_cli("roots", cwd=tmp_path)
    assert [r.split()[0] for r in roots.stdout.splitlines()] == ["proj"], roots.stdout
    again = run_cli("index", "--no-vectors", cwd=tmp_path)
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert index_rows(db) == before


def test_a_chunk_size_no_question_can_use_is_refused(tmp_path: Path) -> None:
    """`--max_chunk_size 1` or `10` (read as lines or tokens) was taken: every recorded root
    was rebuilt into one- to ten-character fragments (wcwidth: 670,720 chunks, killed after
    a minute), and no search found `deep clone` in klona's readme. Below 100 characters is
    refused in one line before anything changes; 100 and 2,000 are still taken."""
    write_corpus(tmp_path / "proj", {"docs/guide.md": "# Guide\n\nDeep clone copies values.\n"})
    assert run_cli("index", "proj", "--no-vectors", cwd=tmp_path).returncode == 0
    db = tmp_path / "data" / "processed" / "rag.db"
    before = index_rows(db)
    for size in ("1", "10", "99"):
        for args in (("index", "proj"), ("index",)):
            line = one_line_error(run_cli(*args, "--no-vectors", "--max_chunk_size", size,
                                          cwd=tmp_path))
            assert line == ("ragdb: --max_chunk_size must be between 100 and 2000 characters, "
                            f"got {size}"), line
    assert index_rows(db) == before
    for size in ("100", "2000"):
        done = run_cli("index", "proj", "--no-vectors", "--max_chunk_size", size, cwd=tmp_path)
        assert done.returncode == 0, done.stderr


def test_mcp_tells_agents_the_answer_is_the_sources_blocks(tmp_path: Path) -> None:
    """`ragdb mcp`'s instructions told agents `answer` was "a cited answer from a local
    model", while by default it is the sources' own blocks, verbatim, with no model."""
    write_corpus(tmp_path / "proj", {"src/app.py": "def run():\n    return 1\n"})
    assert run_cli("index", "proj", "--no-vectors", cwd=tmp_path).returncode == 0
    hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
    done = subprocess.run([sys.executable, "-m", "ragdb", "mcp"], input=hello + "\n",
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    told = json.loads(done.stdout.splitlines()[0])["result"]["instructions"]
    assert "from a local model" not in told
    assert "blocks of the sources, verbatim" in told, told


#: Files whose names say they hold logins or what was typed: a shell or REPL history
#: (`export GITHUB_TOKEN=...`, `mysql -u root -phunter2`), MySQL's and s3cmd's client
#: configs, a FIDO SSH key. Their content need not match any form.
HISTORIES = {
    ".bash_history": "cd app\nmysql -u root -pw0markhist appdb\n",
    ".zsh_history": ": 1700000000:0;psql -W w0markzsh\n",
    ".python_history": "login('admin', 'w0markpy')\n",
    ".psql_history": "ALTER ROLE app PASSWORD 'w0markpsql';\n",
    ".my.cnf": "[client]\nuser=root\npass=w0markcnf\n",
    ".s3cfg": "[default]\naccess_key = AK\nsecret = w0marks3\n",
    "id_ed25519_sk": "sk-ssh-ed25519 w0marksk\n",
}


def test_histories_and_client_logins_are_never_indexed(tmp_path: Path) -> None:
    """A home folder or a repository that committed one by mistake: `.bash_history` with
    `mysql -pPASSWORD` typed in it, `.my.cnf`, `.s3cfg` and a FIDO key `id_ed25519_sk` were
    indexed as text (no form the content rules know). Left out by their names, as .env is;
    `history.rst` and `mock-call-history.js` stay."""
    kept = {"docs/history.rst": "History\n=======\n\n1.0 released.\n",
            "lib/mock-call-history.js": "export const calls = [];\n"}
    db = index_leaving_out_secrets(tmp_path, {**HISTORIES, **kept}, kept, len(HISTORIES))
    assert b"w0mark" not in _held(db)


def _older_index_with_secrets(tmp_path: Path) -> Path:
    """A rag.db as an older ragdb left it: a .cfg setting DB_PASSWORD=hunt3r and a Rails
    secrets.yml indexed (let in here by --include, then the root recorded without it, as an
    older ragdb recorded it), and a token.txt its root's --include still names."""
    write_corpus(tmp_path / "proj", {"src/app.py": "def run():\n    return 1\n",
                                     "deploy/app.cfg": "DB_PASSWORD=hunt3r\n",
                                     "config/secrets.yml": "production:\n  secret_key_base: "
                                                           "3b7cd727ee24e8444053437c36cc66c3\n",
                                     "notes/token.txt": "API_TOKEN=w0rmlnk9\n"})
    done = run_cli("index", "proj", "--no-vectors", "--include", "app.cfg", "--include",
                   "secrets.yml", "--include", "token.txt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    assert len(_indexed(db)) == 4
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE roots SET options = json_set(options, '$.include', "
                     "json('[\"token.txt\"]'))")
    return db


def _refused(db: Path | str, outcome: str) -> str:
    return (f"ragdb: {db} holds 2 files that may hold secrets (proj/config/secrets.yml, "
            "proj/deploy/app.cfg), indexed by an older ragdb: run `ragdb index` first, which "
            f"removes them; {outcome}")


def test_copy_refuses_to_carry_an_older_indexs_secrets_to_postgresql(
        tmp_path: Path, pg_url: str) -> None:
    """A rag.db an older ragdb built holds what today's rules leave out (a Rails
    secrets.yml, a .cfg setting DB_PASSWORD=hunt3r): the next `ragdb index` removes them, but
    `ragdb copy rag.db postgresql://...` put them on the shared server first, searchable by
    everyone. Refused in one line, nothing written; after `ragdb index`, copied without them.
    A file the user let in with --include (recorded with its root) is theirs to copy."""
    import psycopg

    db = _older_index_with_secrets(tmp_path)
    line = one_line_error(run_cli("copy", str(db), pg_url, cwd=tmp_path))
    assert line == _refused(db, "nothing was copied"), line
    with psycopg.connect(pg_url) as pg:
        assert pg.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                          ).fetchone() == (0,)
    assert run_cli("index", "--no-vectors", cwd=tmp_path).returncode == 0
    copied = run_cli("copy", str(db), pg_url, cwd=tmp_path)
    assert copied.returncode == 0, copied.stderr
    with psycopg.connect(pg_url) as pg:
        paths = [row[0] for row in pg.execute("SELECT path FROM files ORDER BY path")]
    assert paths == ["proj/notes/token.txt", "proj/src/app.py"]


def _mcp_hello(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
    return subprocess.run([sys.executable, "-m", "ragdb", "mcp", *args], input=hello + "\n",
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_serve_and_mcp_refuse_an_older_indexs_secrets(tmp_path: Path) -> None:
    """`ragdb serve` (Datasette serves every row, its SQL included) and `ragdb mcp` served
    the secrets an older ragdb indexed until someone ran `ragdb index`. Both refuse to start
    in one line; after `ragdb index` removed them, both start."""
    db = _older_index_with_secrets(tmp_path)
    port = str(free_port())
    served = run_cli("serve", "--port", port, cwd=tmp_path, timeout=120)
    shown = db.relative_to(tmp_path)  # as the index a plain command there finds
    assert one_line_error(served) == _refused(shown, "nothing was served")
    assert one_line_error(_mcp_hello(tmp_path)) == _refused(shown, "nothing was served")
    assert run_cli("index", "--no-vectors", cwd=tmp_path).returncode == 0
    assert "serverInfo" in _mcp_hello(tmp_path).stdout


def test_a_watch_of_the_recorded_roots_watches_a_root_added_beside_it(tmp_path: Path) -> None:
    """`ragdb index --watch` running, then `ragdb index other` (a second repository into
    the same index): edits under `other` were never indexed until something changed under a
    root the watch had started with. The watch now reads the recorded roots every
    ROOTS_CHECK_MS, says it watches the new one, and indexes its edits."""
    import queue
    import signal
    import time

    write_corpus(tmp_path / "api", {"src/app.py": "def run():\n    return 1\n"})
    write_corpus(tmp_path / "web", {"docs/guide.md": "# Guide\n\nFirst words.\n"})
    assert run_cli("index", "api", "--no-vectors", cwd=tmp_path).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "ragdb", "index", "--watch", "--no-vectors"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stderr is not None
    said: "queue.Queue[str]" = queue.Queue()
    stream = proc.stderr

    def pump() -> None:
        for line in stream:
            said.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        assert "watching api" in said.get(timeout=60)
        assert run_cli("index", "web", "--no-vectors", cwd=tmp_path).returncode == 0
        assert said.get(timeout=30).strip() == "ragdb: watching web too"
        time.sleep(1.0)  # the watch starts again over both roots just after it says so
        (tmp_path / "web" / "docs" / "guide.md").write_text("# Guide\n\nCapybara words.\n")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = run_cli("search", "capybara", "--k", "1", cwd=tmp_path)
            if "web/docs/guide.md" in found.stdout:
                break
            time.sleep(0.5)
        assert "web/docs/guide.md" in found.stdout, found.stdout + found.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_serve_refuses_an_older_postgresql_indexs_secrets(tmp_path: Path, pg_url: str) -> None:
    """The same on PostgreSQL: `ragdb serve --db postgresql://...` (and `ragdb mcp`) served
    the rows of a .cfg setting DB_PASSWORD that an older ragdb indexed there. Refused in one
    line (the URL without its password); `ragdb index --db URL` removes it."""
    import psycopg

    write_corpus(tmp_path / "proj", {"src/app.py": "def run():\n    return 1\n",
                                     "deploy/app.cfg": "DB_PASSWORD=hunt3r\n"})
    done = run_cli("index", "proj", "--no-vectors", "--include", "app.cfg", "--db", pg_url,
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(pg_url, autocommit=True) as pg:
        pg.execute("UPDATE roots SET options = '{}'")  # as an older ragdb recorded it
    served = run_cli("serve", "--port", str(free_port()), "--db", pg_url, cwd=tmp_path,
                     timeout=120)
    for refused in (served, _mcp_hello(tmp_path, "--db", pg_url)):  # ragdb mcp too
        line = one_line_error(refused)
        assert line.endswith(" holds 1 files that may hold secrets (proj/deploy/app.cfg), "
                             "indexed by an older ragdb: run `ragdb index` first, which "
                             "removes them; nothing was served"), line
        assert "hunt3r" not in refused.stdout + refused.stderr
    assert run_cli("index", "--db", pg_url, "--no-vectors", cwd=tmp_path).returncode == 0
    assert "serverInfo" in _mcp_hello(tmp_path, "--db", pg_url).stdout
    with psycopg.connect(pg_url) as pg:
        assert [r[0] for r in pg.execute("SELECT path FROM files")] == ["proj/src/app.py"]


def test_an_older_indexs_linked_secret_is_held_from_any_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A symlink with a harmless name (`notes/setup.md -> ../deploy/app.cfg`, DB_PASSWORD
    inside) that an older ragdb indexed: secrets_held judged the link by its stored path read
    from the current folder, so from a subfolder (`cd proj; ragdb serve --db ...`) the link
    was not found, read as a docs page, and the index served. It reads the path under the
    index's base folder now."""
    from ragdb.db import connect
    from ragdb.indexing import secrets_held

    write_corpus(tmp_path / "proj", {"src/app.py": "def run():\n    return 1\n",
                                     "deploy/app.cfg": "DB_PASSWORD=hunt3r\n"})
    (tmp_path / "proj" / "notes").mkdir()
    (tmp_path / "proj" / "notes" / "setup.md").symlink_to("../deploy/app.cfg")
    done = run_cli("index", "proj", "--no-vectors", "--include", "app.cfg", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    assert "proj/notes/setup.md" in _indexed(db)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE roots SET options = json_set(options, '$.include', json('[]'))")
    for folder in (tmp_path, tmp_path / "proj", tmp_path / "proj" / "notes"):
        monkeypatch.chdir(folder)
        index = connect(db)
        try:
            assert secrets_held(index) == ["proj/deploy/app.cfg", "proj/notes/setup.md"], folder
        finally:
            index.close()
