"""The chunker: invariants on generated and real files, and the behaviour retrieval relies on."""

from __future__ import annotations

import ast
import keyword
import re
import tarfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragdb.chunk_packing import Chunk
from ragdb.chunking import chunk_text, file_kind
from ragdb.prose_chunking import org_units

CORPUS_TGZ = Path(__file__).resolve().parents[2] / "shared/corpus/vllm-0.10.1.tar.gz"
KINDS = ("python", "markdown", "rst", "asciidoc", "org", "rdoc", "text")

# The autouse HOME fixture in conftest is harmless to share between examples.
PROPERTY = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])
SLOW_PROPERTY = settings(PROPERTY, max_examples=60)  # generating Python is the slow part


def check_invariants(text: str, chunks: list[Chunk], cap: int) -> None:
    """Within the cap, in order, never whitespace only, never nested, covering every
    non-whitespace character of the file."""
    if not text.strip():
        assert chunks == []
        return
    assert chunks, "a file with content has chunks"
    covered = 0
    for n, chunk in enumerate(chunks):
        assert 0 <= chunk.first < chunk.last <= len(text), chunk
        assert chunk.last - chunk.first <= cap, (chunk, cap)
        assert text[chunk.first:chunk.last].strip(), f"whitespace-only chunk {chunk}"
        if n:
            before = chunks[n - 1]
            # Sorted by first, and with both ends increasing no chunk lies inside another.
            assert before.first < chunk.first, (before, chunk)
            assert before.last < chunk.last, (before, chunk)
        gap = text[covered:chunk.first]
        assert not gap.strip(), f"uncovered text before {chunk}: {gap[:80]!r}"
        covered = max(covered, chunk.last)
    assert not text[covered:].strip(), f"uncovered text at the end: {text[covered:][:80]!r}"


def text_of(text: str, chunk: Chunk) -> str:
    return text[chunk.first:chunk.last]


def chunk_holding(text: str, chunks: list[Chunk], needle: str) -> Chunk:
    needle = needle.strip()
    at = text.index(needle)
    holding = [c for c in chunks if c.first <= at and at + len(needle) <= c.last]
    assert holding, f"no chunk holds {needle!r} whole"
    return holding[0]


