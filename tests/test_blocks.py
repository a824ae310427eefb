"""Answers as whole blocks of the sources (ragdb/generate/blocks.py, issue 39), on a corpus of
their own indexed by the real `ragdb index`: the deciding definition whole, a long one as its
signature and the region that matches, docs as whole passages under their headings, every
line verbatim at its number, and a file changed since it was indexed never shown."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragdb import RagDB
from ragdb.generate.blocks import MAX_LINES
from ragdb.generate.cuts import headings, whole_section, without_lead_in
from ragdb.retrieve import Mode
from tests.conftest import index_rows, run_cli, write_corpus


def _long_function() -> str:
    """A 90-line function whose branch on `retry_after` lies deep inside."""
    body = [f"    step_{i} = compute_step({i}, payload)" for i in range(40)]
    branch = [
        "    if response.status == 429:",
        "        # The server asks to wait: honour its Retry-After header.",
        "        retry_after = int(response.headers.get('Retry-After', '1'))",
        "        if retry_after > MAX_BACKOFF_SECONDS:",
        "            raise RateLimited(retry_after)",
        "        time.sleep(retry_after)",
        "        return send_request(payload, attempt + 1)",
    ]
    tail = [f"    record_{i} = finish_step({i}, payload)" for i in range(40)]
    return ("import time\n\nMAX_BACKOFF_SECONDS = 30\n\n\n"
            "def send_request(payload, attempt=0):\n"
            '    """Send one request to the upstream server and return its response."""\n'
            "    response = transport.post(payload)\n"
            + "\n".join(body + branch + tail) + "\n    return response\n")


def _huge_function() -> str:
    """A definition of about 5,000 lines with one line that answers, in its middle."""
    lines = [f"    value_{i} = table[{i}] * 2" for i in range(5000)]
    lines[2500] = "    checksum_crc32c = zlib_crc32c(buffer)  # the checksum uses CRC32C"
    return "def build_everything(table, buffer):\n" + "\n".join(lines) + "\n    return table\n"


CORPUS = {
    "src/client.py": _long_function(),
    "src/huge.py": _huge_function(),
    "src/shapes.py": (
        '"""Shapes."""\n\n\n'
        "class Circle:\n"
        '    """A circle of a given radius."""\n\n'
        "    def __init__(self, radius: float) -> None:\n"
        "        self.radius = radius\n\n"
        "    def circumference_length(self) -> float:\n"
        '        """The circumference length of the circle, two pi times its radius."""\n'
        "        return 2 * 3.14159 * self.radius\n"
    ),
    "docs/setup.md": (
        "# Setup\n\nThis page explains how to set the project up.\n\n"
        "## Install the widget daemon\n\n"
        + "".join(f"Paragraph {i} about unrelated matters of packaging and folders.\n\n"
                  for i in range(8))
        + "Install the widget daemon in these steps:\n\n"
        "1. Download the widget daemon archive.\n"
        "2. Unpack the widget daemon archive into /opt.\n"
        "3. Start the widget daemon with `widgetd --serve`.\n\n"
        + "".join(f"Closing note {i} about other packaging matters and folders.\n\n"
                  for i in range(8))
        + "## Uninstall\n\nRemove /opt/widgetd.\n"
    ),
    "tests/test_gizmo.py": (
        "def test_gizmo_frobnicates_twice():\n"
        "    gizmo = make_gizmo()\n"
        "    assert gizmo.frobnicate() == gizmo.frobnicate()\n"
    ),
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("blocks")
    write_corpus(root / "proj", CORPUS)
    done = run_cli("index", "proj", "--db", "rag.db", "--no-vectors", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture(scope="module")
def rag(indexed: Path) -> Iterator[RagDB]:
    with RagDB(indexed / "rag.db", use_cache=False) as db:
        yield db


def _fenced(text: str) -> list[list[str]]:
    """The lines of each fenced block of an answer."""
    return [body.split("\n") for body in re.findall(r"```\w*\n(.*?)\n```", text, re.S)]


def assert_verbatim(root: Path, answer_text: str, blocks: list[dict[str, object]]) -> None:
    """Each block's lines are its file's lines start..end, in order (dedented), after its
    signature lines, which are the file's lines at their numbers."""
    fenced = iter(_fenced(answer_text))
    for block in blocks:
        lines = (root / str(block["file_path"])).read_text().split("\n")
        start, end = int(str(block["start_line"])), int(str(block["end_line"]))
        assert f"`{block['file_path']}:{start}-{end}`" in answer_text
        if block["kind"] != "code":
            assert "\n".join(lines[start - 1:end]) in answer_text
            continue
        shown = [x for x in next(fenced) if x.strip() != "..."]
        heads = [lines[n - 1].strip() for n in block["signature_lines"]]  # type: ignore
        assert [x.strip() for x in shown] == heads + [x.strip() for x in lines[start - 1:end]]


