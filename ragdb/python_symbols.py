"""Python's definitions and references, read from its `ast` tree (the one the chunker parsed:
ragdb.python_chunking.parse_python).

Two passes. The first walks statements only: definitions (functions, methods, classes,
module- and class-level variables and constants, functions and classes nested in functions),
imports, and what each scope binds. The second walks the expressions of each scope once, with
every binding of the module known (a function may use what is defined below it): calls,
attribute access, names used, annotations (type), base classes (inherit) and decorators.
A name is resolved through the scopes Python would look in: the function's own locals hide a
module's name (and are not recorded), a nested function's name, the module's definitions and
imports (their aliases followed), `self`/`cls` for the enclosing class (and its base classes
in the same file), parameters annotated with a known class and locals assigned from a call
to one. Builtins and the standard library are not recorded (their definitions are never in
an index); a method called on an object of unknown type is recorded unresolved, by its name.

Types across files (`self.x.y`, `make().close()`): ragdb.python_types, whose rules the
extractor below inherits.
"""

from __future__ import annotations

import ast
import gc
import re
import sys

from ragdb.python_chunking import _line_starts, parse_python
from ragdb.python_types import BUILTINS, RESULT, STD, PythonTypes, dotted_name, type_node
from ragdb.symbols import FileSymbols, Ref, Symbol

_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}
_CONSTANT = re.compile(r"_*[A-Z][A-Z0-9_]*$")
#: Decorators that make a method an attribute (its return annotation is the attribute's type).
_PROPERTIES = frozenset({"property", "cached_property"})
#: Member aliases a reader follows to type a use (ragdb.navigate.MEMBER_HOPS): a longer
#: chain (`a.b.c.d.e`) is not recorded past them, it could never be found.
MEMBER_STEPS = 2
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPE_BODIES = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try,
                 ast.TryStar, ast.Match)