def def_ranges(text: str) -> list[tuple[int, int, str]]:
    """(first, last, name) of every def and class, from its first decorator to its last
    non-blank character, as str offsets."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n?|\n", text)] + [len(text)]
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first_line = min([node.lineno] + [d.lineno for d in node.decorator_list])
            assert node.end_lineno is not None
            first = starts[first_line - 1]
            last = first + len(text[first:starts[node.end_lineno]].rstrip())
            found.append((first, last, node.name))
    return found


# --- file kinds and trivial input -------------------------------------------------------------

def test_file_kind_by_suffix() -> None:
    assert file_kind("vllm/lora/request.py") == "python"
    assert file_kind("docs/features/lora.md") == "markdown"
    assert file_kind("README.rst") == "rst"
    assert file_kind("docs/modules/ROOT/pages/index.adoc") == "asciidoc"
    assert file_kind("docs/guide.asciidoc") == "asciidoc"
    assert file_kind("notes/todo.org") == "org"
    assert file_kind("README.rdoc") == "rdoc"
    assert file_kind("requirements/common.txt") == "text"
    assert file_kind("CMakeLists.TXT") == "text"
    assert file_kind("csrc/attention.cu") is None
    assert file_kind("Makefile") is None
    assert file_kind("docs.d/notes") is None


@pytest.mark.parametrize("kind", KINDS)
def test_empty_and_whitespace_only_files_have_no_chunks(kind: str) -> None:
    assert chunk_text("", kind) == []
    assert chunk_text(" \n\t\n\r\n  ", kind, 50) == []


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        chunk_text("x = 1\n", "cobol")
    with pytest.raises(ValueError):
        chunk_text("x = 1\n", "python", 0)


# --- Python -------------------------------------------------------------------------------------

def method(name: str, lines: int, indent: str = "    ") -> str:
    body = "".join(f"{indent}    value_{i} = self.compute({i}, '{name}')\n" for i in range(lines))
    return f"{indent}def {name}(self, x):\n{indent}    \"\"\"Do {name}.\"\"\"\n{body}" \
           f"{indent}    return x\n"


def test_small_python_file_is_one_module_chunk() -> None:
    code = "import os\n\n\ndef main() -> None:\n    print(os.getcwd())\n"
    assert chunk_text(code, "python") == [Chunk(0, len(code.rstrip()), "module", "")]


def test_methods_of_a_class_too_large_carry_the_class_signature() -> None:
    methods = "\n".join(method(f"step_{i}", 8) for i in range(8))
    code = f"import torch\n\n\nclass Engine(Base):\n    \"\"\"Runs steps.\"\"\"\n\n{methods}"
    chunks = chunk_text(code, "python", 1000)
    check_invariants(code, chunks, 1000)
    assert len(chunks) > 2
    for i in range(8):
        holding = chunk_holding(code, chunks, method(f"step_{i}", 8))
        assert holding.context == "class Engine(Base):"
    head = chunk_holding(code, chunks, "class Engine(Base):")
    assert head.kind == "class"
    assert '"""Runs steps."""' in text_of(code, head)


def test_pieces_of_a_method_too_large_carry_class_and_def_signatures() -> None:
    code = "class Engine(Base):\n\n" + method("small", 2) + "\n" + method("huge", 60)
    chunks = chunk_text(code, "python", 800)
    check_invariants(code, chunks, 800)
    inside = [c for c in chunks if c.first > code.index("def huge")]
    assert inside
    for chunk in inside:
        assert chunk.context == "class Engine(Base):\n    def huge(self, x):"
        assert text_of(code, chunk).startswith("        value_")
    # A method too small to stand alone is packed with the head of its large neighbour.
    assert chunk_holding(code, chunks, method("small", 2)).context.startswith(
        "class Engine(Base):")


def test_a_signature_over_several_lines_is_one_line_of_context() -> None:
    body = "".join(f"    total += {i} * weight  # step {i}\n" for i in range(80))
    code = ("def combine(\n    weight: float,\n    bias: float = 0.0,\n) -> float:\n"
            f"    total = bias\n{body}    return total\n")
    chunks = chunk_text(code, "python", 600)
    check_invariants(code, chunks, 600)
    assert {c.context for c in chunks} == {
        "def combine(weight: float, bias: float = 0.0) -> float:"}
    assert chunks[0].kind == "function"


def test_decorators_and_comments_stay_with_their_function() -> None:
    functions = [method(f"helper_{i}", 6, indent="").replace("(self, x)", "(x)")
                 for i in range(6)]
    target = ("# Explains why target exists.\n# Second line of it.\n@functools.cache\n"
              "@register(\n    'target',\n)\ndef target(x):\n    return x\n")
    code = "import functools\n\n\n" + "\n\n".join(functions[:3] + [target] + functions[3:])
    for cap in (300, 500, 1000):
        chunks = chunk_text(code, "python", cap)
        check_invariants(code, chunks, cap)
        chunk_holding(code, chunks, target)
        comment, decorator = code.index("# Explains why"), code.index("@functools.cache")
        assert not any(comment < c.first <= decorator + 40 for c in chunks)
    # When the function starts a chunk, the chunk starts at its comment.
    chunks = chunk_text(code, "python", len(target) + 5)
    assert chunk_holding(code, chunks, target).first == code.index("# Explains why")


def test_docstring_stays_with_its_def() -> None:
    doc = '    """' + "Explains the function at length. " * 12 + '\n    """\n'
    code = ("def first(x):\n" + doc + "    return x\n\n\n" + "def second(y):\n" + doc
            + "".join(f"    y += {i}\n" for i in range(60)) + "    return y\n")
    chunks = chunk_text(code, "python", 700)
    check_invariants(code, chunks, 700)
    holding = chunk_holding(code, chunks, "def second(y):\n" + doc)
    assert holding.kind == "function"


def test_small_functions_are_not_split_or_glued_across() -> None:
    sizes = [3, 14, 2, 9, 9, 1, 20, 4, 12, 6]
    code = "\n\n".join(method(f"f{i}", n, indent="").replace("(self, x)", "(x)")
                       for i, n in enumerate(sizes))
    for cap in (400, 900, 2000):
        chunks = chunk_text(code, "python", cap)
        check_invariants(code, chunks, cap)
        for first, last, name in def_ranges(code):
            if last - first <= cap:
                # Whole in one chunk, and no other chunk begins or ends inside it.
                assert any(c.first <= first and last <= c.last for c in chunks), (name, cap)
                assert not any(first < c.first < last or first < c.last < last
                               for c in chunks), (name, cap)
        assert {c.kind for c in chunks} <= {"function", "module", "statements"}


def test_non_ascii_text_keeps_offsets_exact() -> None:
    functions = [f"def f{i}(x):\n    \"\"\"Ünïcödé 中文 😀 {i}.\"\"\"\n"
                 + "".join(f"    x += len('héllo wörld {j} 日本語')\n" for j in range(12))
                 + "    return x\n" for i in range(10)]
    code = "# -*- coding: utf-8 -*-\n# Ωmega ≈ ∑\n\n" + "\n\n".join(functions)
    chunks = chunk_text(code, "python", 700)
    check_invariants(code, chunks, 700)
    for function in functions:
        chunk_holding(code, chunks, function)
    # Byte columns taken for character offsets would start chunks mid-line.
    assert all(text_of(code, c).startswith(("def f", "# -*-")) for c in chunks)


def test_crlf_python_is_chunked_by_statements() -> None:
    code = "\r\n\r\n".join(method(f"f{i}", 10, indent="").replace("(self, x)", "(x)")
                           for i in range(6)).replace("\n", "\r\n")
    chunks = chunk_text(code, "python", 900)
    check_invariants(code, chunks, 900)
    assert all(text_of(code, c).startswith("def ") for c in chunks)


def test_unparsable_python_is_still_chunked_within_the_cap() -> None:
    """One bad line: cut along tree-sitter's tree (test_python_fallback); mostly errors (its
    tree reads nothing past a NUL): cut as text. Within the cap either way."""
    broken = "def ok(x):\n    return x\n\n" * 60 + "def broken(:\n    pass\n" + "y = 1\n" * 200
    for code in (broken, broken.replace("y = 1", "y = '\0'"), ")" * 5000):
        for cap in (50, 333, 2000):
            chunks = chunk_text(code, "python", cap)
            check_invariants(code, chunks, cap)
            if code == broken:
                assert "text" not in {c.kind for c in chunks}, cap
            else:
                assert {c.kind for c in chunks} == {"text"}


def test_comment_only_python_is_chunked() -> None:
    code = "".join(f"# note {i}: {'words ' * 10}\n" for i in range(100))
    chunks = chunk_text(code, "python", 500)
    check_invariants(code, chunks, 500)


def test_huge_literal_is_cut_inside_the_cap() -> None:
    code = "TABLE = {\n" + "".join(f"    'key_{i}': {i},\n" for i in range(400)) + "}\n"
    code += "\n\ndef lookup(k):\n    return TABLE[k]\n"
    chunks = chunk_text(code, "python", 500)
    check_invariants(code, chunks, 500)
    assert chunk_holding(code, chunks, "def lookup(k):\n    return TABLE[k]").kind == "statements"
    assert chunks[0].kind == "statements"


# --- Markdown, reStructuredText, text -------------------------------------------------------

def paragraph(topic: str, n: int) -> str:
    return " ".join(f"{topic} sentence number {i} explains one more detail." for i in range(n))


LORA_DOC = f"""# LoRA Adapters

