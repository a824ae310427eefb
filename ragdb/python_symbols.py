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

Types across files. A use of a member of a typed object is recorded along its whole chain,
`response.headers.get` as `headers` -> `pkg.Response.headers` and `get` ->
`pkg.Response.headers.get`; what `Response.headers` is, its file tells: the declared type of a
member is recorded as a member alias (Ref.alias on a use of the type: `Headers` in
`def headers(self) -> Headers` under @property, in `x: Headers` in a class body, in the
annotation of the parameter `self.x = x` stores, the class called in `self.x = Headers()`),
through which ragdb.navigate reaches `pkg.Headers.get` from `pkg.Response.headers.get`. What a
function returns is named `f.()` (`-> T` of a function other than a property is the member
alias `pkg.f.()`), so `self.t = make()` and `t = make(); t.close()` are typed by it; where no
use of the type carries such an alias, a use named after the stored attribute does (kind type,
target `pkg.make.()`, which no definition has: it is never listed).
"""

from __future__ import annotations

import ast
import builtins
import gc
import re
import sys

from ragdb.python_chunking import _line_starts, parse_python
from ragdb.symbols import FileSymbols, Ref, Symbol

_BUILTINS = frozenset(dir(builtins))
_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}
#: What a name imported from the standard library is bound to: known, never recorded.
_STD = "\0"
_CONSTANT = re.compile(r"_*[A-Z][A-Z0-9_]*$")
#: Decorators that make a method an attribute (its return annotation is the attribute's type).
_PROPERTIES = frozenset({"property", "cached_property"})
#: Annotations that wrap the type of a value (`Optional[T]`, `Final[T]`): T is its type.
_WRAPPERS = frozenset({"Optional", "Final", "ClassVar", "Annotated", "Required",
                       "NotRequired", "ReadOnly"})
#: Member aliases a reader follows to type a use (ragdb.navigate.MEMBER_HOPS): a longer
#: chain (`a.b.c.d.e`) is not recorded past them, it could never be found.
MEMBER_STEPS = 2
#: What a call returns, in a qualified name: `pkg.make.()` is a value `pkg.make()` returns.
RESULT = "()"
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


class _Extractor:
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
        self.classes: dict[str, _Scope] = {}  # qualified -> class scope (this file)
        self.defined: set[ast.AST] = set()  # `self.x = ...` that define a field
        #: a use of a type -> the member (or call result) it declares the type of (Ref.alias)
        self.alias_at: dict[ast.AST, str] = {}
        #: a member of this file -> the annotation that declares its type, where it is read
        self.declared: dict[str, tuple[ast.AST, _Scope]] = {}
        #: (value, scope, member, where): `member = value`, typed once every name is bound
        self.typings: list[tuple[ast.expr, _Scope, str, ast.AST]] = []

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
            declared = _type_node(node.returns)
            if declared is not None:
                prop = scope.kind == "class" and any(
                    _dotted(d).rsplit(".", 1)[-1] in _PROPERTIES for d in node.decorator_list)
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
        inner.bases = [_dotted(b) for b in node.bases]
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

    def declare(self, member: str, annotation: ast.expr | None, value: ast.expr | None,
                where: ast.AST, scope: _Scope) -> None:
        """The type of a variable or field: its annotation's class carries the member alias;
        a value is typed once every name is bound (self.typing)."""
        if annotation is not None:
            declared = _type_node(annotation)
            if declared is not None:
                self.alias_at.setdefault(declared, member)
                self.declared[member] = (declared, scope)
        elif value is not None:
            self.typings.append((value, scope, member, where))

    def typing(self, value: ast.expr, scope: _Scope, member: str, where: ast.AST,
               depth: int = 0) -> None:
        """`member = value`: the use of a class it is an instance of carries the member alias
        (`Foo` of `Foo()`, of a parameter's `x: Foo`); a value of another call is typed by
        the call's result, in a use of its own (`where`, kind type, target `f.()`)."""
        t = type(value)
        if t is ast.Name and depth < 4:
            s: _Scope | None = scope
            name = value.id  # type: ignore[attr-defined]
            while s is not None and s.kind == "function":
                declared = s.annotations.get(name)
                node = _type_node(declared) if declared is not None else None
                if node is not None:
                    self.alias_at.setdefault(node, member)
                    return
                assigned = s.types.get(name)
                if isinstance(assigned, list):
                    found = self.local_type(name, s)
                    for last in reversed(assigned):  # `x = Foo()`: Foo carries the alias
                        if type(last) is ast.Call and found and found == self.value_type(
                                last.func, s) and self.is_class(found):  # type: ignore
                            self.typing(last, s, member, where, depth + 1)
                            return
                    if RESULT in found:
                        self.result(found, member, where, scope)
                    return
                if name in s.locals:
                    return
                s = s.parent
            return
        if t is ast.IfExp:  # a if c else b: of the type both have (or a's, b None)
            orelse = value.orelse  # type: ignore[attr-defined]
            if (type(orelse) is ast.Constant and orelse.value is None) or \
                    self.value_type(value.body, scope) == self.value_type(  # type: ignore
                        orelse, scope):
                self.typing(value.body, scope, member, where, depth + 1)  # type: ignore
            return
        if t is ast.Call and not value.args and not value.keywords and type(  # type: ignore
                value.func) is ast.Name and value.func.id == "super":  # type: ignore
            return
        if t is ast.Call:
            func = value.func  # type: ignore[attr-defined]
            called = self.value_type(func, scope)
            if called and self.is_class(called):
                if func not in self.alias_at:
                    self.alias_at[func] = member
                return
        found = self.value_type(value, scope)
        if RESULT in found:  # else a name with definitions: only a use may carry the alias
            self.result(found, member, where, scope)

    def result(self, found: str, member: str, where: ast.AST, scope: _Scope) -> None:
        """`member` holds what a call returns (`found`, `pkg.make.()`): a use of its own,
        at the name it is stored in."""
        if type(where) is ast.Name:
            name = where.id  # type: ignore[attr-defined]
            line = where.lineno  # type: ignore[attr-defined]
            first = self.pos(line, where.col_offset)  # type: ignore[attr-defined]
        else:
            name = where.attr  # type: ignore[attr-defined]
            line = where.end_lineno or where.lineno  # type: ignore[attr-defined]
            first = self.pos(line, where.end_col_offset or 0) - len(name)  # type: ignore
        self.refs.append(Ref(name, found, "type", first, line, scope.index, member))

    def imports(self, node: ast.Import | ast.ImportFrom, scope: _Scope) -> None:
        base = ""
        if type(node) is ast.ImportFrom:
            base = self.relative(node.module or "", node.level)
            if base.split(".", 1)[0] in _STDLIB and not node.level:
                for alias in node.names:  # bound, not recorded
                    scope.bindings[alias.asname or alias.name] = _STD
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
                    scope.bindings[bound] = _STD
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
        """The qualified name a name means in a scope; None for a local or a builtin; _STD
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
        if name in _BUILTINS:
            return None
        star = self.scopes[0].bindings.get("*")
        return f"{star}.{name}" if star else ""

    def class_of(self, node: ast.AST, scope: _Scope) -> str:
        """The qualified name of a class an annotation or a call names ('' unknown):
        `Foo`, `mod.Foo`, `Optional[Foo]`, `Foo | None`, `"Foo"`."""
        named = _type_node(node)
        if named is None:
            return ""
        node = named
        t = type(node)
        if t is ast.Constant:
            value = node.value  # type: ignore[attr-defined]
            return (self.lookup(value, scope) or "") if isinstance(value, str) and \
                value.isidentifier() else ""
        dotted = _dotted(node)
        if not dotted:
            return ""
        head, _, rest = dotted.partition(".")
        found = self.lookup(head, scope)
        if not found or found == _STD:
            return ""
        return f"{found}.{rest}" if rest else found

    def member(self, cls: str, name: str) -> tuple[str, bool]:
        """A class's member by name, through its base classes: (its qualified name, whether
        this file defines it). A class of another file: its name and the member's; one of
        this file that does not define it: the member of its first base class of another
        file, if any (inherited)."""
        seen: set[str] = set()
        todo = [cls]
        outside = ""
        while todo:
            current = todo.pop(0)
            if current in seen:
                continue
            seen.add(current)
            klass = self.classes.get(current)
            if klass is None:
                outside = outside or current
                continue
            found = klass.members.get(name)
            if found:
                return found, True
            parent = klass.parent or self.scopes[0]
            for base in klass.bases:
                head, _, rest = base.partition(".")
                resolved = self.lookup(head, parent) if head else None
                if resolved and resolved != _STD:
                    todo.append(f"{resolved}.{rest}" if rest else resolved)
        return f"{outside or cls}.{name}", False

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
                    if found and found != _STD:
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
            if found is None or found == _STD or (
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
            if found == _STD:
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

    def value_type(self, node: ast.AST, scope: _Scope) -> str:
        """What the members of a value are members of, as a qualified name ('' unknown):
        `Foo()` and a local `x = Foo()` or `x: Foo` give `pkg.Foo`, `self.a.b` gives
        `pkg.Cls.a.b`, `make()` gives `pkg.make.()`, `super()` the class's first base."""
        t = type(node)
        if t is ast.Name:
            found = self.lookup(node.id, scope)  # type: ignore[attr-defined]
            if found is None:
                return self.local_type(node.id, scope)  # type: ignore[attr-defined]
            return "" if found == _STD else found
        if t is ast.Attribute:
            base = self.value_type(node.value, scope)  # type: ignore[attr-defined]
            found = self.member(base, node.attr)[0] if base else ""  # type: ignore
            return "" if self.standard(found) else found
        if t is ast.IfExp:
            body = self.value_type(node.body, scope)  # type: ignore[attr-defined]
            orelse = node.orelse  # type: ignore[attr-defined]
            return body if (type(orelse) is ast.Constant and orelse.value is None) or \
                body == self.value_type(orelse, scope) else ""
        if t is not ast.Call:
            return ""
        func = node.func  # type: ignore[attr-defined]
        if type(func) is ast.Name and func.id == "super" and \
                self.lookup("super", scope) is None:
            return self.super_of(scope)
        called = self.value_type(func, scope)
        if not called:
            return ""
        return called if self.is_class(called) else f"{called}.{RESULT}"

    def standard(self, member: str) -> bool:
        """Whether a member of this file is declared of a builtin or standard library type
        (`items: list`, a property `-> str`): its own members are never recorded."""
        declared = self.declared.get(member)
        if declared is None:
            return False
        node, scope = declared
        head = _dotted(node).partition(".")[0] if type(node) is not ast.Constant else \
            str(node.value)  # type: ignore[attr-defined]
        if not head:
            return False
        found = self.lookup(head, scope)
        return found == _STD or (found is None and head in _BUILTINS)

    def is_class(self, qualified: str) -> bool:
        """Whether a called name makes an instance of itself: a class of this file, else a
        name written as classes are (`Foo`, `_Foo`)."""
        return qualified in self.classes or \
            qualified.rsplit(".", 1)[-1].lstrip("_")[:1].isupper()

    def super_of(self, scope: _Scope) -> str:
        """The first base class of the class whose method `scope` is."""
        s: _Scope | None = scope
        while s is not None and s.cls is None:
            s = s.parent
        cls = s.cls if s is not None else None
        if cls is None or not cls.bases or not cls.bases[0]:
            return ""
        head, _, rest = cls.bases[0].partition(".")
        found = self.lookup(head, cls.parent or self.scopes[0])
        if not found or found == _STD:
            return ""
        return f"{found}.{rest}" if rest else found

    def local_type(self, name: str, scope: _Scope) -> str:
        """The type of a function's local or parameter: its annotation, else what it was
        assigned (typed on first use, once; a value defined through itself is not typed)."""
        s: _Scope | None = scope
        while s is not None and s.kind == "function":
            declared = s.annotations.get(name)
            found = self.class_of(declared, s) if declared is not None else ""
            if found:
                return found
            if name in s.types:
                assigned = s.types[name]
                if isinstance(assigned, str):
                    return assigned
                for value in assigned:  # the last; in `x = x.y()`, x is the one before
                    s.types[name] = found
                    found = self.value_type(value, s)
                s.types[name] = found
                return found
            if name in s.locals:
                return ""
            s = s.parent
        return ""