def test_a_long_definition_is_its_signature_and_the_branch_that_matches(
        rag: RagDB, indexed: Path) -> None:
    answer = rag.answer("What happens when the server answers 429 with a retry_after longer "
                        "than MAX_BACKOFF_SECONDS?", k=5, mode="lexical")
    assert answer.shown is not None
    block = answer.shown["blocks"][0]
    assert block["file_path"] == "proj/src/client.py"
    assert block["end_line"] - block["start_line"] + 1 <= MAX_LINES
    assert block["signature_lines"] == [6]  # def send_request(...)
    text = answer.text
    assert "def send_request(payload, attempt=0):\n    ...\n" in text
    # The branch asked about is whole: no `...` over it; no caption above the block.
    branch = "\n".join(CORPUS["src/client.py"].split("\n")[48:55])
    assert branch in text
    assert "Send one request to the upstream server" not in text
    assert_verbatim(indexed, text, answer.shown["blocks"])


def test_a_short_definition_is_shown_whole_with_its_docstring(rag: RagDB,
                                                              indexed: Path) -> None:
    answer = rag.answer("circumference length of a circle", k=5, mode="lexical")
    assert answer.shown is not None
    first = answer.shown["blocks"][0]
    assert first["file_path"] == "proj/src/shapes.py"
    assert "return 2 * 3.14159 * self.radius" in answer.text
    assert '"""The circumference length of the circle, two pi times its radius."""' in answer.text
    assert "caption" not in first
    assert_verbatim(indexed, answer.text, answer.shown["blocks"])


def test_a_5000_line_definition_shows_the_line_that_matches_quickly(rag: RagDB,
                                                                    indexed: Path) -> None:
    started = time.perf_counter()
    answer = rag.answer("Which checksum does build_everything use: zlib_crc32c?", k=5,
                        mode="lexical")
    assert time.perf_counter() - started < 5
    assert answer.shown is not None
    block = answer.shown["blocks"][0]
    assert block["file_path"] == "proj/src/huge.py"
    assert block["end_line"] - block["start_line"] + 1 <= 60
    assert "checksum_crc32c = zlib_crc32c(buffer)" in answer.text
    assert "def build_everything(table, buffer):" in answer.text
    assert_verbatim(indexed, answer.text, answer.shown["blocks"])


def test_docs_are_the_whole_steps_under_their_heading(rag: RagDB, indexed: Path) -> None:
    answer = rag.answer("How do I install the widget daemon?", k=5, mode="lexical")
    assert answer.shown is not None
    block = answer.shown["blocks"][0]
    assert block["kind"] == "docs" and block["file_path"] == "proj/docs/setup.md"
    for step in ("1. Download the widget daemon archive.",
                 "2. Unpack the widget daemon archive into /opt.",
                 "3. Start the widget daemon with `widgetd --serve`."):
        assert step in answer.text
    assert "Install the widget daemon in these steps:" in answer.text
    # The page fits cuts.WHOLE_SECTION_LINES: it is shown whole, from its heading, its
    # sections with it (readers missed the remedy cut off below a passage).
    assert block["start_line"] == 3 and "(Setup)" in answer.text
    for line in ("This page explains how to set the project up.", "Paragraph 0 about",
                 "Closing note 7", "## Uninstall", "Remove /opt/widgetd."):
        assert line in answer.text
    assert_verbatim(indexed, answer.text, answer.shown["blocks"])