{paragraph("intro", 6)}

## Serving LoRA Adapters

{paragraph("serving", 10)}

```bash
# this is a shell comment, not a heading
vllm serve meta-llama/Llama-2-7b-hf --enable-lora
```

{paragraph("modules", 8)}

### Dynamic loading

{paragraph("dynamic", 12)}

## New format for `--lora-modules` {{ #lora-format }}

{paragraph("format", 9)}
"""


def test_markdown_context_is_the_heading_path() -> None:
    chunks = chunk_text(LORA_DOC, "markdown", 1000)
    check_invariants(LORA_DOC, chunks, 1000)
    assert chunk_holding(LORA_DOC, chunks, "serving sentence number 0").context == \
        "LoRA Adapters > Serving LoRA Adapters"
    assert chunk_holding(LORA_DOC, chunks, "dynamic sentence number 11").context == \
        "LoRA Adapters > Serving LoRA Adapters > Dynamic loading"
    assert chunk_holding(LORA_DOC, chunks, "format sentence number 8").context == \
        "LoRA Adapters > New format for `--lora-modules`"


def test_a_hash_line_in_a_fenced_block_is_not_a_heading() -> None:
    chunks = chunk_text(LORA_DOC, "markdown", 1000)
    assert not any("shell comment" in c.context for c in chunks)
    holding = chunk_holding(LORA_DOC, chunks, "vllm serve meta-llama")
    assert holding.context == "LoRA Adapters > Serving LoRA Adapters"
    tilde = "# Top\n\n~~~\n# not a heading\n~~~\n\n" + paragraph("after", 40)
    assert {c.context for c in chunk_text(tilde, "markdown", 500)} == {"Top"}


def test_sections_start_chunks_and_tiny_sections_are_merged() -> None:
    doc = "".join(f"## Part {i}\n\n{paragraph(f'part{i}', 9)}\n\n### Note {i}\n\nShort.\n\n"
                  for i in range(6))
    chunks = chunk_text(doc, "markdown", 1200)
    check_invariants(doc, chunks, 1200)
    for chunk in chunks:
        assert text_of(doc, chunk).startswith("## Part"), text_of(doc, chunk)[:40]
        assert chunk.kind == "section"
        assert len(text_of(doc, chunk).splitlines()) > 2, "a heading alone is useless"


def test_a_long_section_is_split_with_overlap_and_its_path() -> None:
    doc = "# Guide\n\n## Install\n\n" + "\n\n".join(paragraph(f"p{i}", 3) for i in range(30))
    cap = 800
    chunks = chunk_text(doc, "markdown", cap)
    check_invariants(doc, chunks, cap)
    assert len(chunks) >= 4
    assert chunks[0].kind == "section"
    assert {c.kind for c in chunks[1:]} == {"paragraph"}
    # The first chunk starts at the title, glued on as too small to stand alone.
    assert chunks[0].context == "Guide"
    assert {c.context for c in chunks[1:]} == {"Guide > Install"}
    for before, after in zip(chunks, chunks[1:]):
        assert after.first < before.last, "neighbours overlap"
        assert before.last - after.first <= min(200, cap // 10)
        assert doc[after.first - 1] in "\n "
    # Even pieces: no leftover crumb at the end.
    assert min(c.last - c.first for c in chunks) > cap // 4


def test_a_token_longer_than_the_cap_is_sliced() -> None:
    doc = "# Hashes\n\n" + "ab" * 1000 + "\n\nafter the token\n"
    for kind in ("markdown", "text", "rst", "python"):
        chunks = chunk_text(doc, kind, 300)
        check_invariants(doc, chunks, 300)


def test_setext_and_front_matter() -> None:
    doc = ("---\ntitle: x\n# a YAML comment\n---\n\nLoading weights\n===============\n\n"
           + paragraph("load", 10) + "\n\nFast path\n---------\n\n" + paragraph("fast", 10))
    chunks = chunk_text(doc, "markdown", 600)
    check_invariants(doc, chunks, 600)
    assert chunk_holding(doc, chunks, "fast sentence number 9").context == \
        "Loading weights > Fast path"
    assert not any("title" in c.context or "YAML" in c.context for c in chunks)
    assert chunks[0].context == ""


def test_rst_underlined_headings_give_the_path() -> None:
    doc = ("=========\nUser Guide\n=========\n\nIntro text.\n\nInstallation\n------------\n\n"
           + paragraph("install", 12) + "\n\nFrom source\n~~~~~~~~~~~\n\n"
           + paragraph("source", 12) + "\n\nUsage\n-----\n\n" + paragraph("usage", 12) + "\n")
    chunks = chunk_text(doc, "rst", 700)
    check_invariants(doc, chunks, 700)
    assert chunk_holding(doc, chunks, "source sentence number 11").context == \
        "User Guide > Installation > From source"
    assert chunk_holding(doc, chunks, "usage sentence number 11").context == \
        "User Guide > Usage"


def test_asciidoc_titles_give_the_path_and_blocks_hold_none() -> None:
    doc = ("= User Guide\n:toc:\n\nIntro text.\n\n== Installation\n\n"
           + paragraph("install", 12) + "\n\n[source,ruby]\n----\n== not a title\n"
           "# nor this\n----\n\n////\n== commented out\n////\n\n=== From source\n\n"
           + paragraph("source", 12) + "\n\n## Usage\n\n" + paragraph("usage", 12) + "\n")
    chunks = chunk_text(doc, "asciidoc", 700)
    check_invariants(doc, chunks, 700)
    assert chunk_holding(doc, chunks, "source sentence number 11").context == \
        "User Guide > Installation > From source"
    assert chunk_holding(doc, chunks, "usage sentence number 11").context == "User Guide > Usage"
    assert not any("not a title" in c.context or "commented" in c.context for c in chunks)
    assert chunk_holding(doc, chunks, "nor this").context == "User Guide > Installation"


def test_org_headings_give_the_path_and_source_blocks_hold_none() -> None:
    doc = ("#+TITLE: Notes\n\n* Setup :work:\n\n" + paragraph("setup", 10)
           + "\n\n#+BEGIN_SRC python\n* not a heading\n#+END_SRC\n\n** Caching\n\n"
           + paragraph("cache", 10) + "\n\n* Release\n\n" + paragraph("release", 10) + "\n")
    chunks = chunk_text(doc, "org", 700)
    check_invariants(doc, chunks, 700)
    assert chunk_holding(doc, chunks, "cache sentence number 9").context == "Setup > Caching"
    assert chunk_holding(doc, chunks, "release sentence number 9").context == "Release"
    assert not any("not a heading" in c.context for c in chunks)
    assert [unit[3] for unit in org_units(doc)] == ["", "Setup", "Setup > Caching", "Release"]


def test_rdoc_headings_give_the_path_and_verbatim_holds_none() -> None:
    doc = ("= Widget\n\n" + paragraph("intro", 8) + "\n\n== Configuration\n\n"
           + paragraph("config", 10) + "\n\n  = verbatim, not a heading\n\n=== Colours\n\n"
           + paragraph("colour", 10) + "\n")
    chunks = chunk_text(doc, "rdoc", 700)
    check_invariants(doc, chunks, 700)
    assert chunk_holding(doc, chunks, "colour sentence number 9").context == \
        "Widget > Configuration > Colours"
    assert chunk_holding(doc, chunks, "verbatim, not").context == "Widget > Configuration"


def test_text_is_cut_at_paragraphs() -> None:
    doc = "\n\n".join(paragraph(f"t{i}", 4) for i in range(20))
    chunks = chunk_text(doc, "text", 700)
    check_invariants(doc, chunks, 700)
    assert all(c.context == "" and c.kind == "paragraph" for c in chunks)
    assert all(text_of(doc, c).startswith("t") for c in chunks)
    assert all(text_of(doc, c).endswith("detail.") for c in chunks)


# --- properties on generated text ----------------------------------------------------------------

CAPS = st.integers(min_value=50, max_value=2000)
ALPHABET = st.sampled_from(list("abcxyz  \t\n\n\r#`~=-_:.*é中😀\u00a0\u2028\x0c"))

PROSE_LINE = st.one_of(
    st.just(""),
    st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 7), st.text(ALPHABET, max_size=30)),
    st.sampled_from(["```", "```python", "~~~", "---", "===", "-----", "~~~~~~", "    code",
                     "# in code?", ".. note::", "* item", "> quote", "| a | b |"]),
    st.text(ALPHABET, max_size=120),
    st.builds(lambda n: "w" * n, st.integers(1, 3000)),
    st.builds(lambda n: "word " * n, st.integers(1, 500)),
)
PROSE = st.one_of(
    st.text(ALPHABET, max_size=3000),
    st.lists(PROSE_LINE, max_size=80).map("\n".join),
    st.lists(PROSE_LINE, max_size=40).map("\r\n".join),
)


@PROPERTY
@given(PROSE, st.sampled_from(KINDS), CAPS)
def test_invariants_on_generated_text(text: str, kind: str, cap: int) -> None:
    check_invariants(text, chunk_text(text, kind, cap), cap)


NAME = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and not keyword.issoftkeyword(s))
WORDS = st.text(st.sampled_from(list("abc xyz é中😀_")), max_size=60)


@st.composite
def python_block(draw: st.DrawFn, depth: int = 0) -> list[str]:
    """Statements (as lines, indented by four spaces per level) that always parse."""
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 6 if depth < 2 else 3))):
        choice = draw(st.integers(0, 9 if depth < 3 else 4))
        name = draw(NAME)
        if choice == 0:
            lines.append(f"{name} = {draw(st.integers())}")
        elif choice == 1:
            lines.append(f"{name} = {draw(WORDS)!r}  # {draw(WORDS)}")
        elif choice == 2:
            lines += ["", f"# {draw(WORDS)}", f"{name} = None"]
        elif choice == 3:
            lines.append(f"{name} = '{'long ' * draw(st.integers(10, 400))}'")
        elif choice == 4:
            lines.append(f"a = 1; {name} = 2")
        elif choice in (5, 6):
            decorators = [f"@{draw(NAME)}" for _ in range(draw(st.integers(0, 2)))]
            args = ", ".join(draw(st.lists(NAME, max_size=4, unique=True)))
            signature = (f"def {name}({args}):" if draw(st.booleans())
                         else f"def {name}(\n    {args}\n):")
            doc = [f'    """{draw(WORDS)}', f'    {draw(WORDS)}"""'] if draw(st.booleans()) else []
            body = [f"    {line}" if line else "" for line in draw(python_block(depth + 1))]
            lines += ["", "", *decorators, *signature.split("\n"), *doc, *body]
        elif choice == 7:
            body = [f"    {line}" if line else "" for line in draw(python_block(depth + 1))]
            lines += ["", f"class {name.title()}(Base):", *body]
        elif choice == 8:
            body = [f"    {line}" if line else "" for line in draw(python_block(depth + 1))]
            orelse = [f"    {line}" if line else "" for line in draw(python_block(depth + 1))]
            lines += [f"if {name}:", *body, "else:", *orelse]
        else:
            body = [f"    {line}" if line else "" for line in draw(python_block(depth + 1))]
            lines += ["try:", *body, "except ValueError:", "    pass", "finally:", "    x = 0"]
    return lines


PYTHON = python_block().map(lambda lines: "\n".join(lines) + "\n")


@SLOW_PROPERTY
@given(PYTHON, CAPS)
def test_invariants_on_generated_python(code: str, cap: int) -> None:
    ast.parse(code)
    chunks = chunk_text(code, "python", cap)
    check_invariants(code, chunks, cap)
    for first, last, name in def_ranges(code):
        if last - first <= cap:
            assert any(c.first <= first and last <= c.last for c in chunks), (name, cap)


@SLOW_PROPERTY
@given(PYTHON, st.integers(0, 10_000), st.sampled_from(["def (", "\0", ")", "'''", "\t x"]),
       CAPS)
def test_invariants_on_broken_python(code: str, at: int, junk: str, cap: int) -> None:
    at = at % (len(code) + 1)
    broken = code[:at] + junk + code[at:]
    check_invariants(broken, chunk_text(broken, "python", cap), cap)


# --- the reference corpus ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus_files() -> list[tuple[str, str]]:
    """Every 15th .py/.md/.txt file of the vLLM source tarball (about 130 files)."""
    if not CORPUS_TGZ.exists():
        pytest.skip(f"reference corpus not found at {CORPUS_TGZ}")
    files = []
    with tarfile.open(CORPUS_TGZ) as tar:
        members = sorted((m for m in tar.getmembers()
                          if m.isfile() and m.name.endswith((".py", ".md", ".txt"))),
                         key=lambda m: m.name)
        for member in members[::15]:
            handle = tar.extractfile(member)
            assert handle is not None
            files.append((member.name, handle.read().decode("utf-8", errors="replace")))
    return files


@pytest.mark.parametrize("cap", [500, 2000])
def test_invariants_on_real_files(corpus_files: list[tuple[str, str]], cap: int) -> None:
    assert len(corpus_files) > 100
    kinds = set()
    for name, text in corpus_files:
        kind = file_kind(name)
        assert kind is not None
        kinds.add(kind)
        chunks = chunk_text(text, kind, cap)
        check_invariants(text, chunks, cap)
        if kind == "python":
            for first, last, def_name in def_ranges(text):
                if last - first <= cap:
                    assert any(c.first <= first and last <= c.last for c in chunks), \
                        (name, def_name)
    assert kinds == {"python", "markdown", "text"}


def test_real_chunks_are_mostly_of_useful_size(corpus_files: list[tuple[str, str]]) -> None:
    cap = 2000
    sizes = []
    for name, text in corpus_files:
        kind = file_kind(name)
        assert kind is not None
        chunks = chunk_text(text, kind, cap)
        if len(chunks) > 1:
            sizes += [c.last - c.first for c in chunks]
    sizes.sort()
    assert sizes[len(sizes) // 2] > cap // 2
    assert sum(size < cap // 10 for size in sizes) <= len(sizes) // 100


@pytest.mark.parametrize("kind", ["asciidoc", "org", "rdoc", "markdown", "rst"])
def test_heading_lines_built_to_backtrack_are_read_in_one_pass(kind: str) -> None:
    """Long lines that a heading or block pattern with overlapping parts would scan over and
    over (runs of dashes, of tag-like `ab:` words, of blanks before a title)."""
    lines = ["-" * 20_000 + " x", "_" * 20_000 + "-y", "== a" + " \t" * 10_000 + "x",
             "* " + "ab:" * 10_000 + " x", "= " + " \t" * 10_000 + "y", "```" + "`" * 5_000,
             "# a" + " \t" * 10_000 + "x {#id"]
    text = "\n".join(lines)
    started = time.perf_counter()
    check_invariants(text, chunk_text(text, kind, 500), 500)
    assert time.perf_counter() - started < 60  # a guard against a hang only
