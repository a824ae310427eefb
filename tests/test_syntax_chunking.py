"""The tree-sitter chunker: the chunking invariants on every language, the signatures it puts in
context, fallback on unparsable code, real CUDA/C++ files, and which files stay out."""

from __future__ import annotations

import random
import re
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragdb.chunk_packing import Chunk
from ragdb.file_types import (
    SYNTAX_LANGUAGES, is_generated_or_minified, is_vendored_dir, is_vendored_path, language_for,
)
from ragdb.syntax_chunking import chunk_as_text, chunk_code, chunk_source
from ragdb.tokenize import analyse
from tests.test_chunking import check_invariants, chunk_holding, text_of

CORPUS_TGZ = Path(__file__).resolve().parents[2] / "shared/corpus/vllm-0.10.1.tar.gz"
PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def statements(language: str, n: int, indent: str) -> str:
    """n lines of a function body, about 45 chars each."""
    if language in ("go", "ruby", "kotlin", "swift", "scala"):
        line = 'total += compute({k}, "step {k}")'
    elif language == "php":
        line = '$total += compute({k}, "step {k}");'
    elif language in ("lua", "elixir"):
        line = 'total = total + compute({k}, "step {k}")'
    elif language == "haskell":
        line = 't{k} = compute {k} "step {k}"'
    elif language == "ocaml":
        line = 'let _ = compute {k} "step {k}" in'
    elif language == "shell":
        line = 'echo "step {k} of the build" >> "$LOG"'
    else:
        line = 'total += compute({k}, "step {k}");'
    return "".join(indent + line.format(k=k) + "\n" for k in range(n))


@dataclass
class Sample:
    language: str
    code: str
    # context of every piece of the function too large for the cap
    big_context: str
    # (comment, the definition it documents): kept in one chunk
    documented: tuple[tuple[str, str], ...]
    # small definitions that must stay whole
    whole: tuple[str, ...]


BIG = "@BIG@"

