"""Definitions and references (issue 41): measured against the tools their users know.

    uv run --frozen python -m benchmarks.bench_symbols defs       # against universal-ctags
    uv run --frozen --with jedi python -m benchmarks.bench_symbols refs   # against jedi
    uv run --frozen python -m benchmarks.bench_symbols refs-go    # against gopls (Go)
    uv run --frozen python -m benchmarks.bench_symbols speed      # ragdb references, vLLM
    uv run --frozen python -m benchmarks.bench_symbols index [--before COMMIT] [--vectors]

* defs: ragdb's definitions (ragdb.symbols.extract, what an index run stores) against
  `ctags --output-format=json` (Debian's universal-ctags, default kinds) on the same files, per
  language, as (file, name, line) triples: recall (ctags' tags ragdb has) and precision
  (ragdb's that ctags has). Left out on both sides, as neither tool's definition in the
  other's sense: ctags' imports, includes, package clauses and Rust `impl` blocks, anonymous
  names; ragdb's module symbols (a Python file) and Python instance attributes (`self.x =
  ...`, kind field: ctags has no kind for them). TypeScript and JavaScript, by where the name
  stands in the file's syntax (tree-sitter, js_places), on both sides:
  - locals: a variable or constant declared in a function's body (for-of bindings too). ragdb
    keeps none, as in every other language and as ctags' own `local` kind (off by default)
    reads a `let`; ctags' TypeScript parser tags a `const` there as a constant (6,540 in zod);
  - members of object literals and type literals (`{a: 1}`, `as {a: string}`): values and
    anonymous types, not declarations; ctags tags some;
  - overload signatures: ctags tags the first signature's line, ragdb the implementation's
    (as C's prototypes, off in ctags): the tag is moved to the implementation's line;
  - imports (`import {a as b}`: ctags' alias).
  Definitions in function bodies other than variables (nested functions, local types, enums,
  classes) stay in. Reported apart, not left out: ctags' tags on a name no declaration names
  in the syntax (a word of a type annotation, `satisfies`, `false`, a subscript) and the
  recall without them. C, C++ and CUDA are compared as they are: ctags reads only some
  `#else` branches; its CUDA parser has C's kinds only (no namespace, class, `using` alias),
  so it is no reference for CUDA's C++.
* refs: for Python names sampled from two packages (functions, methods, classes), jedi's
  `get_references(scope="project")` at the definition against `ragdb references` of its
  qualified name: precision and recall of ragdb's resolved uses, as (file, line, column), the
  definition itself and type stubs (.pyi: jedi merges them with the code they describe) left
  out; and how many uses of the name ragdb leaves unresolved. jedi is not a dependency of
  ragdb: run with `uv run --with jedi`.
* refs-go: the same for Go, against gopls (Debian's `gopls` and `golang-go`; cobra's imports
  from Debian's golang-github-spf13-pflag-dev, golang-github-cpuguy83-go-md2man-v2-dev,
  golang-github-inconshreveable-mousetrap-dev, golang-gopkg-yaml.v3-dev): cobra copied into a
  GOPATH (GO111MODULE=off: nothing is fetched), functions, methods and types sampled from its
  code (not its tests), `gopls references FILE:LINE:COL` at each name (the declaration left
  out, tests searched) against `ragdb references` of its qualified name, as (file, line,
  column).
* speed: `ragdb references NAME` on the vLLM index, in process (warm) and as a whole process
  (the installed `ragdb` command), over names sampled from the index; the map within 2,000
  tokens.
* index: the full vLLM index (lexical only unless --vectors) with the tables and without them
  (the code of --before, from `git archive`): CPU and wall seconds, rag.db size; alternated.

Run at `nice` on a shared host: every figure is printed under the host line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from benchmarks.common import BENCH_DIR, CORPUS, ensure_corpus, host_line

TRAIN = Path("data/train/raw")
#: language -> (corpus name, files): vLLM and packages from the registries (training corpora,
#: fetched by `python -m training.fetch`).
DEF_SETS: list[tuple[str, str, Path, tuple[str, ...]]] = [
    ("python", "vllm", CORPUS, (".py",)),
    ("python", "httpx", TRAIN / "httpx", (".py",)),
    ("go", "cobra", TRAIN / "golang-github-spf13-cobra-dev", (".go",)),
    ("rust", "clap", TRAIN / "librust-clap-dev", (".rs",)),
    ("typescript", "zod", TRAIN / "zod" / "src", (".ts",)),
    ("c", "zlib", TRAIN / "zlib", (".c", ".h")),
    ("c", "jq", TRAIN / "jq" / "src", (".c", ".h")),
    ("cpp", "vllm csrc", CORPUS / "csrc", (".cpp", ".cc", ".hpp")),
    ("cuda", "vllm csrc", CORPUS / "csrc", (".cu", ".cuh")),
    ("javascript", "express", TRAIN / "express", (".js",)),
]
#: ctags kinds that are not definitions in ragdb's sense, by language: imports and their
#: aliases, includes, package clauses, Rust impl blocks, C++ using-directives.
CTAGS_SKIP = {
    "python": {"namespace", "module", "unknown"},
    "go": {"package", "packageName", "unknown"},
    "rust": {"implementation"},
    "c": {"header"}, "cpp": {"header", "using", "name"}, "cuda": {"header", "using", "name"},
}
#: ragdb kinds ctags has no counterpart for, by language.
RAGDB_SKIP = {"python": {"module", "field"}}
GO_PACKAGE = ("cobra", TRAIN / "golang-github-spf13-cobra-dev" / "github.com" / "spf13" / "cobra",
              "github.com/spf13/cobra")
GOPATH_DEPS = Path("/usr/share/gocode")
REF_PACKAGES = [("httpx", TRAIN / "httpx", "httpx"), ("attrs", TRAIN / "attrs", "src")]
SAMPLE_PER_PACKAGE = 150


def _files(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    skip = {".git", "node_modules", "__pycache__"}
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        found += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(suffixes)
                  and not f.endswith(".d.ts")]
    return found


def _language(path: Path, default: str) -> str:
    from ragdb.file_types import LANGUAGES

    return LANGUAGES.get(path.suffix, default) if default != "python" else "python"


def ctags_tags(files: list[Path], language: str) -> dict[tuple[str, str, int], str]:
    """(file, name, line) of each tag ctags writes for the files (a name without its spaces:
    ctags writes `operator ()`), with its kind."""
    done = subprocess.run(
        ["ctags", "--output-format=json", "--fields=+nKzE", "-f", "-", "-L", "-"],
        input="\n".join(str(f) for f in files), capture_output=True, text=True, check=True)
    tags = {}
    for line in done.stdout.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or tag.get("kind") in CTAGS_SKIP.get(language, ()):
            continue
        if "anonymous" in str(tag.get("extras", "")):
            continue
        tags[(str(tag["path"]), str(tag["name"]).replace(" ", ""), int(tag["line"]))] = \
            str(tag.get("kind"))
    return tags


# -- where a JavaScript or TypeScript name stands, by the file's syntax -------------------------

#: The bodies that make a declaration in them local.
JS_FUNCTIONS = {"function_declaration", "function_expression", "function", "arrow_function",
                "method_definition", "generator_function", "generator_function_declaration",
                "class_static_block"}
#: (parent type, field or "" for any named child): where a name is declared.
JS_DECLARED = {
    ("variable_declarator", "name"), ("function_declaration", "name"),
    ("generator_function_declaration", "name"), ("function_expression", "name"),
    ("function_signature", "name"), ("class_declaration", "name"),
    ("abstract_class_declaration", "name"), ("class", "name"), ("method_definition", "name"),
    ("method_signature", "name"), ("abstract_method_signature", "name"),
    ("public_field_definition", "name"), ("field_definition", "property"),
    ("property_signature", "name"), ("interface_declaration", "name"),
    ("type_alias_declaration", "name"), ("enum_declaration", "name"), ("enum_body", ""),
    ("enum_assignment", "name"), ("internal_module", "name"), ("module", "name"),
    ("for_in_statement", "left"), ("array_pattern", ""), ("object_pattern", ""),
    ("pair_pattern", "value"), ("assignment_expression", "left"),
    ("member_expression", "property"),
}
_NAMES = {"identifier", "property_identifier", "type_identifier",
          "shorthand_property_identifier_pattern", "private_property_identifier"}


def _declared_at(node: Any) -> str:
    """What a name node is, for the comparison: 'local' (a variable declared in a
    function's body), 'nested' (a function, class or type declared there), 'overload' (a
    signature with its implementation below), 'object' (a member of an object or type
    literal), 'import', 'declared' (anything else a declaration names) or 'use' (no
    declaration names it: a type annotation's word, a keyword, an expression)."""
    parent = node.parent
    if node.type not in _NAMES or parent is None:
        return "use"
    if parent.type in ("import_specifier", "import_clause", "namespace_import"):
        return "import"
    if parent.type == "pair" and parent.child_by_field_name("key") == node:
        return "object"
    if parent.type in ("method_definition", "shorthand_property_identifier") and \
            parent.parent is not None and parent.parent.type == "object":
        return "object"
    if parent.type in ("property_signature", "method_signature") and \
            parent.parent is not None and parent.parent.type == "object_type":
        return "object"  # a member of a type literal, as of an object literal
    if parent.type == "function_signature" and (
            parent.parent is None or parent.parent.type != "ambient_declaration"):
        return "overload"
    if parent.type == "method_signature" and parent.parent is not None and \
            parent.parent.type == "class_body":
        return "overload"
    if not any(parent.type == p and (not f or parent.child_by_field_name(f) == node)
               for p, f in JS_DECLARED):
        return "use"
    if parent.type == "member_expression" and not (
            parent.parent is not None and parent.parent.type == "assignment_expression"):
        return "use"
    up = parent
    while up is not None and up.type != "program":
        if up.type in ("statement_block", "class_static_block") and up.parent is not None \
                and up.parent.type in JS_FUNCTIONS:
            return "local" if _value_binding(node) else "nested"
        up = up.parent
    return "declared"


def _value_binding(node: Any) -> bool:
    """A variable's or constant's name (not a function's, class's or type's)."""
    parent = node.parent
    if parent.type == "variable_declarator":
        value = parent.child_by_field_name("value")
        return value is None or value.type not in ("arrow_function", "function_expression",
                                                   "function", "generator_function", "class")
    return parent.type in ("for_in_statement", "array_pattern", "object_pattern", "pair_pattern")


def _implementation(node: Any) -> int:
    """The line of the implementation an overload signature's name announces (0: none)."""
    signature = node.parent
    around = signature.parent if signature.parent is not None and \
        signature.parent.type == "export_statement" else signature
    name = node.text
    after = around.next_named_sibling
    for _ in range(64):
        if after is None:
            break
        inner = after.child_by_field_name("declaration") if after.type == "export_statement" \
            else after
        if inner is not None and inner.type in ("function_declaration", "method_definition"):
            found = inner.child_by_field_name("name")
            if found is not None and found.text == name:
                return int(found.start_point[0]) + 1
        after = after.next_named_sibling
    return 0


def js_places(keys: set[tuple[str, str, int]], language: str
              ) -> dict[tuple[str, str, int], tuple[str, int]]:
    """For each (file, name, line), what the name stands for there (_declared_at): the
    first place on the line where the name is written as a declaration names it, else its
    first place; with an overload's implementation's line."""
    from ragdb.syntax_trees import best_tree

    by_file: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for key in keys:
        by_file[key[0]].append(key)
    found = {}
    for path, file_keys in by_file.items():
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        parsed = best_tree(text, _language(Path(path), language))
        if parsed is None:
            continue
        tree, data = parsed[1], parsed[3]
        lines = data.split(b"\n")
        for key in file_keys:
            name, line = key[1].encode(), key[2] - 1
            row = lines[line] if line < len(lines) else b""
            places: list[tuple[str, int]] = []
            at = row.find(name)
            while at >= 0 and len(places) < 8:
                node = tree.root_node.descendant_for_point_range((line, at),
                                                                 (line, at + len(name)))
                if node is not None and node.start_byte + len(name) == node.end_byte:
                    place = _declared_at(node)
                    places.append((place, _implementation(node) if place == "overload"
                                   else key[2]))
                at = row.find(name, at + 1)
            found[key] = next((p for p in places if p[0] != "use"),
                              places[0] if places else ("use", key[2]))
    return found


def ragdb_definitions(files: list[Path], language: str
                      ) -> tuple[dict[tuple[str, str, int], str], int]:
    """(file, name, line) of each definition ragdb stores for the files, with its kind, and
    the files whose parse failed."""
    from ragdb.symbols import extract

    found: dict[tuple[str, str, int], str] = {}
    failed = 0
    skip = RAGDB_SKIP.get(language, set())
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        symbols = extract(text, _language(path, language), path, str(path))
        if symbols is None:
            failed += 1
            continue
        found.update(((str(path), s.name.replace(" ", ""), s.start_line), s.kind)
                     for s in symbols.symbols if s.kind not in skip)
    return found, failed


def bench_defs(out: dict[str, Any]) -> None:
    ensure_corpus()
    version = subprocess.run(["ctags", "--version"], capture_output=True, text=True).stdout
    print(f"\n{host_line()}\ndefinitions against universal-ctags ({version.split(',')[0]})")
    print("| language | corpus | files | ctags tags | ragdb definitions | recall | precision "
          "| parse failures | left out (ctags / ragdb) | ctags tags on no declaration "
          "| recall without them |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for language, name, root, suffixes in DEF_SETS:
        if not root.is_dir():
            print(f"| {language} | {name} | (not here: {root}) | | | | | | | | |")
            continue
        files = _files(root, suffixes)
        theirs = ctags_tags(files, language)
        ours, failed = ragdb_definitions(files, language)
        left_out: dict[str, Counter[str]] = {"ctags": Counter(), "ragdb": Counter()}
        misread: set[tuple[str, str, int]] = set()
        if language in ("typescript", "javascript"):
            places = js_places(set(theirs) | set(ours), language)
            for side, tags in (("ctags", theirs), ("ragdb", ours)):
                for key in list(tags):
                    place, line = places.get(key, ("use", key[2]))
                    if place == "overload" and line:  # the implementation's line
                        tags.setdefault((key[0], key[1], line), tags[key])
                    if place in ("overload", "object", "import", "local"):
                        left_out[side][place] += 1
                        del tags[key]
            misread = {k for k in set(theirs) - set(ours)
                       if places.get(k, ("use", 0))[0] == "use"}
        both = set(theirs) & set(ours)
        recall = len(both) / max(len(theirs), 1)
        precision = len(both) / max(len(ours), 1)
        adjudicated = len(both) / max(len(theirs) - len(misread), 1)
        rows.append({"language": language, "corpus": name, "files": len(files),
                     "ctags": len(theirs), "ragdb": len(ours), "recall": round(recall, 4),
                     "precision": round(precision, 4), "parse_failures": failed,
                     "left_out": {k: dict(v) for k, v in left_out.items()},
                     "ctags_on_no_declaration": len(misread),
                     "recall_without_them": round(adjudicated, 4),
                     "missed": sorted(set(theirs) - set(ours) - misread)[:15],
                     "misread": sorted(misread)[:15],
                     "extra": sorted(set(ours) - set(theirs))[:15]})
        gone = f"{sum(left_out['ctags'].values()):,} / {sum(left_out['ragdb'].values()):,}"
        print(f"| {language} | {name} | {len(files)} | {len(theirs):,} | {len(ours):,} | "
              f"{recall:.3f} | {precision:.3f} | {failed} | {gone} | {len(misread):,} | "
              f"{adjudicated:.3f} |")
    out["defs"] = rows


# -- references against jedi -------------------------------------------------------------------

def _index(root: Path, db: Path) -> None:
    from ragdb import RagDB

    with RagDB(db) as rag:
        rag.index([root], vectors=False)


def bench_refs(out: dict[str, Any], per_package: int) -> None:
    try:
        import jedi
    except ImportError:
        sys.exit("refs needs jedi: uv run --frozen --with jedi python -m benchmarks.bench_symbols "
                 "refs")
    from ragdb import RagDB

    print(f"\n{host_line()}\nPython references against jedi {jedi.__version__} "
          f"(get_references, scope=project), {per_package} names per package")
    print("| package | names | jedi uses | ragdb resolved | both | precision | recall "
          "| ragdb unresolved | seconds jedi / ragdb |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    work = Path(tempfile.mkdtemp(prefix="bench-symbols-"))
    for name, top, package in REF_PACKAGES:
        if not top.is_dir():
            print(f"| {name} | (not here: {top}) |")
            continue
        root = (top / package).resolve()
        here = os.getcwd()
        os.chdir(root)
        try:
            db = work / f"{name}.db"
            _index(Path("."), db)
            rag = RagDB(db)
            defs = [(str(r[0]), int(r[1]), str(r[2]), int(r[3])) for r in rag.conn.execute(
                "SELECT f.path, s.start_line, s.qualified, s.first_char FROM symbols s "
                "JOIN files f ON f.id = s.file_id WHERE s.kind IN "
                "('function', 'method', 'class') AND f.path NOT LIKE 'tests/%' "
                "AND f.path NOT LIKE '%.pyi' "
                "ORDER BY s.qualified")]
            sample = random.Random(41).sample(defs, min(per_package, len(defs)))
            project = jedi.Project(str(root))
            theirs_all = ours_all = both_all = unresolved = 0
            jedi_s = ragdb_s = 0.0
            misses: list[Any] = []
            for path, line, qualified, first in sample:
                text = _text(path)
                at = text.index(qualified.rsplit(".", 1)[-1], first)  # the name, after def
                column = at - (text.rfind("\n", 0, at) + 1)
                started = time.perf_counter()
                script = jedi.Script(path=str(root / path), project=project)
                refs = script.get_references(line, column, scope="project")
                jedi_s += time.perf_counter() - started
                theirs = {(str(Path(r.module_path).relative_to(root)), r.line, r.column)
                          for r in refs if r.module_path and str(r.module_path).startswith(
                              str(root)) and not str(r.module_path).endswith(".pyi")
                          and not (str(r.module_path) == str(root / path) and r.line == line)}
                started = time.perf_counter()
                listing = rag.references(qualified, limit=10_000)
                ragdb_s += time.perf_counter() - started
                ours = set()
                for p in listing.places:
                    if p.path.endswith(".pyi"):
                        continue  # stubs: jedi merges them with the code they describe
                    if not p.resolved:
                        unresolved += 1
                        continue
                    lines_of = _text(p.path).count("\n", 0, p.first)
                    col = p.first - (_text(p.path).rfind("\n", 0, p.first) + 1)
                    ours.add((p.path, lines_of + 1, col))
                theirs_all += len(theirs)
                ours_all += len(ours)
                both_all += len(theirs & ours)
                if len(misses) < 10 and theirs != ours:
                    misses.append({"name": qualified, "jedi_only": sorted(theirs - ours)[:5],
                                   "ragdb_only": sorted(ours - theirs)[:5]})
            precision = both_all / max(ours_all, 1)
            recall = both_all / max(theirs_all, 1)
            rows.append({"package": name, "names": len(sample), "jedi": theirs_all,
                         "ragdb": ours_all, "both": both_all, "precision": round(precision, 4),
                         "recall": round(recall, 4), "unresolved": unresolved,
                         "jedi_s": round(jedi_s, 1), "ragdb_s": round(ragdb_s, 2),
                         "examples": misses})
            print(f"| {name} | {len(sample)} | {theirs_all:,} | {ours_all:,} | {both_all:,} | "
                  f"{precision:.3f} | {recall:.3f} | {unresolved:,} | {jedi_s:.0f} / "
                  f"{ragdb_s:.1f} |")
            rag.close()
        finally:
            os.chdir(here)
    out["refs"] = rows


def _gopls_references(path: str, line: int, column: int, env: dict[str, str],
                      root: Path) -> set[tuple[str, int, int]] | None:
    """gopls' uses of the name at (line, 0-based character column): (file relative to
    root, line, 0-based character column); None where gopls fails."""
    text_line = _text(path).split("\n")[line - 1]
    byte_col = len(text_line[:column].encode("utf-8")) + 1
    done = subprocess.run(["gopls", "references", f"{path}:{line}:{byte_col}"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return None
    found = set()
    for out_line in done.stdout.splitlines():
        where, _, span = out_line.rpartition(":")  # path:line:col-col
        file, _, line_no = where.rpartition(":")
        start = int(span.split("-", 1)[0])
        rel = os.path.relpath(file, root)
        if rel.startswith(".."):
            continue  # a use outside the package (none: nothing else is in the GOPATH)
        raw = _text(rel).split("\n")[int(line_no) - 1].encode("utf-8")
        found.add((rel, int(line_no), len(raw[:start - 1].decode("utf-8", "replace"))))
    return found


def _name_column(text: str, first: int, line: int, name: str, kind: str) -> int:
    """The 0-based column of a definition's name on its line (a method's after its
    receiver)."""
    starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]
    line_text = text[starts[line - 1]:starts[line] - 1 if line < len(starts) else len(text)]
    after = 0
    if kind == "method" and line_text.lstrip().startswith("func ("):
        after = line_text.index(")") + 1
    found = re.compile(rf"\b{re.escape(name)}\b").search(line_text, after)
    return found.start() if found else -1


def bench_refs_go(out: dict[str, Any], names: int) -> None:
    """Go references against gopls on cobra (module docstring)."""
    import shutil

    from ragdb import RagDB

    name, source, import_path = GO_PACKAGE
    if shutil.which("gopls") is None or shutil.which("go") is None:
        sys.exit("refs-go needs gopls and go: apt-get install -y gopls golang-go "
                 "golang-github-spf13-pflag-dev golang-github-cpuguy83-go-md2man-v2-dev "
                 "golang-github-inconshreveable-mousetrap-dev golang-gopkg-yaml.v3-dev")
    if not source.is_dir():
        sys.exit(f"refs-go needs {source} (python -m training.fetch)")
    version = subprocess.run(["gopls", "version"], capture_output=True, text=True).stdout
    work = Path(tempfile.mkdtemp(prefix="bench-symbols-go-"))
    root = work / "gopath" / "src" / import_path
    shutil.copytree(source, root)
    env = {**os.environ, "GO111MODULE": "off", "GOFLAGS": "", "GOPROXY": "off",
           "GOPATH": f"{work / 'gopath'}:{GOPATH_DEPS}"}
    here = os.getcwd()
    os.chdir(root)
    try:
        _TEXTS.clear()
        db = work / f"{name}.db"
        _index(Path("."), db)
        rag = RagDB(db)
        defs = [(str(r[0]), int(r[1]), str(r[2]), int(r[3]), str(r[4]), str(r[5]))
                for r in rag.conn.execute(
                    "SELECT f.path, s.start_line, s.qualified, s.first_char, s.name, s.kind "
                    "FROM symbols s JOIN files f ON f.id = s.file_id WHERE s.kind IN "
                    "('function', 'method', 'struct', 'interface', 'type') "
                    "AND f.path NOT LIKE '%\\_test.go' ESCAPE '\\' ORDER BY s.qualified")]
        sample = random.Random(41).sample(defs, min(names, len(defs)))
        theirs_all = ours_all = both_all = unresolved = failed = 0
        gopls_s = ragdb_s = 0.0
        misses: list[Any] = []
        for path, line, qualified, first, short, kind in sample:
            column = _name_column(_text(path), first, line, short, kind)
            started = time.perf_counter()
            theirs = _gopls_references(path, line, column, env, root) if column >= 0 else None
            gopls_s += time.perf_counter() - started
            if theirs is None:
                failed += 1
                continue
            started = time.perf_counter()
            listing = rag.references(qualified, limit=10_000)
            ragdb_s += time.perf_counter() - started
            ours = set()
            for p in listing.places:
                if not p.resolved:
                    unresolved += 1
                    continue
                text = _text(p.path)
                col = p.first - (text.rfind("\n", 0, p.first) + 1)  # type: ignore[operator]
                ours.add((p.path, text.count("\n", 0, p.first) + 1, col))
            theirs_all += len(theirs)
            ours_all += len(ours)
            both_all += len(theirs & ours)
            if len(misses) < 10 and theirs != ours:
                misses.append({"name": qualified, "gopls_only": sorted(theirs - ours)[:5],
                               "ragdb_only": sorted(ours - theirs)[:5]})
        rag.close()
    finally:
        os.chdir(here)
        shutil.rmtree(work, ignore_errors=True)
    precision = both_all / max(ours_all, 1)
    recall = both_all / max(theirs_all, 1)
    print(f"\n{host_line()}\nGo references against gopls ({version.split()[0]} "
          f"{version.split()[-1] if version.split() else ''}), {len(sample)} names of {name}")
    print("| package | names | gopls failed | gopls uses | ragdb resolved | both | precision "
          "| recall | ragdb unresolved | seconds gopls / ragdb |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {name} | {len(sample)} | {failed} | {theirs_all:,} | {ours_all:,} | {both_all:,} "
          f"| {precision:.3f} | {recall:.3f} | {unresolved:,} | {gopls_s:.0f} / {ragdb_s:.1f} |")
    out["refs_go"] = {"package": name, "names": len(sample), "gopls_failed": failed,
                      "gopls": theirs_all, "ragdb": ours_all, "both": both_all,
                      "precision": round(precision, 4), "recall": round(recall, 4),
                      "unresolved": unresolved, "gopls_s": round(gopls_s, 1),
                      "ragdb_s": round(ragdb_s, 2), "examples": misses}


_TEXTS: dict[str, str] = {}


def _text(path: str) -> str:
    if path not in _TEXTS:
        _TEXTS[path] = Path(path).read_text(encoding="utf-8")
    return _TEXTS[path]


# -- speed -------------------------------------------------------------------------------------

def _vllm_index(db: Path) -> None:
    ensure_corpus()
    if not db.exists():
        print(f"indexing {CORPUS} into {db} (lexical only)", file=sys.stderr)
        from ragdb import RagDB

        with RagDB(db) as rag:
            rag.index([CORPUS], vectors=False)


def bench_speed(out: dict[str, Any], names: int) -> None:
    from ragdb import RagDB

    db = BENCH_DIR / "symbols_vllm.db"
    _vllm_index(db)
    rag = RagDB(db)
    rag.references("LLM")
    population = [str(r[0]) for r in rag.conn.execute(
        "SELECT DISTINCT name FROM symbols WHERE kind IN ('function', 'method', 'class') "
        "ORDER BY name")]
    sample = random.Random(41).sample(population, min(names, len(population)))
    warm = []
    for name in sample:
        rag.references(name)
        started = time.perf_counter()
        rag.references(name)
        warm.append((time.perf_counter() - started) * 1000)
    command = Path(sys.executable).with_name("ragdb")
    whole = []
    for name in sample[:30]:
        started = time.perf_counter()
        subprocess.run([str(command), "references", name, "--db", str(db)],
                       capture_output=True, check=True)
        whole.append(time.perf_counter() - started)
    started = time.perf_counter()
    text, entries = rag.repo_map(2000)
    map_s = time.perf_counter() - started
    size = os.path.getsize(db) / 1e6
    q = statistics.quantiles
    print(f"\n{host_line()}\n`ragdb references NAME` on vLLM ({size:.0f} MB rag.db, lexical): "
          f"{len(warm)} names warm in process p50 {statistics.median(warm):.1f} ms, p95 "
          f"{q(warm, n=20)[-1]:.1f} ms, max {max(warm):.1f} ms; {len(whole)} whole processes "
          f"p50 {statistics.median(whole):.2f} s, p95 {q(whole, n=20)[-1]:.2f} s; "
          f"map within 2,000 tokens {map_s:.2f} s ({len(entries)} definitions, "
          f"{len(text)} characters)")
    out["speed"] = {"warm_ms_p50": round(statistics.median(warm), 2),
                    "warm_ms_p95": round(q(warm, n=20)[-1], 2), "warm_ms_max": round(max(warm), 2),
                    "whole_s_p50": round(statistics.median(whole), 3),
                    "whole_s_p95": round(q(whole, n=20)[-1], 3), "map_s": round(map_s, 2),
                    "map_entries": len(entries), "names": len(warm)}


# -- index time and size -----------------------------------------------------------------------

INDEX_RUN = """
import os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import ragdb
assert ragdb.__file__.startswith(sys.argv[1]), ragdb.__file__
from ragdb import RagDB
db = Path(sys.argv[2])
cpu, wall = time.process_time(), time.perf_counter()
with RagDB(db) as rag:
    rag.index([Path(sys.argv[3])], vectors=sys.argv[4] == "1")
print(time.process_time() - cpu, time.perf_counter() - wall, os.path.getsize(db))
"""


def bench_index(out: dict[str, Any], before: str, runs: int, vectors: bool) -> None:
    ensure_corpus()
    work = Path(tempfile.mkdtemp(prefix="bench-symbols-index-"))
    old = work / "before"
    old.mkdir()
    archive = subprocess.run(["git", "archive", before, "ragdb", "sql", "migrations"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    versions = {"without symbols": str(old.resolve()), "with symbols": os.getcwd()}
    figures: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for run in range(runs):
        for label, code in versions.items():
            db = work / f"{run}-{label.replace(' ', '_')}.db"
            done = subprocess.run([sys.executable, "-c", INDEX_RUN, code, str(db), str(CORPUS),
                                   "1" if vectors else "0"], capture_output=True, text=True,
                                  check=True)
            cpu_s, wall_s, size_b = done.stdout.split()
            figures[label].append((float(cpu_s), float(wall_s), int(size_b)))
            for path in work.glob(db.name + "*"):
                path.unlink()
    print(f"\n{host_line()}\nfull vLLM index ({'with vectors' if vectors else 'lexical only'}), "
          f"{runs} runs each, alternated; before = {before}")
    print("| version | CPU s (median) | wall s (median) | rag.db MB |")
    print("|---|---|---|---|")
    rows = {}
    for label, values in figures.items():
        cpu = statistics.median(v[0] for v in values)
        wall = statistics.median(v[1] for v in values)
        size = values[-1][2] / 1e6
        rows[label] = {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "mb": round(size, 1)}
        print(f"| {label} | {cpu:.2f} | {wall:.2f} | {size:.1f} |")
    a, b = rows["without symbols"], rows["with symbols"]
    print(f"with / without: CPU {b['cpu_s'] / a['cpu_s']:.2f}x, wall "
          f"{b['wall_s'] / a['wall_s']:.2f}x, size {b['mb'] / a['mb']:.2f}x")
    out["index" + ("_vectors" if vectors else "")] = rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="*", default=["defs", "refs", "speed", "index"],
                        choices=["defs", "refs", "refs-go", "speed", "index"])
    parser.add_argument("--names", type=int, default=SAMPLE_PER_PACKAGE,
                        help="names per package (refs), names timed (speed)")
    parser.add_argument("--before", default="222d896^", help="the code without symbols (index)")
    parser.add_argument("--runs", type=int, default=2, help="index runs of each version")
    parser.add_argument("--vectors", action="store_true", help="index with vectors (index)")
    args = parser.parse_args()
    out: dict[str, Any] = {"host": host_line()}
    for what in args.what:
        if what == "defs":
            bench_defs(out)
        elif what == "refs":
            bench_refs(out, args.names)
        elif what == "refs-go":
            bench_refs_go(out, args.names)
        elif what == "speed":
            bench_speed(out, args.names)
        else:
            bench_index(out, args.before, args.runs, args.vectors)
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    saved = BENCH_DIR / "symbols.json"
    previous = json.loads(saved.read_text()) if saved.exists() else {}
    saved.write_text(json.dumps({**previous, **out}, indent=2) + "\n")
    print(f"\nsaved to {saved}", file=sys.stderr)


if __name__ == "__main__":
    main()
