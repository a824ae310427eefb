"""The shortcuts an index run takes for speed give the same rows as the plain way: the run's
identifier cache, line numbers counted on from chunk to chunk, full-text rows written in
batches, and the C/C++ pre-parse (noise regex, error share, grammar order)."""

from __future__ import annotations

import re
from bisect import bisect_right
from pathlib import Path
from typing import Any

import pytest
import tree_sitter as ts
from hypothesis import given, settings
from hypothesis import strategies as st

import ragdb.indexing as indexing
import ragdb.syntax_trees as sc
from ragdb.db import connect
from ragdb.indexing import index_paths
from ragdb.tokenize import Analyser, analyse, analyse_terms
from tests.conftest import write_corpus

IDENTIFIER_TEXT = st.text(
    alphabet=st.sampled_from(list("aZ_09 \n.é-Ω(xLoRAvLLMGemma2DecoderLayer")), max_size=300)


@given(st.lists(IDENTIFIER_TEXT, max_size=8))
def test_the_runs_analyser_is_analyse(texts: list[str]) -> None:
    analyser = Analyser()
    for text in texts * 2:  # the second time from the cache
        assert analyser(text) == analyse(text) == " ".join(analyse_terms(text))


def test_the_analyser_cache_is_bounded() -> None:
    analyser = Analyser()
    analyser.MAX = 3
    assert analyser("aa bb cc dd ee") == "aa bb cc dd ee"
    assert len(analyser) <= 3


def _line(text: str, offset: int) -> int:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    return bisect_right(starts, offset)


FILES = {
    "src/a.py": "".join(f"def f{i}(x):\n    '''Doc {i}.'''\n    return x + {i}\n\n\n"
                        for i in range(120)),
    "docs/b.md": "# Title\r\n\r\n" + "".join(
        f"## Part {i}\r\n\r\nwords " * 40 + "\r\n\r\n" for i in range(30)),
    "data/c.json": "{\n" + ",\n".join(f'  "k{i}": [{i}, {i * 7}]' for i in range(900)) + "\n}\n",
    "csrc/d.cu": "".join(f"__global__ void kernel{i}(float* x) {{\n  x[{i}] += {i};\n}}\n\n"
                         for i in range(150)),
    "one_line.txt": "x" * 5000,
}


@pytest.mark.parametrize("limit", [50, indexing._FullText.LIMIT])
def test_rows_match_the_plain_computation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          limit: int) -> None:
    """Line numbers, full-text rows and their ids, whether written in one batch or in many."""
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path / "proj", FILES)
    monkeypatch.setattr(indexing._FullText, "LIMIT", limit)
    conn = connect(tmp_path / "rag.db", create=True)
    index_paths(conn, [Path("proj")])
    rows: list[tuple[Any, ...]] = conn.execute(
        "SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.text, "
        "t.rowid, t.path, t.body FROM chunks AS c JOIN files AS f ON f.id = c.file_id "
        "LEFT JOIN chunks_fts AS t ON t.rowid = c.id ORDER BY c.id").fetchall()
    assert len(rows) > 40
    assert conn.execute("SELECT count(*) FROM chunks_fts").fetchall()[0][0] == len(rows)
    for chunk_id, path, first, last, start, end, body, fts_id, fts_path, fts_body in rows:
        text = (tmp_path / path).read_bytes().decode("utf-8")  # as indexed: \r\n kept
        assert text[first:last] == body
        assert fts_id == chunk_id
        assert start == _line(text, first)
        assert end == _line(text, max(first, last - 1))
        assert fts_path == analyse(path.removeprefix("proj/"))  # the path below its root
        assert fts_body == analyse(body)
    # A second run over the same files changes nothing; one changed file is re-written whole.
    assert index_paths(conn, [Path("proj")]).files_indexed == 0
    (tmp_path / "proj/src/a.py").write_text(FILES["src/a.py"] + "def g():\n    pass\n")
    stats = index_paths(conn, [Path("proj")])
    assert stats.files_indexed == 1
    assert conn.execute("SELECT count(*) FROM chunks_fts").fetchall()[0][0] == conn.execute(
        "SELECT count(*) FROM chunks").fetchall()[0][0]
    hits = conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'kernel149'")
    assert len(hits.fetchall()) == 1


# The CUDA noise pattern as it was written before it was made to start with a literal.
_OLD_CUDA_NOISE = re.compile(
    rb"\b(?:__(?:global|device|host|forceinline|noinline|shared|constant|managed|grid_constant)__"
    rb"|__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)|__align__\s*\([^()]*\))"
    rb"|<<<(?:[^<>;]|<[^<>;]*>)*>>>")
NOISE_PARTS = st.sampled_from([
    "__global__", "__device__", "__host__", "x__global__", "___global__", "_", "__", "a",
    " ", "\n", "__launch_bounds__(256)", "__launch_bounds__ (f(1), 2)", "__align__(16)",
    "<<<grid, block>>>", "<<<g, b, 0, s<int>>>>", "<", ">", ";", "(", ")", "void k()",
])


@settings(max_examples=300)
@given(st.lists(NOISE_PARTS, max_size=30))
def test_cuda_noise_pattern_matches_as_before(parts: list[str]) -> None:
    data = "".join(parts).encode()
    assert sc.CUDA_NOISE.sub(sc.blank, data) == _OLD_CUDA_NOISE.sub(sc.blank, data)


SOURCES = [
    "int f(int x) { return x; }\n",
    "int f(int x) { return x; \n",
    "template <typename T> struct A { T x; };\nint g() { for (;;) {} }\n",
    "class A { public: void f() { int x = ; } };\n}}}\nint y = 3;\n",
    "#define X(a) a\nX(int) y(;\nvoid z() {}\n" * 5,
    "))))((((\n",
]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("grammar", ["c", "cpp"])
def test_error_share_is_what_a_query_finds(source: str, grammar: str) -> None:
    """Walking only the branches that hold an error counts the bytes an ERROR query finds."""
    tree = sc.parser(grammar).parse(source.encode())
    root = tree.root_node
    expected = 0.0
    if root.has_error:
        query = ts.Query(sc.grammar_language(grammar), "(ERROR) @error")
        spans = sorted((n.start_byte, n.end_byte)
                       for n in ts.QueryCursor(query).captures(root).get("error", []))
        covered = end = 0
        for a, b in spans:
            if b > end:
                covered += b - max(a, end)
                end = b
        expected = 1.0 if root.type == "ERROR" else covered / len(source)
    assert sc.error_share(root, len(source)) == expected


def test_a_cpp_header_with_a_stray_error_is_not_parsed_as_c(
        monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = sc.parser

    def counting(grammar: str) -> ts.Parser:
        parsed.append(grammar)
        return real(grammar)

    monkeypatch.setattr(sc, "parser", counting)
    header = "template <typename T> struct A { T x; };\n" + (
        "inline int f(int x) { return x + 1; }\n" * 40) + "int g() { return @; }\n"
    tree = real("cpp").parse(header.encode())
    assert 0 < sc.error_share(tree.root_node, len(header)) <= sc.MAX_ERROR_SHARE
    result = sc.parse(header, "c")
    assert result is not None and result[1] == "cpp"
    assert parsed == ["cpp"]
    parsed.clear()
    plain = "struct s { int x; };\nint f(void) { return 0; }\n"  # no C++ hint: C first
    result = sc.parse(plain, "c")
    assert result is not None and result[1] == "c" and parsed == ["c"]