SAMPLES = [
    Sample("cuda", """// Copyright 2025 the authors.
#include <vector>
#include <torch/all.h>

namespace vllm {

// Adds one to every element.
template <typename T>
__global__ void add_one_kernel(T* __restrict__ out, const T* __restrict__ in,
                               int n) {
@BIG@}

/// A small cache of blocks.
class BlockCache : public CacheBase {
 public:
  explicit BlockCache(int size) : size_(size) {}
  int size() const { return size_; }
  void clear() { blocks_.clear(); }

 private:
  int size_;
  std::vector<int> blocks_;
};

int helper(int x) { return x + 1; }

}  // namespace vllm

void launch(torch::Tensor& out, int n) {
  vllm::add_one_kernel<float><<<n / 256, 256, 0, stream>>>(out.data_ptr<float>(), n);
}
""", "namespace vllm\ntemplate <typename T> __global__ void add_one_kernel(T* __restrict__ out, "
           "const T* __restrict__ in, int n)",
           (("// Adds one to every element.", "template <typename T>"),
            ("/// A small cache of blocks.", "class BlockCache")),
           ("class BlockCache : public CacheBase {", "int helper(int x) { return x + 1; }",
            "void launch(torch::Tensor& out, int n) {")),
    Sample("cpp", """#include <memory>

namespace vllm::cache {

/// Evicts the least recently used block.
struct Evictor {
  virtual ~Evictor() = default;
  virtual int evict() = 0;
};

class LRUEvictor final : public Evictor {
 public:
  int evict() override {
    int total = 0;
@BIG@    return total;
  }
};

}  // namespace vllm::cache
""", "namespace vllm::cache\nclass LRUEvictor final : public Evictor\n  int evict() override",
           (("/// Evicts the least recently used block.", "struct Evictor {"),),
           ("struct Evictor {",)),
    Sample("c", """#include <stdio.h>

/* A node of the list. */
struct node {
    int value;
    struct node *next;
};

static int helper(int x) { return x + 1; }

/* Sums the list. */
int sum_list(const struct node *head,
             int limit)
{
    int total = 0;
@BIG@    return total;
}
""", "int sum_list(const struct node *head, int limit)",
           (("/* A node of the list. */", "struct node {"), ("/* Sums the list. */", "int sum_")),
           ("struct node {", "static int helper(int x) { return x + 1; }")),
    Sample("go", """package server

import "net/http"

// Server handles requests.
type Server struct {
\taddr string
}

// Handle serves one request.
func (s *Server) Handle(w http.ResponseWriter, r *http.Request) error {
\ttotal := 0
@BIG@\treturn nil
}

func helper(x int) int {
\treturn x + 1
}
""", "func (s *Server) Handle(w http.ResponseWriter, r *http.Request) error",
           (("// Server handles requests.", "type Server struct"),
            ("// Handle serves one request.", "func (s *Server)")),
           ("type Server struct {", "func helper(x int) int {")),
    Sample("rust", """use std::fmt;

/// A pair of values.
#[derive(Debug, Clone)]
pub struct Pair<T> {
    a: T,
    b: T,
}

impl<T: Clone> Summary for Pair<T> {
    /// Sums things.
    fn summarize(&self, count: usize) -> usize {
        let mut total = 0;
@BIG@        total
    }
}

fn helper(x: i32) -> i32 {
    x + 1
}
""", "impl<T: Clone> Summary for Pair<T>\n    fn summarize(&self, count: usize) -> usize",
           (("/// A pair of values.", "pub struct Pair<T>"), ("/// Sums things.", "fn summarize")),
           ("pub struct Pair<T> {", "fn helper(x: i32) -> i32 {")),
    Sample("java", """package org.vllm;

import java.util.List;

/** Serves requests. */
public class Server extends Base implements Handler {
    private final int port;

    /** Makes a server. */
    public Server(int port) {
        this.port = port;
    }

    @Override
    public int handle(Request request, Response response) throws IOException {
        int total = 0;
@BIG@        return total;
    }

    private static int helper(int x) {
        return x + 1;
    }
}
""", "public class Server extends Base implements Handler\n"
           "    @Override public int handle(Request request, Response response) throws IOException",
           (("/** Makes a server. */", "public Server(int port)"),),
           ("public Server(int port) {", "private static int helper(int x) {")),
    Sample("typescript", """import { Base } from "./base";

/** A request router. */
export class Router extends Base implements Handler {
  private routes: Map<string, Route> = new Map();

  constructor(private readonly name: string) {
    super();
  }

  async handle(request: Request, response: Response): Promise<number> {
    let total = 0;
@BIG@    return total;
  }
}

export function helper(x: number): number {
  return x + 1;
}

interface Route {
  path: string;
}
""", "export class Router extends Base implements Handler\n"
           "  async handle(request: Request, response: Response): Promise<number>",
           (("/** A request router. */", "export class Router"),),
           ("constructor(private readonly name: string) {", "export function helper(",
            "interface Route {")),
    Sample("tsx", """import React from "react";

interface Props {
  name: string;
}

// Greets someone.
export function Greeting({ name }: Props): JSX.Element {
  let total = 0;
@BIG@  return <div className="greeting">Hello {name}</div>;
}
""", "export function Greeting({ name }: Props): JSX.Element",
           (("// Greets someone.", "export function Greeting"),), ("interface Props {",)),
    Sample("javascript", """// Config loader.
const fs = require("fs");

class Loader extends Base {
  load(path) {
    return fs.readFileSync(path);
  }
}

/** Renders the page. */
export const render = async (page, options) => {
  let total = 0;
@BIG@  return total;
};
""", "export const render = async (page, options) =>",
           (("/** Renders the page. */", "export const render"),),
           ("class Loader extends Base {",)),
    Sample("shell", """#!/usr/bin/env bash
set -euo pipefail

# Prints how to call this script.
usage() {
  echo "usage: $0 [target]"
}

build_all() {
@BIG@}

main "$@"
""", "build_all()", (("# Prints how to call this script.", "usage() {"),), ("usage() {",)),
]


BODY_INDENT = {"cuda": "  ", "cpp": "    ", "c": "    ", "go": "\t", "rust": "        ",
               "java": "        ", "typescript": "    ", "tsx": "  ", "javascript": "  ",
               "shell": "  "}


def expand(sample: Sample, n: int = 60) -> str:
    return sample.code.replace(BIG, statements(sample.language, n, BODY_INDENT[sample.language]))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.language for s in SAMPLES])
