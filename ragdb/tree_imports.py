"""What a Go, Rust, TypeScript, JavaScript, Java, C or C++ file imports, and the module its
definitions are qualified by (ragdb.tree_symbols).

Each import is a reference (kind `import`) to the qualified name it brings in, and binds a
name in the file: `import yaml "gopkg.in/yaml.v3"` binds yaml to the package yaml,
`use crate::a::{B, c as d}` binds B and d, `import { a as b } from './x'` binds b to x's a.
A re-export (`pub use`, `export { a } from './x'`) also carries the qualified name it gives the
thing in this module (Ref.alias), through which uses elsewhere reach the definition.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Iterator

import tree_sitter as ts

from ragdb.symbols import Ref
from ragdb.syntax_trees import grammar_language

if TYPE_CHECKING:
    from ragdb.tree_symbols import _File

_VERSION_DIR = re.compile(r"-\d+(?:\.\d+)*$")
_GO_MAJOR = re.compile(r"^v\d+$")
_JS_SUFFIX = re.compile(r"(?:\.d)?\.(?:[cm]?[jt]sx?)$")


@dataclass
class Imports:
    module: str
    bound: dict[str, str] = field(default_factory=dict)  # name -> qualified target
    refs: list[Ref] = field(default_factory=list)
    crate: str = ""
    package: bool = False  # Python: the file is a package's __init__.py

    def rust_path(self, head: str) -> str:
        """`crate`, `self` and `super` as the module they name."""
        if head == "crate":
            return self.crate
        if head == "super":
            return self.module.rsplit(".", 1)[0] if "." in self.module else self.crate
        return self.module


def module_of(f: "_File", rel: str) -> Imports:
    """The module a file's top-level definitions are qualified by: Go's package, Java's
    package, a Rust file's module path in its crate (`clap_builder.builder.command`), a
    TypeScript or JavaScript file's path without its suffix; none for C and C++ (one global
    namespace)."""
    g = f.grammar
    root = f.tree.root_node
    if g in ("go", "java"):
        for child in root.named_children:
            if child.type in ("package_clause", "package_declaration"):
                name = child.named_children[-1] if child.named_children else None
                return Imports(f.cut(name) if name is not None else "")
        return Imports("")
    if g == "rust":
        parts = rel.split("/")
        if "src" in parts:
            at = len(parts) - 1 - parts[::-1].index("src")
            crate = parts[at - 1] if at > 0 else "crate"
            inner = parts[at + 1:]
        else:
            crate, inner = (parts[-2] if len(parts) > 1 else "crate"), parts[-1:]
        crate = _VERSION_DIR.sub("", crate).replace("-", "_")
        if inner and inner[-1] in ("lib.rs", "main.rs", "mod.rs"):
            inner = inner[:-1]
        elif inner:
            inner[-1] = inner[-1][:-3] if inner[-1].endswith(".rs") else inner[-1]
        return Imports(".".join([crate, *inner]), crate=crate)
    if g in ("typescript", "tsx", "javascript"):
        return Imports(_js_module(rel))
    return Imports("")


def _js_module(path: str) -> str:
    path = _JS_SUFFIX.sub("", path)
    return path[:-len("/index")] if path.endswith("/index") else path


def read_imports(f: "_File", imports: Imports) -> Imports:
    g = f.grammar
    reader = {"go": _go, "rust": _rust, "java": _java, "typescript": _js, "tsx": _js,
              "javascript": _js, "c": _c, "cpp": _c, "python": _python}.get(g)
    if reader is not None:
        reader(f, imports)
    return imports


def _add(f: "_File", imports: Imports, node: ts.Node, target: str, bound: str,
         exported: bool = False, name: str = "") -> None:
    """An import of `target` binding `bound`; `name`: the name as written, where it is not
    the whole node (a Go path, a C header), found in the node's text."""
    first = f.pos(node.start_byte)
    text = f.cut(node)
    if name:
        first += len(text[:max(text.rfind(name), 0)])
    else:
        name = text
    alias = f"{imports.module}.{bound}" if exported and imports.module and bound else ""
    imports.refs.append(Ref(name, target, "import", first, f.line(node), -1, alias))
    if bound:
        imports.bound[bound] = target