def test_the_answer_without_a_model_is_the_blocks_without_a_caption(rag: RagDB) -> None:
    question = "What happens when the server answers 429 with a retry_after?"
    hits = rag.search(question, 5, "lexical")
    found = rag.answer_from(question, hits, k=5, mode=Mode.lexical, style="extractive")
    assert found.style == "extractive" and found.shown is not None
    assert found.shown["variant"] == "blocks"  # the JSON's name for it, kept
    assert found.shown["blocks"][0]["file_path"] == "proj/src/client.py"
    assert "\n> " not in found.text  # no caption


def test_only_tests_match_says_so(rag: RagDB) -> None:
    answer = rag.answer("Does the gizmo frobnicate twice the same?", k=5, mode="lexical")
    assert answer.shown is not None
    assert answer.shown["blocks"][0]["file_path"] == "proj/tests/test_gizmo.py"
    assert "The code found for this question is tests only" in answer.text


def test_a_file_changed_since_it_was_indexed_is_not_shown(tmp_path: Path) -> None:
    write_corpus(tmp_path / "proj", {"src/shapes.py": CORPUS["src/shapes.py"],
                                     "src/client.py": CORPUS["src/client.py"]})
    assert run_cli("index", "proj", "--db", "rag.db", "--no-vectors",
                   cwd=tmp_path).returncode == 0
    changed = tmp_path / "proj" / "src" / "shapes.py"
    changed.write_text(CORPUS["src/shapes.py"].replace("2 * 3.14159", "6.28318"))
    before = index_rows(tmp_path / "rag.db")
    done = run_cli("answer", "circumference length of a circle", "--mode", "lexical",
                   "--json", "--db", "rag.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert "`proj/src/shapes.py` changed since it was indexed" in record["answer"]
    assert "3.14159" not in record["answer"] and "6.28318" not in record["answer"]
    assert all(b["file_path"] != "proj/src/shapes.py" for b in record["shown"]["blocks"])
    assert index_rows(tmp_path / "rag.db") == before  # answering wrote nothing
    changed.unlink()
    gone = run_cli("answer", "circumference length of a circle", "--mode", "lexical",
                   "--json", "--db", "rag.db", cwd=tmp_path)
    assert "was deleted since it was indexed" in json.loads(gone.stdout)["answer"]


def test_cli_json_says_what_was_tried_and_shown(indexed: Path) -> None:
    done = run_cli("answer", "circumference length of a circle", "--mode", "lexical",
                   "--json", "--db", "rag.db", cwd=indexed, env={"HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["style"] == "extractive" and record["style_tried"] == "extractive"
    assert record["fallback_reason"] is None
    assert {"first_token_s", "total_s"} <= set(record["timings"])
    # The answer made without a model is the blocks (issue 39's blind readers' choice).
    assert record["shown"]["variant"] == "blocks" and record["model"].startswith("blocks")
    assert record["shown"]["blocks"][0]["file_path"] == "proj/src/shapes.py"


def test_help_describes_the_default_that_happens(indexed: Path) -> None:
    done = run_cli("answer", "--help", cwd=indexed, env={"COLUMNS": "200"})
    text = " ".join(done.stdout.split())
    assert "auto (default): generate with a model that writes well" in text
    assert "installed writer standing in for a hub that cannot be reached" in text


def test_a_block_does_not_end_on_the_comment_of_the_code_after_it() -> None:
    lines = ["func (b *Builder) Arg(a any) *Builder {", "\treturn b", "}", "",
             "// Comma adds a comma to the query.", "func (b *Builder) Comma() *Builder {"]
    assert without_lead_in(lines, 0, 4) == 2
    assert without_lead_in(lines, 0, 2) == 2
    closing = ["def f():", "    return 1", "    # the end"]  # the file ends: it stays
    assert without_lead_in(closing, 0, 2) == 2


def test_a_whole_section_is_the_largest_that_fits_with_its_subsections() -> None:
    """The docs cut: the section of the heading, its subsections included,
    else a parent's, while it fits; a section ends at the next heading of its level."""
    markdown = ["# Guide", "", "Intro.", "", "## Errors", "", "When it fails:", "",
                "### Remedy", "", "Restart it.", "", "## Other", "", "Text."]
    heads = headings(markdown)
    assert whole_section(markdown, heads, 4, 10) == (4, 6, 10)  # Errors with its Remedy
    assert whole_section(markdown, heads, 8, 10) == (4, 6, 10)  # Remedy's parent fits too
    assert whole_section(markdown, heads, 8, 20) == (0, 2, 14)  # and the page's
    assert whole_section(markdown, heads, 8, 0) is None
    rst = ["Title", "=====", "", "Intro.", "", "Part", "----", "", "Body.", "", "Other",
           "=====", "", "Text."]
    heads = headings(rst)
    assert whole_section(rst, heads, 5, 3) == (5, 8, 8)
    assert whole_section(rst, heads, 5, 10) == (0, 3, 8)  # not the next `=` section


def test_blind_files_hide_the_variants_and_the_report_maps_them_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.bench_blocks import report, write_blind

    rows = {variant: [{"id": f"q{i}", "set": "ent", "kind": "code", "question": f"Q{i}?",
                       "reference_answer": "R", "answer": f"{variant} answer {i}",
                       "cited": [{"n": 1, "file_path": "a.go", "start_line": 1,
                                  "end_line": 3, "text": "x := 1"}], "shown": None,
                       "seconds": 0.01, "search_s": 0.05} for i in range(3)]
            for variant in ("extractive", "blocks")}
    for variant, answers in rows.items():
        (tmp_path / f"answers_{variant}.json").write_text(json.dumps(answers))
    write_blind(rows, tmp_path)
    key = json.loads((tmp_path / "key.json").read_text())
    blind = json.loads((tmp_path / "blind" / "q0.json").read_text())
    assert set(blind["answers"]) == {"A", "B"} and "variant" not in json.dumps(blind)
    assert "extractive" not in (tmp_path / "blind" / "q0.md").read_text().replace(
        "extractive answer", "")
    letter = {qid: {v: k for k, v in letters.items()} for qid, letters in key.items()}
    verdicts = [{"id": f"q{i}", "letter": letter[f"q{i}"][variant], "exam": True,
                 "satisfied": "yes" if variant == "blocks" else "no", "unsupported": False}
                for i in range(3) for variant in ("extractive", "blocks")]
    (tmp_path / "verdicts_reader1.json").write_text(json.dumps(verdicts))
    report(tmp_path)
    table = capsys.readouterr().out
    assert "| repos3 | code | blocks | 3 | 100% | 3 / 0 / 0 | 0 | 3 / 0 (p = 0.250) |" in table
    assert "| repos3 | code | extractive | 3 | 100% | 0 / 0 / 3 | 0 |  |" in table


def test_cli_json_records_the_writer_tried_and_what_was_shown(indexed: Path) -> None:
    """A model that writes: the JSON says it was tried, what was shown (its checked sentences
    above the blocks, or the blocks alone and why), and what loading it cost."""
    done = run_cli("answer", "circumference length of a circle", "--mode", "lexical",
                   "--style", "generate", "--model", "offline", "--k", "2", "--json",
                   "--db", "rag.db", cwd=indexed, env={"HF_HUB_OFFLINE": "1"}, timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["style_tried"] == "generate"
    if record["style"] == "extractive":
        assert record["fallback_reason"]
    else:
        assert record["style"] == "generate" and record["fallback_reason"] is None
    # Either way the blocks are shown, verbatim, and recorded (the writer only narrates).
    assert record["shown"]["blocks"][0]["file_path"] == "proj/src/shapes.py"
    assert "return 2 * 3.14159 * self.radius" in record["answer"]
    assert record["timings"]["load_s"] > 0 and record["timings"]["first_token_s"] >= 0