@pytest.mark.parametrize("cap", [700, 1000])
def test_realistic_file(sample: Sample, cap: int) -> None:
    code = expand(sample)
    chunks = chunk_code(code, sample.language, cap)
    assert chunks is not None
    check_invariants(code, chunks, cap)
    assert {c.kind for c in chunks} <= {"function", "class", "statements", "module"}
    # Every piece of the large function carries its signature, outermost first.
    inside = [c for c in chunks if "step 1" in text_of(code, c) or "step 59" in text_of(code, c)]
    assert inside
    for chunk in inside:
        assert chunk.context == sample.big_context, chunk
    head = chunk_holding(code, chunks, "step 0")
    signature_start = sample.big_context.split("\n")[-1].strip().split(" ")[0]
    assert signature_start in text_of(code, head)
    # The piece holding the definition's first line is named after the outermost one in it.
    outer = [c for c in sample.big_context.split("\n")[:-1] if not c.startswith("namespace")]
    holds_outer = bool(outer) and outer[0].split("<")[0] in text_of(code, head)
    assert head.kind == ("class" if holds_outer else "function"), head
    assert all(c.kind == "statements" for c in inside if c is not head)
    for comment, definition in sample.documented:
        holding = chunk_holding(code, chunks, comment)
        assert definition in text_of(code, holding), (comment, definition)
    for piece in sample.whole:
        at = code.index(piece)
        end = code.find("\n}", at)
        end = len(code) if end < 0 else end + 2
        whole = code[at:end] if end - at <= cap else piece
        chunk_holding(code, chunks, whole)


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.language for s in SAMPLES])
def test_small_file_is_one_module_chunk(sample: Sample) -> None:
    code = sample.code.replace(BIG, "")
    chunks = chunk_code(code, sample.language, 5000)
    assert chunks is not None
    assert chunks == [Chunk(0, len(code.rstrip()), "module", "", chunks[0].names)]
    # The definitions it holds are named, as the file writes them.
    assert chunks[0].names and all(re.search(rf"\b{n}\b", code) for n in chunks[0].names)


def test_a_class_too_large_is_split_by_methods_with_its_signature() -> None:
    methods = "".join(
        f"\n    /** Step {i}. */\n    public int step{i}(int x) {{\n"
        + statements("java", 8, "        ") + "        return x;\n    }\n" for i in range(8))
    code = ("package a;\n\n/** Engine. */\n"
            f"public final class Engine<T> extends Base {{\n{methods}}}\n")
    chunks = chunk_code(code, "java", 1000)
    assert chunks is not None
    check_invariants(code, chunks, 1000)
    for i in range(8):
        holding = chunk_holding(code, chunks, f"/** Step {i}. */\n    public int step{i}(int x)")
        assert holding.context == "public final class Engine<T> extends Base"
    head = chunk_holding(code, chunks, "public final class Engine<T>")
    assert head.kind == "class"
    assert "/** Engine. */" in text_of(code, head)


def test_non_ascii_text_keeps_offsets_exact() -> None:
    functions = [f"// Ünïcödé 中文 😀 {i}.\nfunc f{i}(x int) int {{\n"
                 + "".join(f'\tx += len("héllo wörld {j} 日本語")\n' for j in range(12))
                 + "\treturn x\n}\n" for i in range(10)]
    code = "// Ωmega ≈ ∑\npackage main\n\n" + "\n".join(functions)
    chunks = chunk_code(code, "go", 700)
    assert chunks is not None
    check_invariants(code, chunks, 700)
    for function in functions:
        chunk_holding(code, chunks, function)
    # Byte offsets taken for character offsets would start chunks mid-line.
    assert all(text_of(code, c).startswith(("// Ünïcödé", "// Ωmega")) for c in chunks)
    cuda = "// 注释 é\n" + expand(SAMPLES[0]).replace("step", "шаг 😀")
    chunks = chunk_code(cuda, "cuda", 600)
    assert chunks is not None
    check_invariants(cuda, chunks, 600)
    assert any(c.context.endswith("int n)") for c in chunks)


def test_a_line_longer_than_the_cap_is_cut_at_words() -> None:
    code = ("const char* kTable = \"" + "word " * 400 + "\";\n\nint main() {\n  return 0;\n}\n")
    chunks = chunk_code(code, "c", 300)
    assert chunks is not None
    check_invariants(code, chunks, 300)
    for chunk in chunks[1:-1]:
        assert code[chunk.first - 1] == " " and code[chunk.first] == "w"