def _type_node(node: ast.AST) -> ast.AST | None:
    """The part of an annotation that names the class of its value: `Foo` of `Foo`,
    `mod.Foo`, `Optional[Foo]`, `Foo | None`, `Final[Foo]`, `"Foo"`; `List` of `List[Foo]`
    (a generic's own class); None where it names no one class (`A | B`)."""
    for _ in range(8):
        t = type(node)
        if t is ast.Name or t is ast.Attribute:
            return node
        if t is ast.Constant:
            value = node.value  # type: ignore[attr-defined]
            return node if isinstance(value, str) and value.isidentifier() else None
        if t is ast.Subscript:
            if _dotted(node.value).rsplit(".", 1)[-1] not in _WRAPPERS:  # type: ignore
                return node.value  # type: ignore[attr-defined]
            node = node.slice  # type: ignore[attr-defined]
            if type(node) is ast.Tuple:  # Annotated[T, ...]
                node = node.elts[0] if node.elts else node  # type: ignore[attr-defined]
            continue
        if t is ast.BinOp and type(node.op) is ast.BitOr:  # type: ignore[attr-defined]
            left, right = node.left, node.right  # type: ignore[attr-defined]
            if type(right) is ast.Constant and right.value is None:
                node = left
            elif type(left) is ast.Constant and left.value is None:
                node = right
            else:
                return None
            continue
        return None
    return None


def _dotted(node: ast.AST) -> str:
    """`a.b.c` as text; '' for anything else."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is not ast.Name:
        return ""
    parts.append(node.id)  # type: ignore[attr-defined]
    return ".".join(reversed(parts))


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
