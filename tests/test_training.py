"""The reranker's training corpora: pins that never name an evaluated package, safe unpacking."""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from training import fetch


def _tar_gz(path: Path, files: dict[str, bytes]) -> None:
    """A gzipped tar with the given members, as a registry's archive would be."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _deb(path: Path, files: dict[str, bytes]) -> None:
    """A minimal Debian binary package: an ar archive holding a data.tar.gz."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for name, blob in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    out = bytearray(b"!<arch>\n")
    for name, body in (("debian-binary", b"2.0\n"), ("data.tar.gz", data.getvalue())):
        out += f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(body):<10}`\n".encode()
        out += body + (b"\n" if len(body) % 2 else b"")
    path.write_bytes(bytes(out))


def _pin(registry: str, archive: Path, name: str = "demo") -> fetch.Pin:
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    return fetch.Pin(name, registry, "1.0", archive.name, digest, "python")


def test_pins_cover_five_languages_and_no_evaluated_package() -> None:
    pins = fetch.read_pins()
    assert len(pins) >= 60
    languages = Counter(pin.language for pin in pins)
    assert len(languages) >= 5, languages
    assert not {pin.name for pin in pins} & fetch.EVALUATED
    assert len({pin.name for pin in pins}) == len(pins), "a package pinned twice"


def test_unpack_strips_the_top_folder_and_is_idempotent(tmp_path: Path) -> None:
    target = tmp_path / "raw"
    (target / ".archives").mkdir(parents=True)
    archive = target / ".archives" / "demo-1.0.tar.gz"
    _tar_gz(archive, {"demo-1.0/src/demo.py": b"def f():\n    return 1\n",
                      "demo-1.0/README.md": b"# Demo\n"})
    pin = _pin("pypi", archive)
    assert fetch.fetch(pin, target) == "unpacked"
    assert (target / "demo" / "src" / "demo.py").read_text() == "def f():\n    return 1\n"
    assert fetch.fetch(pin, target) == "up to date"
    assert [p.name for p in target.iterdir() if not p.name.startswith(".")] == ["demo"]


def test_a_deb_gives_the_sources_it_installs(tmp_path: Path) -> None:
    target = tmp_path / "raw"
    (target / ".archives").mkdir(parents=True)
    archive = target / ".archives" / "librust-demo-dev_1.0_all.deb"
    _deb(archive, {"./usr/share/cargo/registry/demo-1.0/src/lib.rs": b"pub fn f() {}\n",
                   "./usr/share/doc/librust-demo-dev/copyright": b"MIT\n"})
    fetch.fetch(_pin("deb", archive, "librust-demo-dev"), target)
    assert (target / "librust-demo-dev" / "demo-1.0" / "src" / "lib.rs").is_file()
    assert not (target / "librust-demo-dev" / "usr").exists()


def test_a_changed_archive_is_refused_and_kept_aside(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "raw"
    (target / ".archives").mkdir(parents=True)
    archive = target / ".archives" / "demo-1.0.tar.gz"
    _tar_gz(archive, {"demo-1.0/a.py": b"x = 1\n"})
    pin = _pin("pypi", archive)

    def tampered_mirror(pin: fetch.Pin, archives: Path) -> Path:
        _tar_gz(archives / pin.archive, {"demo-1.0/a.py": b"x = 2\n"})
        return archives / pin.archive

    _tar_gz(archive, {"demo-1.0/a.py": b"x = 3\n"})  # the kept archive no longer matches either
    monkeypatch.setattr(fetch, "download", tampered_mirror)
    with pytest.raises(fetch.FetchError, match="sha256"):
        fetch.fetch(pin, target)
    assert not (target / "demo").exists()
    assert (target / ".archives" / "demo-1.0.tar.gz.bad").is_file()


def test_an_archive_escaping_its_folder_is_not_unpacked(tmp_path: Path) -> None:
    target = tmp_path / "raw"
    (target / ".archives").mkdir(parents=True)
    archive = target / ".archives" / "demo-1.0.tar.gz"
    _tar_gz(archive, {"demo-1.0/../../evil.py": b"x = 1\n", "demo-1.0/ok.py": b"y = 1\n"})
    with pytest.raises((fetch.FetchError, tarfile.TarError)):
        fetch.fetch(_pin("pypi", archive), target)
    assert not (tmp_path / "evil.py").exists()


def test_an_evaluated_package_is_refused(tmp_path: Path) -> None:
    pin = fetch.Pin("click", "pypi", "8.1.7", "click-8.1.7.tar.gz", "0" * 64, "python")
    with pytest.raises(fetch.FetchError, match="evaluation set"):
        fetch.fetch(pin, tmp_path)


def test_questions_come_from_ragdbs_own_chunks(tmp_path: Path) -> None:
    """A real index of a small package: its sample, its question-shaped headings, and the
    filter that drops a question quoting the chunk's own identifiers."""
    import subprocess
    import sys

    from training import questions

    package = tmp_path / "demo"
    (package / "docs").mkdir(parents=True)
    (package / "demo.py").write_text(
        "def retry_with_backoff(call, attempts=3):\n"
        "    \"\"\"Call again after a growing pause until it succeeds.\"\"\"\n"
        + "    # wait a little longer each time the remote end refuses\n" * 6
        + "    return call()\n", encoding="utf-8")
    (package / "docs" / "guide.md").write_text(
        "# How do I retry a failing call?\n\n"
        + "Wrap the call and the library retries it with a growing pause between attempts. " * 4
        + "\n", encoding="utf-8")
    db = tmp_path / "demo.db"
    subprocess.run([sys.executable, "-m", "ragdb", "index", str(package), "--db", str(db),
                    "--no-vectors"], check=True, capture_output=True)
    rows = questions.chunk_rows(db)
    assert {r.path.rsplit("/", 1)[-1] for r in rows} == {"demo.py", "guide.md"}
    sample = questions.sample_chunks(rows, 2, seed="demo")
    assert sample == questions.sample_chunks(rows, 2, seed="demo")
    pin = fetch.Pin("demo", "pypi", "1.0", "demo-1.0.tar.gz", "0" * 64, "python")
    asked = list(questions.heading_questions(rows, pin))
    assert [q.question for q in asked] == ["How do I retry a failing call?"]
    code = next(r for r in rows if r.path.endswith("demo.py"))
    assert questions.clean_question("How do I call retry_with_backoff twice?", code.text) == ""
    assert questions.clean_question("What is the purpose of this function?", code.text) == ""
    kept = "How do I wait longer between attempts when a remote end refuses?"
    assert questions.clean_question(kept + "\nmore", code.text) == kept


def test_candidates_rank_the_chunk_a_question_was_written_for(tmp_path: Path) -> None:
    """Stage 4 on a real index: ragdb's own ranking, and the rank of the asked-about chunk."""
    import subprocess
    import sys

    from ragdb import RagDB
    from training import candidates, questions

    package = tmp_path / "demo"
    package.mkdir()
    (package / "pool.py").write_text(
        "def drain(queue):\n    \"\"\"Hand every waiting job to a worker.\"\"\"\n"
        + "    # workers take the oldest waiting job first\n" * 8 + "    return queue\n",
        encoding="utf-8")
    (package / "notes.md").write_text("# Notes\n\nNothing about jobs here, only weather.\n",
                                      encoding="utf-8")
    db = tmp_path / "demo.db"
    subprocess.run([sys.executable, "-m", "ragdb", "index", str(package), "--db", str(db),
                    "--no-vectors"], check=True, capture_output=True)
    row = next(r for r in questions.chunk_rows(db) if r.path.endswith("pool.py"))
    record = questions.QuestionRecord(
        "demo", "1.0", "python", "writer", "Which waiting job does a worker take first?",
        row.path, row.first_char, row.last_char, row.start_line, row.end_line, row.kind,
        row.file_sha256)
    with RagDB(db, use_cache=False) as rag:
        hits = rag.search(record.question, 5, "lexical")
    assert candidates.answer_rank(record, hits) == 1
    assert candidates.answer_rank(record, hits[1:]) is None
    table = candidates.report({"python/writer": [1, None]}, 30)
    assert "| python/writer | 2 | 0.500 | 0.500 | 0.500 |" in table
    assert table.splitlines()[-1] == "| all | 2 | 0.500 | 0.500 | 0.500 |"


def test_a_refused_chunk_is_not_asked_again(tmp_path: Path) -> None:
    """Greedy decoding writes the same reply again: a refused chunk is recorded and skipped."""
    from training import questions

    rejected = tmp_path / "rejected.jsonl"
    assert questions.rejected_keys(rejected) == set()
    rejected.write_text('{"package": "demo", "path": "demo/a.py", "first_char": 7, '
                        '"reply": "What is the purpose of `f`?"}\n', encoding="utf-8")
    assert questions.rejected_keys(rejected) == {("demo", "demo/a.py", 7, "writer")}


def test_doc_comments_ask_for_their_definitions_in_every_language() -> None:
    """A definition's own doc comment gives its first sentence as the question, in Python,
    Go, Rust, JavaScript and C; licences, parameter lists and code-like comments give none;
    and the passage training shows no longer holds the comment."""
    from training import questions

    python = ('def drain(queue):\n    """Hand every waiting job to a worker.\n\n    More.\n'
              '    """\n    return queue\n')
    go = "// Drain hands every waiting job to a worker.\nfunc Drain(q Queue) int {\n\treturn 0\n}\n"
    rust = ("/// Hands every waiting job to a worker, oldest first.\n#[inline]\n"
            "pub fn drain(q: &mut Queue) {}\n")
    javascript = ("  /**\n   * Hands every waiting job to a worker.\n   */\n"
                  "  drain (queue) {\n    return queue\n  }\n")
    c = "/* Hand every waiting job to a worker. */\nint drain(struct queue *q)\n{\n}\n"
    for text, language in ((python, "python"), (go, "go"), (rust, "rust"),
                           (javascript, "javascript"), (c, "c")):
        comments = questions.doc_comments(text, language)
        assert comments, language
        sentence = questions.doc_sentence(comments[0])
        assert "every waiting job to a worker" in sentence, (language, sentence)
        stripped = questions.strip_doc_comments(text, language)
        assert "waiting job" not in stripped and "drain" in stripped.lower(), language
    assert questions.doc_sentence("Copyright 2020 the authors, all rights reserved.") == ""
    assert questions.doc_sentence(":param queue: the queue to drain now") == ""
    assert questions.doc_sentence("x = compute(y); return x + 1;") == ""
    assert questions.doc_sentence("Too short.") == ""
    # A comment inside a body, above a statement, is not a doc comment.
    assert questions.doc_comments("int f(void)\n{\n    /* count them all here */\n"
                                  "    n += 1;\n}\n", "c") == []


def test_the_model_card_names_each_packages_licence(tmp_path: Path) -> None:
    """Licences as the packages state them (PKG-INFO, package.json, Cargo.toml), else the
    licence files they ship, else where Debian states it."""
    from training import train

    (tmp_path / "py" / "py-1.0").mkdir(parents=True)
    (tmp_path / "py" / "py-1.0" / "PKG-INFO").write_text(
        "Name: py\nLicense-Expression: BSD-3-Clause\n")
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "package.json").write_text('{"name": "js", "license": "MIT"}')
    (tmp_path / "rs" / "rs-1.0").mkdir(parents=True)
    (tmp_path / "rs" / "rs-1.0" / "Cargo.toml").write_text(
        '[package]\nlicense = "MIT OR Apache-2.0"\n')
    (tmp_path / "c" / "doc").mkdir(parents=True)
    (tmp_path / "c" / "COPYING").write_text("terms")
    (tmp_path / "go").mkdir()
    assert train.licence("py", tmp_path) == "BSD-3-Clause"
    assert train.licence("js", tmp_path) == "MIT"
    assert train.licence("rs", tmp_path) == "MIT OR Apache-2.0"
    assert train.licence("c", tmp_path) == "see COPYING"
    assert train.licence("go", tmp_path) == ""
    pin = fetch.Pin("golang-x-dev", "deb", "1.0", "x.deb", "0" * 64, "go")
    assert train.unstated(pin) == "Debian's /usr/share/doc/golang-x-dev/copyright"


def test_the_biencoder_starts_and_refuses_a_missing_file(tmp_path: Path) -> None:
    """training.biencoder parses its three commands without torch (the project's environment
    has none) and refuses a texts file that is not there in one line, not a traceback."""
    import subprocess
    import sys

    from training import biencoder

    assert biencoder.QUERY_LEN == 64 and biencoder.PASSAGE_LEN == 256
    for action in ("train", "evaluate", "embed"):
        done = subprocess.run([sys.executable, "-m", "training.biencoder", action, "--help"],
                              capture_output=True, text=True, check=True)
        assert "usage:" in done.stdout
    done = subprocess.run([sys.executable, "-m", "training.biencoder", "embed", "--texts",
                           str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "x.npy")],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"biencoder: no such file: {tmp_path}/none.jsonl"]


def test_a_test_names_the_code_it_calls_in_python_and_go(tmp_path: Path) -> None:
    """training.behaviours on a real index of a tiny package: a Python test and a Go test
    each give their name, without the callee's own words, as the question for the chunk of
    the callee sharing most words with it; a test that calls nothing of the package gives
    none, nor does one whose name is the callee's name and little else."""
    import subprocess
    import sys

    from training import behaviours, questions

    package = tmp_path / "demo"
    (package / "tests").mkdir(parents=True)
    (package / "demo").mkdir()
    (package / "demo" / "__init__.py").write_text("", encoding="utf-8")
    (package / "demo" / "session.py").write_text(
        "def rebuild_auth(request, response):\n"
        "    \"\"\"Keep or drop the credentials of a redirected request.\"\"\"\n"
        "    if response.host != request.host:\n        request.headers.pop('auth', None)\n"
        "    return request\n\n\n"
        "def make_request(url):\n    return {'url': url, 'headers': {}}\n", encoding="utf-8")
    (package / "tests" / "test_session.py").write_text(
        "from demo.session import make_request, rebuild_auth\n\n\n"
        "def test_redirect_keeps_auth_header_on_same_host():\n"
        "    request = make_request('https://a.example/')\n"
        "    assert rebuild_auth(request, request) is request\n\n\n"
        "def test_sorting_numbers_works_as_expected():\n    assert sorted([2, 1]) == [1, 2]\n\n\n"
        "def test_rebuild_auth():\n    rebuild_auth(make_request('x'), make_request('x'))\n",
        encoding="utf-8")
    (package / "mux.go").write_text(
        "package mux\n\n// Router sends requests on.\ntype Router struct{ strict bool }\n\n"
        "func (r *Router) RedirectTrailingSlash(path string) string {\n"
        "\tif r.strict {\n\t\treturn path\n\t}\n\treturn path + \"/\"\n}\n", encoding="utf-8")
    (package / "mux_test.go").write_text(
        "package mux\n\nimport \"testing\"\n\n"
        "func TestRouter_RedirectTrailingSlashForNonStrictRoutes(t *testing.T) {\n"
        "\tr := &Router{}\n\tif r.RedirectTrailingSlash(\"/a\") != \"/a/\" {\n"
        "\t\tt.Fatal(\"no redirect\")\n\t}\n}\n", encoding="utf-8")
    db = tmp_path / "demo.db"
    subprocess.run([sys.executable, "-m", "ragdb", "index", str(package), "--db", str(db),
                    "--no-vectors"], check=True, capture_output=True)
    pin = fetch.Pin("demo", "pypi", "1.0", "demo-1.0.tar.gz", "0" * 64, "python")
    counts: dict[str, int] = defaultdict(int)
    pairs = behaviours.package_pairs(pin, questions.chunk_rows(db), 5, counts)
    found = {p.test_name: p for p in pairs}
    assert set(found) == {"test_redirect_keeps_auth_header_on_same_host",
                          "TestRouter_RedirectTrailingSlashForNonStrictRoutes"}
    python = found["test_redirect_keeps_auth_header_on_same_host"]
    assert python.record.question == "redirect keeps header on same host"
    assert python.record.source == "test" and python.callee.endswith("rebuild_auth")
    assert python.record.path.endswith("demo/session.py") and python.record.start_line == 1
    assert python.test_path.endswith("tests/test_session.py") and python.test_start_line == 4
    go = found["TestRouter_RedirectTrailingSlashForNonStrictRoutes"]
    assert go.record.question == "router for non strict routes"
    assert go.record.path.endswith("mux.go") and go.callee.endswith("RedirectTrailingSlash")
    assert counts["tests"] == 4 and counts["no single callee"] == 1
    assert counts["too few words"] == 1
    assert behaviours.test_words("TestServeMux_RedirectsTrailingSlash") == (
        "serve", "mux", "redirects", "trailing", "slash")
    assert behaviours.question_from(("retries", "after", "timeout"), "retries") == ""