def test_unparsable_code_falls_back_to_text() -> None:
    garbage = "".join(f"@@ {i} )))) ]] => <<< ``` ### $$ %%% \n" for i in range(200))
    code = "package main\n\nfunc ok() {}\n\n" + garbage
    assert chunk_code(code, "go", 500) is None
    assert chunk_code(garbage, "cpp", 500) is None
    chunks, fell_back = chunk_source(code, "go", 500)
    assert fell_back
    check_invariants(code, chunks, 500)
    assert {c.kind for c in chunks} == {"text"}
    # A single slip in a large file is no reason to give up its tree.
    slipped = expand(SAMPLES[3]).replace("func helper(x int) int {", "func helper(x int) int {{")
    assert chunk_code(slipped, "go", 700) is not None


def test_text_languages_are_cut_as_text() -> None:
    yaml = "".join(f"key_{i}:\n  value: {i}\n  name: item {i}\n\n" for i in range(100))
    chunks, fell_back = chunk_source(yaml, "yaml", 400)
    assert not fell_back
    check_invariants(yaml, chunks, 400)
    assert all(text_of(yaml, c).startswith("key_") for c in chunks)
    assert chunk_as_text(" \n\n", 100) == []
    with pytest.raises(ValueError):
        chunk_code("int x;", "cobol", 100)
    with pytest.raises(ValueError):
        chunk_code("int x;", "c", 0)


def test_empty_files_have_no_chunks() -> None:
    for language in SYNTAX_LANGUAGES:
        assert chunk_code("", language, 100) == []
        assert chunk_code(" \n\t\n", language, 100) == []


def test_comment_only_file_is_chunked() -> None:
    code = "".join(f"// note {i}: {'words ' * 10}\n" for i in range(100))
    chunks = chunk_code(code, "rust", 500)
    assert chunks is not None
    check_invariants(code, chunks, 500)


# --- properties on generated code -------------------------------------------------------------

WORDS = st.text(st.sampled_from(list("abc xyz é中😀_")), max_size=40)
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).map(lambda s: "n_" + s)


