"""Defects the third first-hour walkthrough found, each on real things: the CLI as a
subprocess, a real rag.db (SQLite, sqlite-vec), the real parsers."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import index_rows, run_cli, write_corpus


def _indexed(db: Path) -> list[str]:
    return [path for path, _sha, _size in index_rows(db)["files"]]


def test_an_absolute_exclude_or_include_is_read_under_the_root(tmp_path: Path) -> None:
    """`ragdb index proj --exclude $PWD/proj/tests/*` (a path as the shell completes it)
    excluded nothing: an absolute glob is read as the path under the root it lies in, as the
    search filters read one; a folder named without a trailing '/' is the folder, and a file
    named by its absolute path is that file, not every file of its name."""
    proj = tmp_path / "proj"
    write_corpus(proj, {"src/app.py": "def run():\n    return 1\n",
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
    # One that lies outside the root names nothing: refused, nothing changed.
    before = index_rows(db)
    outside = run_cli("index", "proj", "--no-vectors", "--exclude", f"{tmp_path}/other/*.py",
                      cwd=tmp_path)
    assert outside.returncode == 1 and "lies outside the folders indexed" in outside.stderr
    assert len(outside.stderr.strip().splitlines()) == 1, outside.stderr
    assert index_rows(db) == before
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
    write_corpus(tmp_path / "proj", {"src/client.c": _gnu_function()})
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


_GH = "ghp_" + "W3tokenmark" * 3 + "abc"  # a GitHub token's form: ghp_ and 36 characters
_NPM = "npm_" + "W3tokenmark" * 3 + "abc"
_AWS_ID, _AWS_SECRET = "AKIAZQXW3TOKENMARK12", "Zq9W3tokenmark/SECRET+" + "x" * 18


def _notebook(output: str) -> str:
    return json.dumps({"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Exploring the client\n"]},
        {"cell_type": "code", "execution_count": 1, "metadata": {},
         "source": ["import os\n", "print(os.environ)\n"],
         "outputs": [{"name": "stdout", "output_type": "stream", "text": [output]}]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


#: Credentials under names that tell nothing: each a secret by its content.
TOKEN_FILES = {
    "config.txt": f"[default]\naws_access_key_id = {_AWS_ID}\n"
                  f"aws_secret_access_key = {_AWS_SECRET}\n",
    "npmrc.txt": f"//registry.npmjs.org/:_authToken={_NPM}\n",
    "deploy/settings.yaml": f"github:\n  token: {_GH}\n",
    "explore.ipynb": _notebook(f"environ({{'GITHUB_TOKEN': '{_GH}'}})\n"),
    "ci/auth.cfg": "machine upload.example.org login ci password W3tokenmarkNetrc\n",
    "deploy/vars": "DEBUG=0\nexport DB_PASSWORD=W3tokenmarkEnvVar\n",  # a .env, renamed
    "deploy/kubeconfig": "users:\n- name: admin\n  user:\n    token: eyJhbGciOiJSUzI1NiJ9."
                         "eyJzdWIiOiJXM3Rva2VubWFyayJ9.W3tokenmarkKubeSig\n",
    "ci/docker-config.json": '{"auths": {"registry.example.org": '
                             '{"auth": "VzN0b2tlbm1hcms6aHVudGVyMg=="}}}',
}

#: Placeholders and samples: kept.
TOKEN_KEPT = {
    "docs/aws.md": "# AWS\n\nSet `aws_access_key_id = AKIAIOSFODNN7EXAMPLE` in the file.\n",
    "src/fake.py": f'SAMPLE_TOKEN = "{_GH}"  # a test value the scanner must find\n',
    "ci/npmrc.txt": "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n",
    "ci/settings.env.example": "API_KEY=${API_KEY}\nSECRET_KEY=changeme\n",
    "ci/limits.cfg": "MAX_TOKEN=100000\nTOKEN_URL=https://auth.example.org/token\n",
    "notes.txt": "The token lives in the CI's secret store.\n",
}


def test_a_credential_known_only_by_its_content_is_never_indexed(tmp_path: Path) -> None:
    """`config.txt` holding an AWS key, `npmrc.txt` with a registry token, a notebook whose
    output printed a GitHub token, a hard link to a .env outside the tree: each was indexed
    (and served by every door) as text or JSON. A data, config or unknown file holding a
    credential by its form is skipped as 'may hold secrets'; code and docs that carry one as
    a sample, and placeholders, are kept."""
    proj = tmp_path / "proj"
    write_corpus(proj, {**TOKEN_FILES, **TOKEN_KEPT})
    env = tmp_path / "home" / ".env"
    write_corpus(env.parent, {".env": f"AWS_ACCESS_KEY_ID={_AWS_ID}\n"})
    os.link(env, proj / "hardlinked_notes.txt")
    done = run_cli("index", "proj", "--no-vectors", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    assert _indexed(db) == sorted(f"proj/{rel}" for rel in TOKEN_KEPT), done.stdout
    assert f"{len(TOKEN_FILES) + 1} may hold secrets" in done.stdout, done.stdout
    held = db.read_bytes()
    for mark in (b"W3tokenmarkNetrc", b"W3tokenmarkEnvVar", b"W3tokenmarkKubeSig",
                 b"VzN0b2tlbm1hcms6aHVudGVyMg", _AWS_ID.encode(), _NPM.encode()):
        assert mark not in held


def _held(db: Path) -> bytes:
    """Every byte of rag.db and what lies beside it (-wal), lowercased as FTS5 stores terms."""
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*")).lower()


def test_a_secret_indexed_before_leaves_no_trace_in_the_file(tmp_path: Path) -> None:
    """A credential indexed once (by an --include, or by a ragdb before the rule) lost its
    rows on the next run, but its text stayed in rag.db's bytes: in the freed space of the
    chunks' pages and in the full-text index's segments, which the Datasette door reads as
    rows (chunks_fts_data) and a copy of the file carries. Deleted content is overwritten
    (secure_delete) and the full-text index is rebuilt without it."""
    write_corpus(tmp_path, {"config.txt": f"aws_access_key_id = {_AWS_ID}\n"
                                          f"aws_secret_access_key = {_AWS_SECRET}\n",
                            "README.md": "# Project\n\nHow to run it.\n",
                            "src/app.py": "def run():\n    return 1\n"})
    first = run_cli("index", ".", "--include", "config.txt", "--no-vectors", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    assert "config.txt" in _indexed(db)
    assert b"tokenmark" in _held(db)
    again = run_cli("index", ".", "--no-vectors", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert _indexed(db) == ["README.md", "src/app.py"]
    held = _held(db)
    assert b"tokenmark" not in held and _AWS_ID.lower().encode() not in held
    # The rest is still found.
    found = run_cli("search", "how to run it", "--k", "2", "--mode", "lexical", cwd=tmp_path)
    assert found.returncode == 0 and "README.md" in found.stdout, found.stderr


def test_an_unknown_endpoint_names_the_ones_there_are(tmp_path: Path) -> None:
    """`curl /-/ragdb/ask.json` answered 'the README's "The JSON API" lists them', a section
    no README has: the 404 names the endpoints and the docs page that describes them."""
    import asyncio

    from ragdb.datasette_plugin.serve import make_datasette

    write_corpus(tmp_path, {"README.md": "# Project\n\nHow to run it.\n"})
    assert run_cli("index", ".", "--no-vectors", cwd=tmp_path).returncode == 0

    async def ask() -> tuple[int, dict[str, str]]:
        datasette = make_datasette(tmp_path / "data" / "processed" / "rag.db")
        await datasette.invoke_startup()
        response = await datasette.client.get("/-/ragdb/ask.json")
        return response.status_code, response.json()

    status, body = asyncio.run(ask())
    assert status == 404
    assert "README" not in body["error"] and "docs/serving.md" in body["error"]
    for endpoint in ("/-/ragdb/search", "/-/ragdb/answer", "/-/ragdb/status", "/-/ragdb/ask"):
        assert endpoint in body["error"]


def test_a_skipped_file_under_two_recorded_roots_is_counted_once(tmp_path: Path) -> None:
    """`ragdb index .`, then `ragdb index sub` (a subfolder, now a root of its own), then a
    plain `ragdb index`: the indexed files were counted once, the skipped ones once per root
    that holds them ('3 files ... 2 skipped (2 may hold secrets)' for one .env)."""
    write_corpus(tmp_path, {"sub/app.py": "def run():\n    return 1\n", "sub/.env": "A=1\n",
                            "README.md": "# Project\n"})
    for args in ((".",), ("sub",), ()):
        done = run_cli("index", *args, "--no-vectors", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("3 files: 0 indexed, 2 unchanged, 0 removed, 1 skipped "
                                  "(1 may hold secrets)"), done.stdout


def test_a_removed_root_leaves_no_trace_of_its_files_in_the_file(tmp_path: Path) -> None:
    """`ragdb roots --remove secrets` after `ragdb index secrets --include .env`: the rows
    went, but the .env's terms stayed in the full-text index's segments (rows of
    chunks_fts_data, which Datasette serves)."""
    write_corpus(tmp_path, {"secrets/.env": "API_TOKEN=W3tokenmarkRootEnv\n",
                            "README.md": "# Project\n\nHow to run it.\n"})
    for args in (("index", "README.md"), ("index", "secrets", "--include", ".env")):
        done = run_cli(*args, "--no-vectors", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    db = tmp_path / "data" / "processed" / "rag.db"
    assert b"tokenmarkrootenv" in _held(db)
    removed = run_cli("roots", "--remove", "secrets", cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert _indexed(db) == ["README.md"]
    assert b"tokenmarkrootenv" not in _held(db)
