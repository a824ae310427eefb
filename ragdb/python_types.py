"""The types of Python values as far as a file declares them, for ragdb.python_symbols (whose
extractor inherits these rules: they read its scopes and bindings, and it asks them while it
walks), as ragdb.go_types is for Go.

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
from typing import TYPE_CHECKING, Callable

from ragdb.symbols import Ref

if TYPE_CHECKING:
    from ragdb.python_symbols import _Scope

BUILTINS = frozenset(dir(builtins))
#: What a name imported from the standard library is bound to: known, never recorded.
STD = "\0"
#: What a call returns, in a qualified name: `pkg.make.()` is a value `pkg.make()` returns.
RESULT = "()"
#: Annotations that wrap the type of a value (`Optional[T]`, `Final[T]`): T is its type.
_WRAPPERS = frozenset({"Optional", "Final", "ClassVar", "Annotated", "Required",
                       "NotRequired", "ReadOnly"})


class PythonTypes:
    """One file's types: which use of a class carries which member alias, what a member is
    declared as, and the type of a value (a name, `self.a.b`, a call) in a scope."""

    #: The extractor's: the module's name, its scopes (the module's first), its references,
    #: a str offset of ast's (line, column), and the qualified name a name means in a scope.
    module: str
    scopes: list[_Scope]
    refs: list[Ref]
    pos: Callable[[int, int], int]
    lookup: Callable[[str, _Scope], str | None]

    def __init__(self) -> None:
        self.classes: dict[str, _Scope] = {}  # qualified -> class scope (this file)
        #: a use of a type -> the member (or call result) it declares the type of (Ref.alias)
        self.alias_at: dict[ast.AST, str] = {}
        #: a member of this file -> the annotation that declares its type, where it is read
        self.declared: dict[str, tuple[ast.AST, _Scope]] = {}
        #: (value, scope, member, where): `member = value`, typed once every name is bound
        self.typings: list[tuple[ast.expr, _Scope, str, ast.AST]] = []

    def declare(self, member: str, annotation: ast.expr | None, value: ast.expr | None,
                where: ast.AST, scope: _Scope) -> None:
        """The type of a variable or field: its annotation's class carries the member alias;
        a value is typed once every name is bound (self.typing)."""
        if annotation is not None:
            declared = type_node(annotation)
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
                node = type_node(declared) if declared is not None else None
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

    def class_of(self, node: ast.AST, scope: _Scope) -> str:
        """The qualified name of a class an annotation or a call names ('' unknown):
        `Foo`, `mod.Foo`, `Optional[Foo]`, `Foo | None`, `"Foo"`."""
        named = type_node(node)
        if named is None:
            return ""
        node = named
        t = type(node)
        if t is ast.Constant:
            value = node.value  # type: ignore[attr-defined]
            return (self.lookup(value, scope) or "") if isinstance(value, str) and \
                value.isidentifier() else ""
        dotted = dotted_name(node)
        if not dotted:
            return ""
        head, _, rest = dotted.partition(".")
        found = self.lookup(head, scope)
        if not found or found == STD:
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
                if resolved and resolved != STD:
                    todo.append(f"{resolved}.{rest}" if rest else resolved)
        return f"{outside or cls}.{name}", False

    def value_type(self, node: ast.AST, scope: _Scope) -> str:
        """What the members of a value are members of, as a qualified name ('' unknown):
        `Foo()` and a local `x = Foo()` or `x: Foo` give `pkg.Foo`, `self.a.b` gives
        `pkg.Cls.a.b`, `make()` gives `pkg.make.()`, `super()` the class's first base."""
        t = type(node)
        if t is ast.Name:
            found = self.lookup(node.id, scope)  # type: ignore[attr-defined]
            if found is None:
                return self.local_type(node.id, scope)  # type: ignore[attr-defined]
            return "" if found == STD else found
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
        head = dotted_name(node).partition(".")[0] if type(node) is not ast.Constant else \
            str(node.value)  # type: ignore[attr-defined]
        if not head:
            return False
        found = self.lookup(head, scope)
        return found == STD or (found is None and head in BUILTINS)

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
        if not found or found == STD:
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


def type_node(node: ast.AST) -> ast.AST | None:
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
            if dotted_name(node.value).rsplit(".", 1)[-1] not in _WRAPPERS:  # type: ignore
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


def dotted_name(node: ast.AST) -> str:
    """`a.b.c` as text; '' for anything else."""
    parts = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is not ast.Name:
        return ""
    parts.append(node.id)  # type: ignore[attr-defined]
    return ".".join(reversed(parts))