def snippet(language: str, kind: int, name: str, words: str, n: int) -> str:
    """One valid top-level item: a documented function, a class or struct, a declaration, or
    a function with n body lines."""
    body = statements(language, n, "    ")
    comment = {"shell": "#", "ruby": "#", "lua": "--", "elixir": "#", "haskell": "--"}.get(
        language, "//")
    doc = f"{comment} {words}\n" if language != "ocaml" else f"(* {words} *)\n"
    if language == "elixir":
        return [doc + f"def {name}(total) do\n{body}  total\nend\n",
                doc + f"defmodule {name.capitalize()} do\n  def m(total) do\n{body}  end\nend\n",
                f"{name} = \"{words}\"\n",
                f"defmodule {name.capitalize()} do\n  defp f(total) do\n{body}  end\nend\n"
                ][kind % 4]
    if language == "haskell":
        where = f"  where\n{body}" if body else ""
        return [doc + f"{name} :: Int -> Int\n{name} total = total\n{where}",
                doc + f"data {name.capitalize()} = {name.capitalize()} Int\n",
                f"{name} = \"{words}\"\n",
                f"class {name.capitalize()} a where\n  size :: a -> Int\n"][kind % 4]
    if language == "ocaml":
        return [doc + f"let {name} total =\n{body}  total\n",
                doc + f"type {name} = {{ a : int; b : float }}\n",
                f"let {name} = \"{words}\"\n",
                f"module {name.capitalize()} = struct\n  let f total =\n{body}    total\nend\n"
                ][kind % 4]
    if language == "zig":
        return [doc + f"fn {name}(total: i32) i32 {{\n{body}    return total;\n}}\n",
                doc + f"const {name.capitalize()} = struct {{\n    a: i32,\n}};\n",
                f"const {name} = \"{words}\";\n",
                f"pub fn {name}(t: i32) void {{\n    var total = t;\n{body}    _ = total;\n}}\n"
                ][kind % 4]
    if language == "dart":
        return [doc + f"int {name}(int total) {{\n{body}    return total;\n}}\n",
                doc + f"class {name.capitalize()} {{\n  void m(int total) {{\n{body}  }}\n}}\n",
                f"const {name} = \"{words}\";\n",
                f"extension {name.capitalize()} on int {{\n  void g(int total) {{\n{body}  }}\n}}\n"
                ][kind % 4]
    if language == "ruby":
        return [doc + f"def {name}(total)\n{body}  total\nend\n",
                doc + f"class {name.capitalize()} < Base\n  def m(total)\n{body}  end\nend\n",
                f"{name.upper()} = \"{words}\"\n",
                f"module {name.capitalize()}\n  def self.f(total)\n{body}  end\nend\n"][kind % 4]
    if language == "php":
        return [doc + f"function {name}($total) {{\n{body}    return $total;\n}}\n",
                doc + f"class {name} extends Base {{\n  public function m($total) {{\n{body}"
                "  }\n}\n",
                f"const {name.upper()} = \"{words}\";\n",
                f"interface {name} {{\n  public function size(): int;\n}}\n"][kind % 4]
    if language == "csharp":
        return [doc + f"class {name} {{\n  int F(int total) {{\n{body}    return total;\n"
                "  }\n}\n",
                doc + f"interface {name} {{\n  int Size();\n}}\n",
                f"enum {name} {{ A, B }}\n",
                f"struct {name} {{\n  void G(int total) {{\n{body}  }}\n}}\n"][kind % 4]
    if language in ("kotlin", "swift", "scala"):
        fn = {"kotlin": "fun", "swift": "func", "scala": "def"}[language]
        ret = {"kotlin": ": Int", "swift": " -> Int", "scala": ": Int ="}[language]
        param = "total: Int" if language != "swift" else "_ t: Int"
        head = "var total = t\n" if language == "swift" else "var t2 = total\n"
        return [doc + f"{fn} {name}({param}){ret} {{\n    {head}{body}    return 1\n}}\n",
                doc + f"class {name.capitalize()} {{\n    {fn} m({param}){ret} {{\n    {head}"
                f"{body}        return 2\n    }}\n}}\n",
                ("let" if language == "swift" else "val") + f" {name} = \"{words}\"\n",
                f"object {name.capitalize()} {{\n    {fn} f({param}){ret} {{\n    {head}{body}"
                "        return 3\n    }\n}\n".replace(
                    "object", "enum" if language == "swift" else "object")][kind % 4]
    if language == "lua":
        return [doc + f"local function {name}(total)\n{body}  return total\nend\n",
                doc + f"function M.{name}(total)\n{body}  return total\nend\n",
                f"local {name} = \"{words}\"\n",
                f"function M:{name}(total)\n{body}end\n"][kind % 4]
    if language == "shell":
        return [doc + f"{name}() {{\n{body}  true\n}}\n", f"{name}=\"{words}\"\n",
                f"if [ -n \"${name}\" ]; then\n{body}fi\n"][kind % 3]
    if language in ("c", "cpp", "cuda"):
        return [doc + f"int {name}(int total) {{\n{body}    return total;\n}}\n",
                doc + f"struct {name} {{\n  int a;\n  float b;\n}};\n",
                f"static const char* {name} = \"{words}\";\n",
                (("template <typename T>\n__global__ void " if language != "c" else "void ")
                 + f"{name}(int total) {{\n{body}}}\n")][kind % 4]
    if language == "go":
        body = statements(language, n, "\t")
        return [doc + f"func {name}(total int) int {{\n{body}\treturn total\n}}\n",
                doc + f"type {name} struct {{\n\ta int\n}}\n",
                f"var {name} = \"{words}\"\n",
                f"func (s *S) {name}(total int) {{\n{body}}}\n"][kind % 4]
    if language == "rust":
        return [doc + f"fn {name}(mut total: i32) -> i32 {{\n{body}    total\n}}\n",
                doc + f"struct {name} {{\n    a: i32,\n}}\n",
                f"const {name.upper()}: &str = \"{words}\";\n",
                f"impl S {{\n    fn {name}(&self, mut total: i32) {{\n{body}    }}\n}}\n"][kind % 4]
    if language == "java":
        return [doc + f"class {name} {{\n  int f(int total) {{\n{body}    return total;\n"
                "  }\n}\n",
                doc + f"interface {name} {{\n  int size();\n}}\n",
                f"enum {name} {{ A, B }}\n",
                f"record {name}(int a) {{\n  void g(int total) {{\n{body}  }}\n}}\n"][kind % 4]
    typed = language in ("typescript", "tsx")
    t = ": number" if typed else ""
    return [doc + f"function {name}(total{t}){t} {{\n{body}    return total;\n}}\n",
            doc + f"class {name} extends Base {{\n  m(total{t}) {{\n{body}  }}\n}}\n",
            f"const {name} = \"{words}\";\n",
            f"export const {name} = (total{t}) => {{\n{body}}};\n"][kind % 4]