#: Fields that never hold an expression to walk (names, flags, contexts).
_NOT_CHILDREN = frozenset({"ctx", "id", "attr", "arg", "kind", "type_comment", "name", "names",
                           "module", "level", "conversion", "is_async", "asname", "n", "s"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: ()}


def _children(t: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(t)
    if fields is None:
        fields = _CHILD_FIELDS[t] = tuple(f for f in t._fields  # type: ignore[attr-defined]
                                          if f not in _NOT_CHILDREN)
    return fields


class _Scope:
    """A module, class or function: what it binds, and the expressions evaluated in it."""

    __slots__ = ("qualified", "index", "kind", "parent", "bindings", "locals", "types",
                 "roots", "cls", "members", "bases", "annotations")

    def __init__(self, qualified: str, index: int, kind: str, parent: "_Scope | None") -> None:
        self.qualified = qualified
        self.index = index  # the symbol's index
        self.kind = kind  # module, class, function
        self.parent = parent
        #: name -> qualified name (definitions here, imports: their target)
        self.bindings: dict[str, str] = {}
        self.locals: set[str] = set()  # names a function assigns (hide the module's)
        #: local -> qualified name of its type, or the expressions it is assigned in order
        #: (typed when first used: every binding of the module is known by then)
        self.types: dict[str, str | list[ast.expr]] = {}
        self.annotations: dict[str, ast.expr] = {}  # a function's: parameter -> annotation
        self.roots: list[tuple[ast.AST, str]] = []  # (expression, kind of its own use)
        #: the class whose methods see it as self/cls (a method's scope)
        self.cls: _Scope | None = None
        self.members: dict[str, str] = {}  # a class's: member name -> qualified
        self.bases: list[str] = []  # a class's base classes, by name as written


class _Extractor(PythonTypes):
    def __init__(self, text: str, module: str, package: bool, tests: bool) -> None:
        self.text = text
        self.module = module
        self.package = package
        self.tests = tests
        self.starts = _line_starts(text)
        self.ascii = text.isascii()
        self.symbols: list[Symbol] = []
        self.refs: list[Ref] = []
        self.scopes: list[_Scope] = []
        self.defined: set[ast.AST] = set()  # `self.x = ...` that define a field
        PythonTypes.__init__(self)

    # -- positions ---------------------------------------------------------------------------

    def pos(self, line: int, col: int) -> int:
        """str offset of ast's (line, UTF-8 byte column)."""
        start = self.starts[line - 1]
        if self.ascii:
            return start + col
        head = self.text[start:self.starts[line] if line < len(self.starts) else len(self.text)]
        if head.isascii():
            return start + col
        return start + len(head.encode("utf-8", "surrogatepass")[:col].decode("utf-8", "replace"))

    # -- pass 1: statements ------------------------------------------------------------------

    def define(self, name: str, kind: str, node: ast.AST, scope: _Scope) -> tuple[str, int]:
        qualified = f"{scope.qualified}.{name}"
        line = node.lineno  # type: ignore[attr-defined]
        end_line = node.end_lineno or line  # type: ignore[attr-defined]
        first = self.pos(line, node.col_offset)  # type: ignore[attr-defined]
        last = self.pos(end_line, node.end_col_offset or 0)  # type: ignore[attr-defined]
        self.symbols.append(Symbol(name, qualified, kind, first, last, line, end_line,
                                   scope.index))
        scope.bindings[name] = qualified
        if scope.kind == "class":
            scope.members[name] = qualified
        return qualified, len(self.symbols) - 1

    def run(self, tree: ast.Module) -> FileSymbols:
        name = self.module.rsplit(".", 1)[-1]
        self.symbols.append(Symbol(name, self.module, "module", 0, len(self.text), 1,
                                   max(len(self.starts) - 1, 1), -1))
        module = _Scope(self.module, 0, "module", None)
        self.scopes.append(module)
        self.statements(tree.body, module)
        for value, scope, member, where in self.typings:
            self.typing(value, scope, member, where)
        for scope in self.scopes:
            for node, kind in scope.roots:
                self.walk(node, kind, scope)
        return FileSymbols(self.symbols, self.refs)

    def statements(self, body: list[ast.stmt], scope: _Scope) -> None:
        for node in body:
            t = type(node)
            if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
                self.function(node, scope)  # type: ignore[arg-type]
            elif t is ast.ClassDef:
                self.klass(node, scope)  # type: ignore[arg-type]
            elif t is ast.Assign or t is ast.AnnAssign or t is ast.AugAssign:
                self.assign(node, scope)
            elif t is ast.Import or t is ast.ImportFrom:
                self.imports(node, scope)  # type: ignore[arg-type]
            elif t is ast.Global or t is ast.Nonlocal:
                scope.locals.difference_update(node.names)  # type: ignore[attr-defined]
            elif t in _SCOPE_BODIES:
                self.compound(node, scope)
            else:
                scope.roots.append((node, ""))

    def compound(self, node: ast.AST, scope: _Scope) -> None:
        """if/for/while/with/try/match: their expressions here, their bodies as statements."""
        for name in node._fields:
            value = getattr(node, name)
            if type(value) is list:
                if value and isinstance(value[0], ast.stmt):
                    self.statements(value, scope)
                    continue
                for item in value:
                    if isinstance(item, (ast.excepthandler, ast.match_case)):
                        self.compound(item, scope)
                    elif isinstance(item, ast.AST):
                        scope.roots.append((item, ""))
            elif isinstance(value, ast.AST):
                if scope.kind == "function" and name in ("target", "optional_vars"):
                    for sub in ast.walk(value):  # for x in ..., with ... as x: locals
                        if type(sub) is ast.Name:
                            scope.locals.add(sub.id)
                scope.roots.append((value, ""))
            elif name == "name" and isinstance(value, str) and scope.kind == "function":
                scope.locals.add(value)  # except E as name: an instance of E
                caught = getattr(node, "type", None)
                if caught is not None:
                    scope.annotations[value] = caught

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> None:
        kind = "method" if scope.kind == "class" else "function"
        if self.tests and node.name.startswith("test") and (
                scope.kind != "class" or scope.qualified.rsplit(".", 1)[-1].startswith("Test")):
            kind = "test"
        qualified, index = self.define(node.name, kind, node, scope)
        roots = scope.roots
        for decorator in node.decorator_list:
            roots.append((decorator, "decorator"))
        args = node.args
        inner = _Scope(qualified, index, "function", scope)
        if scope.kind == "class":
            inner.cls = scope
        all_args = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if args.vararg:
            all_args.append(args.vararg)
        if args.kwarg:
            all_args.append(args.kwarg)
        for arg in all_args:
            inner.locals.add(arg.arg)
            if arg.annotation is not None:
                roots.append((arg.annotation, "type"))
                inner.annotations[arg.arg] = arg.annotation
        for default in args.defaults:
            roots.append((default, ""))
        for kw_default in args.kw_defaults:
            if kw_default is not None:
                roots.append((kw_default, ""))
        if node.returns is not None:
            roots.append((node.returns, "type"))
            declared = type_node(node.returns)
            if declared is not None:
                prop = scope.kind == "class" and any(
                    dotted_name(d).rsplit(".", 1)[-1] in _PROPERTIES for d in node.decorator_list)
                self.alias_at.setdefault(declared, qualified if prop else
                                         f"{qualified}.{RESULT}")
                if prop:
                    self.declared[qualified] = (declared, scope)
        if inner.cls is not None and all_args and not any(
                type(d) is ast.Name and d.id == "staticmethod" for d in node.decorator_list):
            inner.types[all_args[0].arg] = inner.cls.qualified  # self, cls
        self.scopes.append(inner)
        self.statements(node.body, inner)

    def klass(self, node: ast.ClassDef, scope: _Scope) -> None:
        qualified, index = self.define(node.name, "class", node, scope)
        for keyword in node.keywords:
            scope.roots.append((keyword.value, ""))
        for decorator in node.decorator_list:
            scope.roots.append((decorator, "decorator"))
        inner = _Scope(qualified, index, "class", scope)
        for base in node.bases:  # held by the class: what its subclasses inherit is found
            inner.roots.append((base, "inherit"))
        inner.bases = [dotted_name(b) for b in node.bases]
        self.classes[qualified] = inner
        self.scopes.append(inner)
        self.statements(node.body, inner)

    def assign(self, node: ast.AST, scope: _Scope) -> None:
        value = getattr(node, "value", None)
        if value is not None:
            scope.roots.append((value, ""))
        t = type(node)
        if t is ast.AnnAssign:
            scope.roots.append((node.annotation, "type"))  # type: ignore[attr-defined]
            targets = [node.target]  # type: ignore[attr-defined]
        elif t is ast.AugAssign:
            scope.roots.append((node.target, ""))  # type: ignore[attr-defined]
            return
        else:
            targets = node.targets  # type: ignore[attr-defined]
        function = scope.kind == "function"
        for target in targets:
            tt = type(target)
            if tt is ast.Name:
                names = [target]
            elif tt is ast.Tuple or tt is ast.List:
                names = [e for e in target.elts if type(e) is ast.Name]
            else:  # self.x = ...: a use of self; a[i] = ...: of a and i
                scope.roots.append((target.value if tt is ast.Attribute else target, ""))
                if tt is ast.Attribute and function:
                    self.attribute(target, scope, value,  # type: ignore[arg-type]
                                   getattr(node, "annotation", None))
                continue
            for name_node in names:
                name = name_node.id
                if function:
                    scope.locals.add(name)
                    if tt is ast.Name:  # typed when first used: x = Foo(), x: Foo = ...
                        if t is ast.AnnAssign:
                            scope.annotations[name] = node.annotation  # type: ignore
                        elif value is not None:
                            values = scope.types.get(name)
                            if isinstance(values, list):
                                values.append(value)
                            else:
                                scope.types[name] = [value]
                    continue
                if t is ast.AnnAssign and value is None and scope.kind == "class":
                    kind = "field"  # `x: int` in a class body: a declared field
                else:
                    kind = "constant" if _CONSTANT.match(name) else "variable"
                qualified, _index = self.define(name, kind, name_node, scope)
                if tt is ast.Name:  # its type: declared, or what it is assigned
                    self.declare(qualified, getattr(node, "annotation", None), value,
                                 name_node, scope)

    def attribute(self, target: ast.Attribute, scope: _Scope, value: ast.expr | None,
                  annotation: ast.expr | None) -> None:
        """`self.x = ...` in a method: the class's field x, where it is first assigned (its
        type: the annotation, else what it is assigned)."""
        cls = scope.cls
        obj = target.value
        if cls is None or type(obj) is not ast.Name or \
                scope.types.get(obj.id) != cls.qualified or target.attr in cls.members:
            return
        qualified, _index = self.define(target.attr, "field", target, cls)
        self.defined.add(target)
        self.declare(qualified, annotation, value, target, scope)

    def imports(self, node: ast.Import | ast.ImportFrom, scope: _Scope) -> None:
        base = ""
        if type(node) is ast.ImportFrom:
            base = self.relative(node.module or "", node.level)
            if base.split(".", 1)[0] in _STDLIB and not node.level:
                for alias in node.names:  # bound, not recorded
                    scope.bindings[alias.asname or alias.name] = STD
                return
        for alias in node.names:
            exported = f"{self.module}.{alias.asname or alias.name}" if (
                scope.kind == "module") else ""
            if type(node) is ast.Import:
                target = alias.name
                bound = alias.asname or alias.name.split(".", 1)[0]
                binding = alias.name if alias.asname else bound
                if binding != target:  # `import a.b` binds a, not a.b: not a re-export
                    exported = ""
                if target.split(".", 1)[0] in _STDLIB:
                    scope.bindings[bound] = STD
                    continue
            else:
                if alias.name == "*":
                    scope.bindings.setdefault("*", base)
                    continue
                target = f"{base}.{alias.name}" if base else alias.name
                bound = alias.asname or alias.name
                binding = target
            line = alias.lineno
            name = target.rsplit(".", 1)[-1]
            first = self.pos(line, alias.col_offset) + len(alias.name) - len(name)
            self.refs.append(Ref(name, target, "import", first, line, scope.index, exported))
            scope.bindings[bound] = binding
            scope.locals.discard(bound)

    def relative(self, module: str, level: int) -> str:
        """`from ..x import y` seen from this module: the package it names."""
        if not level:
            return module
        parts = self.module.split(".")
        keep = len(parts) - level + (1 if self.package else 0)
        base = ".".join(parts[:max(keep, 0)])
        return f"{base}.{module}" if base and module else base or module

    # -- pass 2: expressions -----------------------------------------------------------------

    def lookup(self, name: str, scope: _Scope) -> str | None:
        """The qualified name a name means in a scope; None for a local or a builtin; STD
        for the standard library; '' for a name the file does not define (a star import's,
        perhaps). A class's names are seen from its own body only, as in Python."""
        s: _Scope | None = scope
        first = True
        while s is not None:
            if first or s.kind != "class":
                found = s.bindings.get(name)
                if found is not None:
                    return found
                if name in s.locals:
                    return None
            first = False
            s = s.parent
        if name in BUILTINS:
            return None
        star = self.scopes[0].bindings.get("*")
        return f"{star}.{name}" if star else ""

    def walk(self, root: ast.AST, kind: str, scope: _Scope) -> None:
        """Every use in one expression of a scope, walked once with an explicit stack (the
        generator of ast.walk costs three times as much). `kind` is the root's own use
        (decorator, inherit) or, for an annotation, every use in it (type)."""
        inner = "type" if kind == "type" else ""
        Name, Attribute, Call, Load = ast.Name, ast.Attribute, ast.Call, ast.Load
        AST = ast.AST
        children = _CHILD_FIELDS
        add = self.refs.append
        index = scope.index
        lookup = self.lookup
        stack = [root]
        pop, push = stack.pop, stack.append
        own = kind  # the kind of the first node's use
        while stack:
            node = pop()
            t = type(node)
            use = own or inner
            own = ""
            if t is Name:
                if type(node.ctx) is Load:  # type: ignore[attr-defined]
                    name = node.id  # type: ignore[attr-defined]
                    found = lookup(name, scope)
                    if found and found != STD:
                        line = node.lineno  # type: ignore[attr-defined]
                        first = self.pos(line, node.col_offset)  # type: ignore[attr-defined]
                        add(Ref(name, found, use or "use", first, line, index,
                                self.alias_at.get(node, "")))
                continue
            if t is Call:
                func = node.func  # type: ignore[attr-defined]
                base = self.use(func, use or "call", scope)
                if base is not None:
                    push(base)
                for arg in node.args:  # type: ignore[attr-defined]
                    push(arg)
                for keyword in node.keywords:  # type: ignore[attr-defined]
                    push(keyword.value)
                continue
            if t is Attribute:
                if type(node.ctx) is Load:  # type: ignore[attr-defined]
                    base = self.use(node, use or "attribute", scope)
                    if base is not None:
                        push(base)
                else:  # self.x = v, self.x += 1: a use of the member, not its definition
                    if node not in self.defined:
                        self.use(node, "attribute", scope, stored=True)
                    push(node.value)  # type: ignore[attr-defined]
                continue
            fields = children.get(t)
            if fields is None:
                fields = _children(t)
            for field_name in fields:
                value = getattr(node, field_name)
                if type(value) is list:
                    for item in value:
                        if isinstance(item, AST):
                            push(item)
                elif value is not None and isinstance(value, AST):
                    push(value)

    def use(self, node: ast.AST, kind: str, scope: _Scope, stored: bool = False
            ) -> ast.AST | None:
        """A called or accessed name: `f`, `a.b.f` (one reference, to its last part).
        Returns what is left to walk (the object of `f(x).g`), if anything."""
        t = type(node)
        if t is ast.Name:
            name = node.id  # type: ignore[attr-defined]
            found = self.lookup(name, scope)
            if found is None or found == STD or (
                    not found and kind not in ("call", "decorator", "inherit")):
                return None
            line = node.lineno  # type: ignore[attr-defined]
            first = self.pos(line, node.col_offset)  # type: ignore[attr-defined]
            self.refs.append(Ref(name, found, kind, first, line, scope.index,
                                 self.alias_at.get(node, "")))
            return None
        if t is not ast.Attribute:
            return node
        chain = []  # the Attribute nodes, innermost (first attribute) first
        base = node
        while type(base) is ast.Attribute:
            chain.append(base)
            base = base.value  # type: ignore[attr-defined]
        chain.reverse()
        attrs = [a.attr for a in chain]  # type: ignore[attr-defined]
        target = ""
        at = node  # the Attribute whose last name the reference is
        rest: ast.AST | None = None
        if type(base) is ast.Name:
            head = base.id  # type: ignore[attr-defined]
            found = self.lookup(head, scope)
            if found == STD:
                return None
            if found is None:
                found = self.local_type(head, scope)
            elif found:
                target = ".".join([found, *attrs])
                if head[:1].isupper() or kind == "decorator" or found.startswith(
                        self.module + "."):  # Cls.m, f.attr, @prop.setter: a use of the
                    # base too (a module's name is not: `np.array` uses np's array)
                    line = base.lineno  # type: ignore[attr-defined]
                    first = self.pos(line, base.col_offset)  # type: ignore[attr-defined]
                    self.refs.append(Ref(head, found, "use", first, line, scope.index))
                found = ""
        else:
            rest = base
            found = self.value_type(base, scope) if type(base) is ast.Call else ""
        if stored and not found:
            return rest  # an assignment: kept only to a member of a typed object
        if found:  # self.x, param.x, Foo().x, self.x.y: the member of its type, each name
            target = self.member(found, attrs[0])[0]
            steps = found.count(RESULT)  # the member aliases a reader follows to its type
            for i, inner in enumerate(chain[:-1], 1):  # self.x.y: x a use of Cls.x
                self.attribute_use(inner, target, "attribute", scope)
                steps += 1
                if self.standard(target) or steps > MEMBER_STEPS:
                    return rest  # `items: list`: self.items.append is the list's
                target = f"{target}.{attrs[i]}"
            if steps > MEMBER_STEPS:
                return rest
        if not target and kind not in ("call", "decorator", "inherit"):
            return rest  # an attribute of an object of unknown type: too common to keep
        self.attribute_use(at, target, kind, scope)
        return rest

    def attribute_use(self, at: ast.AST, target: str, kind: str, scope: _Scope) -> None:
        """A use of the last name of an attribute (`y` of `x.y`)."""
        name = at.attr  # type: ignore[attr-defined]
        end_line = at.end_lineno or at.lineno  # type: ignore[attr-defined]
        last = self.pos(end_line, at.end_col_offset or 0)  # type: ignore[attr-defined]
        self.refs.append(Ref(name, target, kind, last - len(name), end_line, scope.index,
                             self.alias_at.get(at, "")))


def python_symbols(text: str, module: str, package: bool = False,
                   tests: bool = False) -> FileSymbols | None:
    """A Python file's symbols and references; None when it does not parse."""
    was_enabled = gc.isenabled()
    gc.disable()  # a tree is many objects that live and die together (python_chunking)
    try:
        tree = parse_python(text)
        if tree is None:
            return None
        try:
            return _Extractor(text, module, package, tests).run(tree)
        except RecursionError:
            return None
    finally:
        if was_enabled:
            gc.enable()
