"""Definitions in every language: the chunk that defines a name outranks three chunks that
only use it (a real index and a real lexical search over a small crafted repository per
language and construct). The names the syntax tree gives each definition go into the FTS
context column; without them the uses, which write the name more often, come first."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragdb import RagDB
from ragdb.retrieve import Mode

# language: (suffix, filler function holding {body}, filler line with {i}, {j} = i - 1)
LANGUAGES = {
    "typescript": ("ts", "function busyWork(): number {\n  let total0 = 0;\n{body}\n"
                         "  return total0;\n}\n", "  let total{i} = total{j} + {i};"),
    "javascript": ("js", "function busyWork() {\n  let total0 = 0;\n{body}\n"
                         "  return total0;\n}\n", "  let total{i} = total{j} + {i};"),
    "go": ("go", "func busyWork() int {\n\ttotal0 := 0\n{body}\n\treturn total0\n}\n",
           "\ttotal{i} := total{j} + {i}"),
    "rust": ("rs", "fn busy_work() -> u32 {\n    let total0 = 0;\n{body}\n    total0\n}\n",
             "    let total{i} = total{j} + {i};"),
    "c": ("c", "static int busy_work(void) {\n    int total0 = 0;\n{body}\n"
               "    return total0;\n}\n", "    int total{i} = total{j} + {i};"),
    "cpp": ("cpp", "static int busy_work() {\n    int total0 = 0;\n{body}\n"
                   "    return total0;\n}\n", "    int total{i} = total{j} + {i};"),
    "java": ("java", "class Busy{n} {\n  int busyWork() {\n    int total0 = 0;\n{body}\n"
                     "    return total0;\n  }\n}\n", "    int total{i} = total{j} + {i};"),
    "shell": ("sh", "busy_work() {\n  total0=0\n{body}\n  echo \"$total0\"\n}\n",
              "  total{i}=$((total{j} + {i}))"),
    "python": ("py", "def busy_work():\n    total0 = 0\n{body}\n    return total0\n",
               "    total{i} = total{j} + {i}"),
    "ruby": ("rb", "def busy_work\n  total0 = 0\n{body}\n  total0\nend\n",
             "  total{i} = total{j} + {i}"),
    "php": ("php", "function busyWork{n}(): int {\n  $total0 = 0;\n{body}\n"
                   "  return $total0;\n}\n", "  $total{i} = $total{j} + {i};"),
    "csharp": ("cs", "class Busy{n} {\n  int BusyWork() {\n    int total0 = 0;\n{body}\n"
                     "    return total0;\n  }\n}\n", "    int total{i} = total{j} + {i};"),
    "kotlin": ("kt", "fun busyWork{n}(): Int {\n    val total0 = 0\n{body}\n    return total0\n}\n",
               "    val total{i} = total{j} + {i}"),
    "swift": ("swift", "func busyWork{n}() -> Int {\n    let total0 = 0\n{body}\n"
                       "    return total0\n}\n", "    let total{i} = total{j} + {i}"),
    "scala": ("scala", "def busyWork{n}(): Int = {\n  val total0 = 0\n{body}\n  total0\n}\n",
              "  val total{i} = total{j} + {i}"),
    "lua": ("lua", "local function busy_work()\n  local total0 = 0\n{body}\n  return total0\nend\n",
            "  local total{i} = total{j} + {i}"),
    "elixir": ("ex", "defmodule Busy{n} do\n  def busy_work do\n    total0 = 0\n{body}\n"
                     "    total0\n  end\nend\n", "    total{i} = total{j} + {i}"),
    "haskell": ("hs", "busyWork{n} :: Int\nbusyWork{n} = total0\n  where\n    total0 = 0\n{body}\n",
                "    total{i} = total{j} + {i}"),
    "ocaml": ("ml", "let busy_work{n} () =\n  let total0 = 0 in\n{body}\n  total0\n",
              "  let total{i} = total{j} + {i} in"),
    "zig": ("zig", "fn busyWork{n}() i32 {\n    const total0: i32 = 0;\n{body}\n"
                   "    return total0;\n}\n", "    const total{i}: i32 = total{j} + {i};"),
    "dart": ("dart", "int busyWork{n}() {\n  var total0 = 0;\n{body}\n  return total0;\n}\n",
             "  var total{i} = total{j} + {i};"),
}

# How each language writes a line comment (the others: //).
LINE_COMMENT = {"shell": "#", "python": "#", "ruby": "#", "lua": "--", "elixir": "#",
                "haskell": "--"}
# What a file must start with (PHP code is inside its opening tag).
FILE_HEAD = {"php": "<?php\n"}

# (language, construct, name, the definition, a use of the name: each of the three using
# files writes it once, as most code that calls or reads a name does; the using functions'
# own names share no word with it: since ragdb-split-6 `report1` gives `report` too)
CASES = [
    ("typescript", "export const", "e164",
     "export const e164 = /^\\+[1-9]\\d{6,14}$/;\n",
     "function check{n}(v: string): boolean {\n  return regexes.e164.test(v);\n}\n"),
    ("typescript", "export let", "retryBudget",
     "export let retryBudget = 3;\n",
     "function attempt{n}(): number {\n  return config.retryBudget + 1;\n}\n"),
    ("typescript", "arrow function", "formatLabel",
     "const formatLabel = (x: string): string => x.trim().toLowerCase();\n",
     "function show{n}(a: string): string {\n  return formatLabel(a);\n}\n"),
    ("typescript", "object", "httpDefaults",
     "const httpDefaults = { timeoutMs: 3000, retries: 2 };\n",
     "function timeout{n}(): number {\n  return httpDefaults.timeoutMs;\n}\n"),
    ("typescript", "interface", "MetricReport",
     "interface MetricReport {\n  value: number;\n  rating: string;\n}\n",
     "function use{n}(a: MetricReport): number {\n  return a.value;\n}\n"),
    ("typescript", "type alias", "RatingBand",
     "type RatingBand = 'good' | 'needs-improvement' | 'poor';\n",
     "function use{n}(a: RatingBand): boolean {\n  return a === 'good';\n}\n"),
    ("typescript", "enum", "NavigationKind",
     "enum NavigationKind {\n  Reload,\n  Restore,\n  Prerender,\n}\n",
     "function nav{n}(k: number): boolean {\n  return k === NavigationKind.Reload;\n}\n"),
    ("typescript", "class", "ThresholdTracker",
     "class ThresholdTracker {\n  limit = 10;\n}\n",
     "function track{n}(): number {\n  return new ThresholdTracker().limit;\n}\n"),
    ("typescript", "method", "computeRating",
     "class Scorer {\n  computeRating(v: number): string {\n    return v > 1 ? 'poor' : 'good';"
     "\n  }\n}\n",
     "function use{n}(s: Scorer): string {\n  return s.computeRating(1);\n}\n"),
    ("javascript", "export const", "maxQueueDepth",
     "export const maxQueueDepth = 64;\n",
     "function use{n}() {\n  return limits.maxQueueDepth * 2;\n}\n"),
    ("javascript", "object method", "fetchProfile",
     "const api = {\n  fetchProfile: (id) => request('/u/' + id),\n};\n",
     "function load{n}(id) {\n  return api.fetchProfile(id);\n}\n"),
    ("javascript", "exports assignment", "parseQuery",
     "module.exports.parseQuery = function (s) {\n  return s.split('&');\n};\n",
     "function read{n}(s) {\n  return lib.parseQuery(s);\n}\n"),
    ("go", "function", "ParseHeaders",
     "func ParseHeaders(lines []string) []string {\n\treturn lines\n}\n",
     "func use{n}(l []string) int {\n\treturn len(ParseHeaders(l))\n}\n"),
    ("go", "method", "FlushBuffer",
     "func (w *Writer) FlushBuffer() error {\n\treturn nil\n}\n",
     "func use{n}(w *Writer) error {\n\treturn w.FlushBuffer()\n}\n"),
    ("go", "type", "RingBuffer",
     "type RingBuffer struct {\n\tdata []int\n}\n",
     "func use{n}(a *RingBuffer) int {\n\treturn len(a.data)\n}\n"),
    ("go", "const", "DefaultTimeout",
     "const DefaultTimeout = 30\n",
     "func use{n}() int {\n\treturn DefaultTimeout * 2\n}\n"),
    ("go", "var", "ErrClosedPipe",
     "var ErrClosedPipe = errors.New(\"shut\")\n",
     "func use{n}(e error) bool {\n\treturn e == ErrClosedPipe\n}\n"),
    ("rust", "fn", "encode_float",
     "pub fn encode_float(v: f64) -> String {\n    v.to_string()\n}\n",
     "fn use{n}(v: f64) -> usize {\n    encode_float(v).len()\n}\n"),
    ("rust", "struct", "SerializerState",
     "pub struct SerializerState {\n    depth: u8,\n}\n",
     "fn use{n}(a: &SerializerState) -> u8 {\n    a.depth\n}\n"),
    ("rust", "enum", "ValueKind",
     "pub enum ValueKind {\n    Int,\n    Float,\n}\n",
     "fn use{n}(k: u8) -> bool {\n    k == ValueKind::Int as u8\n}\n"),
    ("rust", "trait", "WriteBytes",
     "pub trait WriteBytes {\n    fn put(&mut self, b: u8);\n}\n",
     "fn use{n}<W: WriteBytes>(a: &mut W) {\n    a.put(1);\n}\n"),
    ("rust", "impl", "BytesWriter",
     "impl BytesWriter {\n    pub fn reset(&mut self) {\n        self.len = 0;\n    }\n}\n",
     "fn use{n}(a: &mut BytesWriter) {\n    a.reset();\n}\n"),
    ("rust", "macro_rules!", "err_invalid",
     "macro_rules! err_invalid {\n    ($msg:expr) => {\n        panic!($msg)\n    };\n}\n",
     "fn use{n}() -> Result<(), &'static str> {\n    err_invalid!(\"b\")\n}\n"),
    ("rust", "const", "RECURSION_LIMIT",
     "pub const RECURSION_LIMIT: u8 = 255;\n",
     "fn use{n}(d: u8) -> bool {\n    d < RECURSION_LIMIT\n}\n"),
    ("rust", "static", "EMPTY_UNICODE",
     "pub static EMPTY_UNICODE: &str = \"\";\n",
     "fn use{n}() -> usize {\n    EMPTY_UNICODE.len()\n}\n"),
    ("c", "function", "ring_buffer_push",
     "void ring_buffer_push(int *buf, int value) {\n    buf[0] = value;\n}\n",
     "void use{n}(int *b) {\n    ring_buffer_push(b, 1);\n}\n"),
    ("c", "struct", "proc_entry",
     "struct proc_entry {\n    int pid;\n    int ppid;\n};\n",
     "int use{n}(struct proc_entry *a) {\n    return a->pid;\n}\n"),
    ("c", "typedef", "cpu_times_t",
     "typedef struct {\n    double user;\n    double system;\n} cpu_times_t;\n",
     "double use{n}(cpu_times_t *a) {\n    return a->user;\n}\n"),
    ("c", "macro", "PSUTIL_TICKS",
     "#define PSUTIL_TICKS 100\n",
     "int use{n}(int t) {\n    return t / PSUTIL_TICKS;\n}\n"),
    ("c", "function-like macro", "NSEC_TO_SEC",
     "#define NSEC_TO_SEC(ns) ((ns) / 1000000000.0)\n",
     "double use{n}(long a) {\n    return NSEC_TO_SEC(a);\n}\n"),
    ("cpp", "class", "TokenBucket",
     "class TokenBucket {\n public:\n  int tokens = 0;\n};\n",
     "int use{n}(TokenBucket& a) {\n  return a.tokens;\n}\n"),
    ("cpp", "alias", "TensorMap",
     "using TensorMap = std::vector<float>;\n",
     "int use{n}(TensorMap& a) {\n  return a.size();\n}\n"),
    ("java", "class", "LoraRequestCache",
     "class LoraRequestCache {\n  int size = 0;\n}\n",
     "class User{n} {\n  int use(LoraRequestCache a) {\n    return a.size;\n  }\n}\n"),
    ("java", "method", "evictOldest",
     "class Lru {\n  void evictOldest() {\n    return;\n  }\n}\n",
     "class User{n} {\n  void use(Lru l) {\n    l.evictOldest();\n  }\n}\n"),
    ("shell", "function", "deploy_cluster",
     "deploy_cluster() {\n  echo \"deploying $1\"\n}\n",
     "use{n}() {\n  deploy_cluster staging\n}\n"),
    ("python", "function", "load_adapter",
     "def load_adapter(path):\n    return open(path)\n",
     "def use{n}(p):\n    return load_adapter(p)\n"),
    ("python", "class", "BlockAllocator",
     "class BlockAllocator:\n    size = 16\n",
     "def use{n}(a: BlockAllocator):\n    return a.size\n"),
    ("python", "module constant", "DEFAULT_MAX_TOKENS",
     "DEFAULT_MAX_TOKENS: int = 512\n",
     "def use{n}():\n    return limits.DEFAULT_MAX_TOKENS\n"),
    ("ruby", "method", "parse_docstring",
     "def parse_docstring(text)\n  text.strip\nend\n",
     "def use{n}(t)\n  parse_docstring(t)\nend\n"),
    ("ruby", "class", "TagLibrary",
     "class TagLibrary < Base\n  def size\n    3\n  end\nend\n",
     "def use{n}\n  TagLibrary.new.size\nend\n"),
    ("ruby", "module method", "register_handler",
     "module Handlers\n  class Registry\n    def self.register_handler(h)\n      h\n    end\n"
     "  end\nend\n",
     "def use{n}(h)\n  Handlers::Registry.register_handler(h)\nend\n"),
    ("ruby", "predicate method", "cache_valid",
     "def cache_valid?(entry)\n  entry.fresh\nend\n",
     "def use{n}(e)\n  cache_valid?(e)\nend\n"),
    ("ruby", "constant", "MAX_DEPTH",
     "MAX_DEPTH = 25\n",
     "def use{n}(d)\n  d < MAX_DEPTH\nend\n"),
    ("php", "function", "render_view",
     "function render_view(string $name): string {\n  return $name;\n}\n",
     "function use{n}(string $v): string {\n  return render_view($v);\n}\n"),
    ("php", "class method", "resolveRoute",
     "class Router {\n  public function resolveRoute(string $p): string {\n"
     "    return $p;\n  }\n}\n",
     "function use{n}(Router $r): string {\n  return $r->resolveRoute('/');\n}\n"),
    ("php", "interface", "CacheStore",
     "interface CacheStore {\n  public function get(string $k);\n}\n",
     "function use{n}(CacheStore $c) {\n  return $c->get('a');\n}\n"),
    ("csharp", "class", "RetryPolicy",
     "public class RetryPolicy {\n  public int Limit = 3;\n}\n",
     "class User{n} {\n  int Use(RetryPolicy p) {\n    return p.Limit;\n  }\n}\n"),
    ("csharp", "method", "ComputeChecksum",
     "class Hasher {\n  public int ComputeChecksum(byte[] b) {\n    return b.Length;\n  }\n}\n",
     "class User{n} {\n  int Use(Hasher h) {\n    return h.ComputeChecksum(null);\n  }\n}\n"),
    ("csharp", "property", "ConnectionString",
     "class Settings {\n  public string ConnectionString { get; set; }\n}\n",
     "class User{n} {\n  string Use(Settings s) {\n    return s.ConnectionString;\n  }\n}\n"),
    ("kotlin", "function", "parseHeader",
     "fun parseHeader(line: String): String {\n    return line.trim()\n}\n",
     "fun use{n}(l: String): String {\n    return parseHeader(l)\n}\n"),
    ("kotlin", "object", "EventBus",
     "object EventBus {\n    val listeners = mutableListOf<String>()\n}\n",
     "fun use{n}(): Int {\n    return EventBus.listeners.size\n}\n"),
    ("kotlin", "data class", "GeoPoint",
     "data class GeoPoint(val lat: Double, val lon: Double) {\n"
     "    fun flip() = GeoPoint(lon, lat)\n}\n",
     "fun use{n}(p: GeoPoint): Double {\n    return p.lat\n}\n"),
    ("swift", "struct", "RenderOptions",
     "struct RenderOptions {\n    var scale: Int\n}\n",
     "func use{n}(o: RenderOptions) -> Int {\n    return o.scale\n}\n"),
    ("swift", "protocol", "Drawable",
     "protocol Drawable {\n    func draw() -> Int\n}\n",
     "func use{n}(d: Drawable) -> Int {\n    return d.draw()\n}\n"),
    ("swift", "method", "layoutSubviews",
     "class Panel {\n    func layoutSubviews() -> Int {\n        return 1\n    }\n}\n",
     "func use{n}(p: Panel) -> Int {\n    return p.layoutSubviews()\n}\n"),
    ("scala", "case class", "Endpoint",
     "case class Endpoint(host: String, port: Int) {\n  def url: String = host\n}\n",
     "def use{n}(e: Endpoint): String = {\n  e.host\n}\n"),
    ("scala", "trait", "Codec",
     "trait Codec {\n  def encode(s: String): String\n}\n",
     "def use{n}(c: Codec): String = {\n  c.encode(\"a\")\n}\n"),
    ("scala", "object method", "fromConfig",
     "object Loader {\n  def fromConfig(path: String): String = {\n    path\n  }\n}\n",
     "def use{n}(p: String): String = {\n  Loader.fromConfig(p)\n}\n"),
    ("lua", "module function", "render_template",
     "local M = {}\nfunction M.render_template(s)\n  return s\nend\nreturn M\n",
     "local function use{n}(s)\n  return view.render_template(s)\nend\n"),
    ("elixir", "def", "fetch_account",
     "defmodule Accounts do\n  def fetch_account(id) do\n    Repo.get(id)\n  end\nend\n",
     "defmodule User{n} do\n  def use(id), do: Accounts.fetch_account(id)\nend\n"),
    ("elixir", "defmodule", "RateLimiter",
     "defmodule MyApp.RateLimiter do\n  def allow, do: true\nend\n",
     "defmodule User{n} do\n  def use, do: MyApp.RateLimiter.allow()\nend\n"),
    ("haskell", "function", "mergeIntervals",
     "mergeIntervals :: [Int] -> [Int]\nmergeIntervals xs = xs\n",
     "use{n} :: [Int] -> Int\nuse{n} xs = length (mergeIntervals xs)\n"),
    ("haskell", "data", "PriorityQueue",
     "data PriorityQueue = PriorityQueue [Int]\n",
     "use{n} :: PriorityQueue -> Int\nuse{n} _ = 0\n"),
    ("ocaml", "let", "parse_header",
     "let parse_header line =\n  String.trim line\n",
     "let use{n} l =\n  parse_header l\n"),
    ("ocaml", "module", "Scheduler",
     "module Scheduler = struct\n  let run () = ()\nend\n",
     "let use{n} () =\n  Scheduler.run ()\n"),
    ("zig", "fn", "parseHeader",
     "pub fn parseHeader(line: []const u8) []const u8 {\n    return line;\n}\n",
     "fn use{n}(l: []const u8) usize {\n    return parseHeader(l).len;\n}\n"),
    ("zig", "struct", "RingBuffer",
     "pub const RingBuffer = struct {\n    len: usize,\n};\n",
     "fn use{n}(r: RingBuffer) usize {\n    return r.len;\n}\n"),
    ("dart", "class", "SessionStore",
     "class SessionStore {\n  int size = 0;\n}\n",
     "int use{n}(SessionStore s) {\n  return s.size;\n}\n"),
    ("dart", "function", "formatDuration",
     "String formatDuration(int ms) {\n  return '$ms ms';\n}\n",
     "String use{n}(int a) {\n  return formatDuration(a);\n}\n"),
    ("lua", "method", "flush_queue",
     "local Queue = {}\nfunction Queue:flush_queue()\n  return self\nend\nreturn Queue\n",
     "local function use{n}(q)\n  return q:flush_queue()\nend\n"),
]


def _filler(language: str, n: int) -> str:
    suffix, template, line = LANGUAGES[language]
    body = "\n".join(line.replace("{i}", str(i)).replace("{j}", str(i - 1))
                     for i in range(1, 16))
    return template.replace("{body}", body).replace("{n}", str(n))


@pytest.mark.parametrize("language, construct, name, definition, use", CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_defining_chunk_outranks_three_that_use_the_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, language: str, construct: str,
        name: str, definition: str, use: str) -> None:
    suffix = LANGUAGES[language][0]
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    # The owner is a little longer than each user (a comment above the definition, as code
    # has): with the same count of the name, BM25 alone would rank the shorter uses first.
    mark = LINE_COMMENT.get(language, "//")
    note = f"{mark} Keep in step with the release notes.\n"
    if language == "ocaml":
        note = "(* Keep in step with the release notes. *)\n"
    if definition.startswith(""):  # the comment goes inside PHP's opening tag
        definition = definition[len(""):]
        note = "" + note
    files = {f"src/owner.{suffix}": note + definition + "\n" + _filler(language, 0)}
    for n in range(1, 4):
        files[f"src/user{n}.{suffix}"] = use.replace("{n}", str(n)) + "\n" + _filler(language, n)
    for n in range(4, 10):  # files that never write the name, as a real repository has
        files[f"src/other{n}.{suffix}"] = _filler(language, n)
    for rel, text in files.items():
        (repo / rel).write_text(FILE_HEAD.get(language, "") + text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    rag = RagDB(tmp_path / "rag.db", use_cache=False)
    result = rag.index(["repo"], vectors=False)
    assert result.stats.languages == {language: 10}, result.stats.languages
    hits = rag.search(f"What is {name}?", k=4, mode=Mode.lexical)
    assert hits[0].file_path == f"repo/src/owner.{suffix}", (construct, [
        (h.file_path, h.score) for h in hits])
    assert definition.strip().splitlines()[0] in hits[0].text
    assert sorted(h.file_path for h in hits[1:]) == [
        f"repo/src/user{n}.{suffix}" for n in range(1, 4)]