@st.composite
def source_file(draw: st.DrawFn) -> tuple[str, str]:
    language = draw(st.sampled_from(sorted(SYNTAX_LANGUAGES)))
    items = [snippet(language, draw(st.integers(0, 3)), f"{draw(NAMES)}_{i}", draw(WORDS),
                     draw(st.integers(0, 80)))
             for i in range(draw(st.integers(1, 8)))]
    separator = draw(st.sampled_from(["\n", "\n\n", "\n\n\n"]))
    head = {"go": "package main\n\n", "java": "package a;\n\n", "php": "<?php\n\n"}.get(
        language, "")
    return language, head + separator.join(items)


@PROPERTY
@given(source_file(), st.integers(min_value=50, max_value=2000))
def test_invariants_on_generated_code(source: tuple[str, str], cap: int) -> None:
    language, code = source
    chunks = chunk_code(code, language, cap)
    assert chunks is not None, "valid code parses"
    check_invariants(code, chunks, cap)


@PROPERTY
@given(source_file(), st.integers(0, 10_000), st.sampled_from(["{", "}", "(", "\"", "/*", "é"]),
       st.integers(min_value=50, max_value=2000))
def test_invariants_on_broken_code(source: tuple[str, str], at: int, junk: str, cap: int) -> None:
    language, code = source
    at = at % (len(code) + 1)
    broken = code[:at] + junk + code[at:]
    chunks, _ = chunk_source(broken, language, cap)
    check_invariants(broken, chunks, cap)


# --- the reference corpus ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def native_files() -> list[tuple[str, str]]:
    """Every C, C++ and CUDA file of the vLLM source tarball (about 215 files, 2.9 MB)."""
    if not CORPUS_TGZ.exists():
        pytest.skip(f"reference corpus not found at {CORPUS_TGZ}")
    files = []
    with tarfile.open(CORPUS_TGZ) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith((".cu", ".cuh", ".cpp", ".h", ".hpp")):
                handle = tar.extractfile(member)
                assert handle is not None
                files.append((member.name, handle.read().decode("utf-8", errors="replace")))
    return sorted(files)


@pytest.mark.parametrize("cap", [500, 2000])
def test_invariants_on_real_native_files(native_files: list[tuple[str, str]], cap: int) -> None:
    assert len(native_files) > 200
    fell_back = []
    kinds: set[str] = set()
    kernels_in_context = 0
    started = time.perf_counter()
    for name, text in native_files:
        language = language_for(name)
        assert language in ("c", "cpp", "cuda"), name
        chunks = chunk_code(text, language, cap)
        if chunks is None:
            fell_back.append(name)
            chunks = chunk_as_text(text, cap)
        else:
            kinds.update(c.kind for c in chunks)
        check_invariants(text, chunks, cap)
        kernels_in_context += sum("__global__" in c.context for c in chunks)
    elapsed = time.perf_counter() - started
    assert len(fell_back) <= len(native_files) // 20, fell_back
    assert kinds == {"function", "class", "statements", "module"}
    if cap == 500:
        assert kernels_in_context > 50
    assert elapsed < 60