def _go(f: "_File", imports: Imports) -> None:
    for spec in _all(f.tree.root_node, "import_spec", 3):
        path = spec.child_by_field_name("path")
        if path is None:
            continue
        text = f.cut(path).strip('"`')
        parts = [p for p in text.split("/") if p]
        if len(parts) > 1 and _GO_MAJOR.match(parts[-1]):
            parts.pop()
        package = re.sub(r"\.v\d+$", "", parts[-1]) if parts else text
        package = package.removeprefix("go-").replace("-", "_")
        alias = spec.child_by_field_name("name")
        bound = f.cut(alias) if alias is not None else package
        _add(f, imports, path, package, "" if bound in ("_", ".") else bound,
             name=parts[-1] if parts else text)


def _rust(f: "_File", imports: Imports) -> None:
    for node in _found(f, "(use_declaration) @x"):
        exported = any(c.type == "visibility_modifier" for c in node.children)
        argument = node.child_by_field_name("argument")
        if argument is not None:
            for name_node, path, bound in _use_tree(f, argument, []):
                if path:
                    head = path[0]
                    if head in ("crate", "self", "super"):
                        path = [imports.rust_path(head), *path[1:]]
                    _add(f, imports, name_node, ".".join(path), bound, exported)


def _use_tree(f: "_File", node: ts.Node, prefix: list[str]
              ) -> Iterator[tuple[ts.Node, list[str], str]]:
    """(name node, full path, name bound) of each item a `use` brings in."""
    t = node.type
    if t in ("identifier", "crate", "self", "super"):
        name = f.cut(node)
        if name == "self" and prefix:
            yield node, prefix, prefix[-1]
        else:
            yield node, [*prefix, name], name
    elif t == "scoped_identifier":
        path = _rust_path(f, node)
        name_node = node.child_by_field_name("name") or node
        yield name_node, [*prefix, *path], path[-1] if path else ""
    elif t == "use_as_clause":
        path_node, alias = node.child_by_field_name("path"), node.child_by_field_name("alias")
        if path_node is not None:
            path = _rust_path(f, path_node)
            yield (path_node.child_by_field_name("name") or path_node, [*prefix, *path],
                   f.cut(alias) if alias is not None else (path[-1] if path else ""))
    elif t == "scoped_use_list":
        path_node, items = node.child_by_field_name("path"), node.child_by_field_name("list")
        inner = [*prefix, *(_rust_path(f, path_node) if path_node is not None else [])]
        if items is not None:
            yield from _use_tree(f, items, inner)
    elif t == "use_list":
        for child in node.named_children:
            yield from _use_tree(f, child, prefix)


def _rust_path(f: "_File", node: ts.Node) -> list[str]:
    return [p for p in f.cut(node).replace(" ", "").split("::") if p]


def _java(f: "_File", imports: Imports) -> None:
    for node in f.tree.root_node.named_children:
        if node.type != "import_declaration":
            continue
        named = [c for c in node.named_children if c.type in ("scoped_identifier", "identifier")]
        if not named:
            continue
        path = f.cut(named[0])
        star = any(c.type == "asterisk" for c in node.children)
        last = named[0].child_by_field_name("name") or named[0]
        _add(f, imports, last, path, "" if star else path.rsplit(".", 1)[-1])


def _js(f: "_File", imports: Imports) -> None:
    here = posixpath.dirname(f.rel)
    for node in _all(f.tree.root_node, ("import_statement", "export_statement"), 2):
        source = node.child_by_field_name("source")
        if source is None:
            continue
        spec = f.cut(source).strip("'\"`")
        module = (_js_module(posixpath.normpath(posixpath.join(here, spec)))
                  if spec.startswith(".") else spec)
        if node.type == "export_statement":
            for item in _descendants(node, "export_specifier"):
                name = item.child_by_field_name("name")
                alias = item.child_by_field_name("alias")
                if name is not None:
                    bound = f.cut(alias if alias is not None else name)
                    _add(f, imports, name, f"{module}.{f.cut(name)}", "", exported=False)
                    imports.refs[-1].alias = f"{imports.module}.{bound}"
            continue
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        if clause is None:
            continue
        for child in clause.named_children:
            if child.type == "identifier":
                _add(f, imports, child, f"{module}.default", f.cut(child))
            elif child.type == "namespace_import":
                name = child.named_children[0] if child.named_children else None
                if name is not None:
                    _add(f, imports, name, module, f.cut(name))
            elif child.type == "named_imports":
                for item in child.named_children:
                    name = item.child_by_field_name("name")
                    alias = item.child_by_field_name("alias")
                    if name is not None:
                        _add(f, imports, name, f"{module}.{f.cut(name)}",
                             f.cut(alias if alias is not None else name))


def _c(f: "_File", imports: Imports) -> None:
    for node in _all(f.tree.root_node, "preproc_include", 3):
        path = node.child_by_field_name("path")
        if path is not None:
            header = f.cut(path).strip('"<> ')
            _add(f, imports, path, header, "", name=header.rsplit("/", 1)[-1])


def _python(f: "_File", imports: Imports) -> None:
    """A Python file's imports at its top level (in `if`/`try` too), as ragdb.python_symbols
    reads them: the standard library bound but not recorded, `import a.b` binds a."""
    from ragdb.python_symbols import _STDLIB
    from ragdb.python_types import STD

    module = imports.module
    for node in _all(f.tree.root_node, ("import_statement", "import_from_statement"), 3):
        base = ""
        if node.type == "import_from_statement":
            source = node.child_by_field_name("module_name")
            if source is None:
                continue
            written = f.cut(source)
            level = len(written) - len(written.lstrip("."))
            base = written[level:].strip()
            if level:
                parts = module.split(".")
                keep = len(parts) - level + (1 if imports.package else 0)
                head = ".".join(parts[:max(keep, 0)])
                base = f"{head}.{base}" if head and base else head or base
            elif base.split(".", 1)[0] in _STDLIB:
                for name_node in node.children_by_field_name("name"):
                    alias = name_node.child_by_field_name("alias")
                    imports.bound[f.cut(alias if alias is not None else name_node)] = STD
                continue
        for name_node in node.children_by_field_name("name"):
            alias = name_node.child_by_field_name("alias")
            dotted = name_node.child_by_field_name("name") if alias is not None else name_node
            if dotted is None:
                continue
            written = re.sub(r"\s+", "", f.cut(dotted))
            asname = f.cut(alias) if alias is not None else ""
            if node.type == "import_statement":
                target = written
                bound = asname or written.split(".", 1)[0]
                binding = written if asname else bound
                if target.split(".", 1)[0] in _STDLIB:
                    imports.bound[bound] = STD
                    continue
            else:
                target = f"{base}.{written}" if base else written
                bound = asname or written
                binding = target
            _add(f, imports, dotted, target, bound, exported=binding == target,
                 name=target.rsplit(".", 1)[-1])
            imports.bound[bound] = binding


def _all(root: ts.Node, types: str | tuple[str, ...], depth: int) -> Iterator[ts.Node]:
    """Nodes of these types in the first `depth` levels (imports sit near the top)."""
    wanted = (types,) if isinstance(types, str) else types
    level = [root]
    for _ in range(depth):
        below = []
        for node in level:
            for child in node.named_children:
                if child.type in wanted:
                    yield child
                else:
                    below.append(child)
        level = below


@lru_cache(maxsize=None)
def _query(grammar: str, pattern: str) -> ts.Query:
    return ts.Query(grammar_language(grammar), pattern)


def _found(f: "_File", pattern: str) -> list[ts.Node]:
    """The nodes a one-capture query finds, in order (run in C: no walk in Python)."""
    found = ts.QueryCursor(_query(f.grammar, pattern)).captures(f.tree.root_node)
    return sorted((n for nodes in found.values() for n in nodes), key=lambda n: n.start_byte)


def _descendants(root: ts.Node, kind: str) -> Iterator[ts.Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == kind:
            yield node
            continue
        stack.extend(reversed(node.named_children))