def test_real_chunks_are_mostly_of_useful_size(native_files: list[tuple[str, str]]) -> None:
    cap = 2000
    sizes = []
    for name, text in native_files:
        chunks = chunk_code(text, language_for(name) or "cpp", cap) or []
        if len(chunks) > 1:
            sizes += [c.last - c.first for c in chunks]
    sizes.sort()
    assert sizes[len(sizes) // 2] > cap // 3
    assert sum(size < cap // 10 for size in sizes) <= len(sizes) // 50


# --- which files, which language ----------------------------------------------------------------

def test_language_for() -> None:
    expected = {
        "web/app.js": "javascript", "a.mjs": "javascript", "a.cjs": "javascript",
        "ui/App.jsx": "javascript", "src/index.ts": "typescript", "a.mts": "typescript",
        "ui/App.tsx": "tsx", "cmd/main.go": "go", "src/lib.rs": "rust",
        "org/vllm/A.java": "java", "lib.c": "c", "csrc/ops.h": "c", "a.cc": "cpp",
        "a.cpp": "cpp", "a.cxx": "cpp", "a.hpp": "cpp", "a.hh": "cpp", "a.hxx": "cpp",
        "csrc/attention.cu": "cuda", "csrc/utils.CUH": "cuda", "tools/build.sh": "shell",
        "x.bash": "shell", "ci.yaml": "yaml", ".github/workflows/ci.yml": "yaml",
        "pyproject.toml": "toml", "data.json": "json", "docker/Dockerfile": "dockerfile",
        "docker/Dockerfile.rocm": "dockerfile", "cpu.dockerfile": "dockerfile",
        "CMakeLists.txt": "cmake", "cmake/utils.cmake": "cmake", "Makefile": "make",
        "setup.cfg": "ini", "tox.ini": "ini", "api.proto": "proto", "schema.sql": "sql",
        "index.html": "html", "style.css": "css",
        "vllm/main.py": None, "README.md": None, "notes.txt": None, "image.png": None,
        "LICENSE": None,
    }
    assert {path: language_for(path) for path in expected} == expected


def test_generated_minified_and_vendored_files_stay_out() -> None:
    code = "int main() {\n  return 0;\n}\n" * 50
    assert is_generated_or_minified("csrc/main.cc", code) is None
    assert is_generated_or_minified("web/package-lock.json", "{}") == "lockfile"
    assert is_generated_or_minified("yarn.lock", "") == "lockfile"
    assert is_generated_or_minified("Cargo.lock", "") == "lockfile"
    assert is_generated_or_minified("static/app.min.js", "var a;") == "minified"
    assert is_generated_or_minified("api/x.pb.go", "package x") == "generated"
    assert is_generated_or_minified("vllm/x_pb2.py", "") == "generated"
    go = "// Code generated by protoc-gen-go. DO NOT EDIT.\n\npackage api\n" + code
    assert is_generated_or_minified("api/types.go", go) == "generated"
    assert is_generated_or_minified("a.js", "/** @generated */\n" + code) == "generated"
    assert is_generated_or_minified(
        "a.h", "// This file is autogenerated. Do not edit.\n" + code) == "generated"
    # A mention of generated code further down is not a marker.
    assert is_generated_or_minified("a.cc", code * 2 + "// @generated below\n") is None
    assert is_generated_or_minified("a.js", "var a=1;" * 2000) == "minified"
    assert is_generated_or_minified("a.js", code + "x" * 20_000 + "\n" + code) == "minified"
    assert is_generated_or_minified("a.c", "int x;\x00\x01") == "binary"
    assert is_generated_or_minified("third_party/lib/a.c", code) == "vendored"
    assert is_vendored_dir("vendor") and is_vendored_dir("third_party")
    assert is_vendored_dir("node_modules") and not is_vendored_dir("vllm")
    assert is_vendored_path("a/vendor/b.go") and not is_vendored_path("vendor.go")


def test_real_native_files_are_not_taken_for_generated(
        native_files: list[tuple[str, str]]) -> None:
    flagged = {name: is_generated_or_minified(name, text) for name, text in native_files}
    flagged = {name: why for name, why in flagged.items() if why}
    assert len(flagged) <= 5, flagged


# --- identifiers of every language ----------------------------------------------------------------

@pytest.mark.parametrize("text, terms", [
    ("getHTTPServer", "get http server gethttpserver"),
    ("PagedAttention", "paged attention pagedattention"),
    ("snake_case_name", "snake case name snakecasename"),
    ("MAX_MODEL_LEN", "max model len maxmodellen"),
    ("--max-model-len", "max model len"),
    ("std::vector<int>", "std vector int"),
    ("torch::Tensor& out", "torch tensor out"),
    ("self->next_node", "self next node nextnode"),
    ("__global__ void paged_attention_v1_kernel",
     "global void paged attention v 1 v1 kernel pagedattentionv1kernel"),
    ("fn summarize(&self) -> usize", "fn summarize self usize"),
    ("func (s *Server) HandleFunc(w http.ResponseWriter)",
     "func s server handle func handlefunc w http response writer responsewriter"),
])
def test_identifiers_of_other_languages_split_into_words(text: str, terms: str) -> None:
    assert analyse(text) == terms


# Every grammar: (the opening and closing of a block, a line inside it).
NESTING = {
    "javascript": ("{\n", "}\n"), "typescript": ("{\n", "}\n"), "tsx": ("{\n", "}\n"),
    "go": ("{\n", "}\n"), "rust": ("{\n", "}\n"), "java": ("{\n", "}\n"), "c": ("{\n", "}\n"),
    "cpp": ("{\n", "}\n"), "cuda": ("{\n", "}\n"), "shell": ("{\n", "}\n"),
    "ruby": ("begin\n", "end\n"), "php": ("if ($a) {\n", "}\n"), "csharp": ("{\n", "}\n"),
    "kotlin": ("run {\n", "}\n"), "swift": ("do {\n", "}\n"), "scala": ("{\n", "}\n"),
    "lua": ("do\n", "end\n"), "elixir": ("if a do\n", "end\n"), "haskell": ("(", ")"),
    "ocaml": ("(", ")"), "zig": ("{\n", "}\n"), "dart": ("{\n", "}\n"),
}


@pytest.mark.parametrize("language", sorted(SYNTAX_LANGUAGES))
def test_pathological_input_in_every_grammar_is_chunked_within_the_cap(language: str) -> None:
    """Blocks 3,000 deep, one line of 200,000 characters, 50,000 characters of bracket soup:
    chunks within the cap that cover the text, by the tree or as text, never an exception."""
    opening, closing = NESTING[language]
    head = "<?php\n" if language == "php" else ""
    soup = "".join(random.Random(7).choice("{}()[]\"'#/*\n abcdef=:;<?>") for _ in range(50_000))
    for text in (head + opening * 3000 + "x = 1\n" + closing * 3000, "x" * 200_000, soup):
        chunks, _ = chunk_source(text, language, 2000)
        check_invariants(text, chunks, 2000)


def test_a_parse_past_its_time_budget_is_cut_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """tree-sitter-lua's error recovery grows with the square of the junk it reads (10 s for
    50 KB of bracket soup on 2 cores): the parse stops at its budget and the file is cut as
    text; valid code of the same size parses well within it."""
    import ragdb.syntax_trees as syntax

    monkeypatch.setattr(syntax, "PARSE_SECONDS", 0.05)
    monkeypatch.setattr(syntax, "PARSE_SECONDS_PER_BYTE", 0.0)
    soup = "".join(random.Random(7).choice("{}()[]\"'#/*\n abcdef=:;<?>") for _ in range(50_000))
    started = time.perf_counter()
    chunks, fell_back = chunk_source(soup, "lua", 2000)
    assert fell_back and time.perf_counter() - started < 60  # a guard against a hang only
    check_invariants(soup, chunks, 2000)
    code = "".join(f"local function f{i}(x)\n  return x + {i}\nend\n" for i in range(1000))
    chunks, fell_back = chunk_source(code, "lua", 2000)
    assert not fell_back and any("f999" in c.names for c in chunks)


def test_names_are_read_after_the_parse_budget_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree parsed through the budget's callback asks the callback for its text again when
    node.text is read, and the callback answers nothing once the budget is spent: node.text
    then never returned (CI, a loaded host). Names are cut from the file's bytes instead."""
    import threading

    import ragdb.syntax_trees as syntax
    from ragdb.definition_names import definition_names

    monkeypatch.setattr(syntax, "PARSE_SECONDS", 0.2)
    monkeypatch.setattr(syntax, "PARSE_SECONDS_PER_BYTE", 0.0)
    code = "".join(f"local function f{i}(x)\n  return x + {i}\nend\n" for i in range(300))
    data = code.encode()
    tree = syntax.parse_in_time("lua", data)
    assert tree is not None
    time.sleep(0.3)  # the budget is spent: the callback now answers nothing
    found: list[list[tuple[int, str]]] = []
    reader = threading.Thread(target=lambda: found.append(
        definition_names(tree, "lua", data)), daemon=True)
    reader.start()
    reader.join(timeout=60)  # a guard against the hang only
    assert found and [name for _, name in found[0]] == [f"f{i}" for i in range(300)]
