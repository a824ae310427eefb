"""The types of Go values as far as a file's syntax declares them, for ragdb.tree_symbols:
`cmd.Execute()` is a use of `pkg.Command.Execute` where `cmd` is a parameter `cmd *Command`,
`cmd := &Command{...}`, `var cmd Command`, `cmd := NewCommand()` or the value of a `range`.

Go declares every type it does not infer, so the rules are syntax only:
* a local's type: its parameter's or `var`'s type, a composite literal's (`&T{}`, `T{}`), a
  type assertion's (`x.(*T)`), `new(T)`; or what a call returns, named `pkg.F.()`
  (`pkg.T.M.()` for a method), an element `X.[]` (`range`, `x[i]`); the first of several
  results (`c, err := F()`);
* what a name declares, carried as a member alias (Ref.alias) on the use of its type, as for
  Python (ragdb.python_symbols): a struct field (`parent *Command`: `pkg.Command.parent`), a
  function's or method's first result (`pkg.F.()`), a package-level `var` (`pkg.v`); a slice,
  array or map type declares its elements (`cmds []*Command`: `pkg.Command.cmds.[]`).
ragdb.navigate follows these aliases when read, so a file's rows never depend on another's.
A value of a standard library package (an import path without a dot in its first element:
`fmt`, `net/http`) is left untyped: its members are never in an index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import tree_sitter as ts

if TYPE_CHECKING:
    from ragdb.tree_imports import Imports
    from ragdb.tree_symbols import _File

#: What a call returns, and an element of a slice, array, map or channel (qualified names).
RESULT = "()"
ELEMENT = "[]"
#: Member aliases a reader follows (ragdb.navigate.MEMBER_HOPS): a use whose type needs more
#: is not recorded.
MEMBER_STEPS = 2
_FUNCTIONS = ("function_declaration", "method_declaration", "func_literal")
_CONTAINERS = ("slice_type", "array_type", "map_type", "channel_type")
_BUILTIN_VALUES = frozenset({"nil", "true", "false", "iota", "_"})
#: Parents of an identifier that declare it or use it by a pattern of their own.
_NAMING = frozenset({"parameter_declaration", "variadic_parameter_declaration", "var_spec",
                     "const_spec", "call_expression", "selector_expression",
                     "labeled_statement", "type_parameter_declaration", "package_clause"})

#: A value's type: (qualified name, member aliases a reader follows to reach its members);
#: a slice of T is written `[]T`.
Type = tuple[str, int]


class GoTypes:
    """One Go file's declared types: the member aliases its type uses carry (by the start
    byte of the type's name) and each function's locals, read when first asked."""

    def __init__(self, f: "_File", imports: "Imports", module: str) -> None:
        self.f = f
        self.imports = imports
        self.module = module
        self.standard: set[str] = set()  # names bound to standard library packages
        self.aliases: dict[int, str] = {}
        self.scopes: dict[int, dict[str, ts.Node | Type | None]] = {}
        self._busy: set[tuple[int, str]] = set()
        root = f.tree.root_node
        for child in root.named_children:
            t = child.type
            if t == "import_declaration":
                self._imports(child)
            elif t == "type_declaration":
                for spec in child.named_children:
                    if spec.type == "type_spec":
                        self._struct(spec)
            elif t in ("function_declaration", "method_declaration"):
                self._results(child)
            elif t == "var_declaration":
                for spec in _specs(child, "var_spec"):
                    declared = spec.child_by_field_name("type")
                    names = [n for n in spec.children_by_field_name("name")]
                    if names and declared is not None:
                        self._declare(declared, f"{module}.{f.cut(names[0])}")
                    elif names:
                        value = spec.child_by_field_name("value")
                        literal = _literal_type(value.named_children[0]) if (
                            value is not None and value.named_children) else None
                        if literal is not None:
                            self._declare(literal, f"{module}.{f.cut(names[0])}")

    # -- what names declare ----------------------------------------------------------------

    def _imports(self, node: ts.Node) -> None:
        for spec in _descendants(node, "import_spec", 3):
            path = spec.child_by_field_name("path")
            if path is None:
                continue
            text = self.f.cut(path).strip('"`')
            if "." in text.split("/", 1)[0]:
                continue
            alias = spec.child_by_field_name("name")
            self.standard.add(self.f.cut(alias) if alias is not None else text.rsplit("/", 1)[-1])

    def _struct(self, spec: ts.Node) -> None:
        name = spec.child_by_field_name("name")
        body = spec.child_by_field_name("type")
        if name is None or body is None or body.type != "struct_type":
            return
        owner = f"{self.module}.{self.f.cut(name)}"
        for fields in body.named_children:
            for field in fields.named_children:
                if field.type != "field_declaration":
                    continue
                names = field.children_by_field_name("name")
                declared = field.child_by_field_name("type")
                if names and declared is not None:
                    self._declare(declared, f"{owner}.{self.f.cut(names[0])}")

    def _results(self, node: ts.Node) -> None:
        result = node.child_by_field_name("result")
        name = node.child_by_field_name("name")
        if result is None or name is None:
            return
        if result.type == "parameter_list":
            first = next((p for p in result.named_children
                          if p.type == "parameter_declaration"), None)
            result = first.child_by_field_name("type") if first is not None else None
            if result is None:
                return
        owner = self.module
        if node.type == "method_declaration":
            receiver = self._receiver_type(node)
            if not receiver:
                return
            owner = receiver
        self._declare(result, f"{owner}.{self.f.cut(name)}.{RESULT}")

    def _declare(self, declared: ts.Node, member: str) -> None:
        """`member` is of type `declared`: the alias on its type's name (`T` of `*T`,
        `pkg.T`; of `[]*T` with `.[]`: member's elements are T's)."""
        for _ in range(8):
            t = declared.type
            if t in ("pointer_type", "parenthesized_type"):
                inner = declared.named_children[-1] if declared.named_children else None
            elif t in _CONTAINERS:
                inner = declared.child_by_field_name("element") or declared.child_by_field_name(
                    "value")
                member = f"{member}.{ELEMENT}"
            elif t == "generic_type":
                inner = declared.child_by_field_name("type")
            elif t == "qualified_type":
                package = declared.child_by_field_name("package")
                if package is not None and self.f.cut(package) in self.standard:
                    return
                inner = declared.child_by_field_name("name")
            elif t == "type_identifier":
                self.aliases.setdefault(declared.start_byte, member)
                return
            else:
                return
            if inner is None:
                return
            declared = inner

    def _receiver_type(self, method: ts.Node) -> str:
        receiver = method.child_by_field_name("receiver")
        params = receiver.named_children if receiver is not None else []
        declared = params[0].child_by_field_name("type") if params else None
        found = self.type_name(declared) if declared is not None else None
        return found[0] if found is not None and not found[0].startswith(ELEMENT) else ""

    # -- the types of values -----------------------------------------------------------------

    def type_name(self, node: ts.Node) -> Type | None:
        """The qualified name a type expression names (`*T` -> pkg.T, `[]T` -> []pkg.T);
        None for a builtin, an unnamed or a standard library type."""
        prefix = ""
        for _ in range(8):
            t = node.type
            if t in ("pointer_type", "parenthesized_type"):
                inner = node.named_children[-1] if node.named_children else None
            elif t in _CONTAINERS:
                inner = node.child_by_field_name("element") or node.child_by_field_name("value")
                prefix += ELEMENT
            elif t == "generic_type":
                inner = node.child_by_field_name("type")
            elif t == "qualified_type":
                package = node.child_by_field_name("package")
                name = node.child_by_field_name("name")
                if package is None or name is None:
                    return None
                head = self.f.cut(package)
                bound = self.imports.bound.get(head)
                if bound is None or head in self.standard:
                    return None
                return f"{prefix}{bound}.{self.f.cut(name)}", 0
            elif t == "type_identifier":
                from ragdb.tree_symbols import _GO_BUILTIN_TYPES

                written = self.f.cut(node)
                if written in _GO_BUILTIN_TYPES or not self.module:
                    return None
                return f"{prefix}{self.module}.{written}", 0
            else:
                return None
            if inner is None:
                return None
            node = inner
        return None

    def locals_of(self, node: ts.Node) -> dict[str, ts.Node | Type | None] | None:
        """The locals of the function around a node (nested function literals' too, as one
        scope): name -> what gives its type (a type or value node; None: untyped)."""
        function = None
        parent = node.parent
        while parent is not None:
            if parent.type in _FUNCTIONS:
                function = parent
                if parent.type != "func_literal":
                    break
            parent = parent.parent
        if function is None:
            return None
        found = self.scopes.get(function.start_byte)
        if found is None:
            found = self.scopes[function.start_byte] = self._collect(function)
        return found

    def _collect(self, function: ts.Node) -> dict[str, ts.Node | Type | None]:
        scope: dict[str, ts.Node | Type | None] = {}
        cut = self.f.cut
        stack = [function]
        while stack:
            node = stack.pop()
            t = node.type
            if t == "parameter_declaration" or t == "variadic_parameter_declaration":
                declared = node.child_by_field_name("type")
                for name in node.children_by_field_name("name"):
                    scope.setdefault(cut(name), ("type", declared) if (  # type: ignore
                        t == "parameter_declaration" and declared is not None) else None)
            elif t == "var_spec" or t == "const_spec":
                declared = node.child_by_field_name("type")
                value = node.child_by_field_name("value")
                values = value.named_children if value is not None else []
                for k, name in enumerate(node.children_by_field_name("name")):
                    if declared is not None:
                        scope.setdefault(cut(name), ("type", declared))  # type: ignore
                    else:
                        scope.setdefault(cut(name), values[k] if k < len(values) else None)
            elif t == "short_var_declaration" or t == "range_clause":
                left = node.child_by_field_name("left")
                right = node.child_by_field_name("right")
                names = [n for n in (left.named_children if left is not None else [])]
                values = (right.named_children if right is not None and right.type ==
                          "expression_list" else [right] if right is not None else [])
                for k, name in enumerate(names):
                    if name.type != "identifier":
                        continue
                    given: ts.Node | Type | None = None
                    if t == "range_clause":
                        given = ("element", right) if k == 1 else None  # type: ignore
                    elif len(values) == len(names):
                        given = values[k]
                    elif k == 0 and len(values) == 1:
                        given = values[0]  # c, err := F(): F's first result
                    scope.setdefault(cut(name), given)
            elif t == "type_switch_statement":
                alias = node.child_by_field_name("alias")
                for name in (alias.named_children if alias is not None else []):
                    scope.setdefault(cut(name), None)
            stack.extend(node.named_children)
        return scope

    def local_type(self, name: str, scope: dict[str, ts.Node | Type | None], key: int
                   ) -> Type | None:
        given = scope.get(name)
        if given is None:
            return None
        if isinstance(given, tuple) and isinstance(given[0], str) and isinstance(given[1], int):
            return given  # type: ignore[return-value]
        busy = (key, name)
        if busy in self._busy:
            return None
        self._busy.add(busy)
        try:
            if isinstance(given, tuple):
                how, node = given
                if how == "type":
                    found = self.type_name(node)  # type: ignore[arg-type]
                else:  # the element of what a range ranges over
                    found = _element(self.value_type(node, scope, key))  # type: ignore
            else:
                found = self.value_type(given, scope, key)
        finally:
            self._busy.discard(busy)
        scope[name] = found  # type: ignore[assignment]
        return found

    def value_type(self, node: ts.Node, scope: dict[str, ts.Node | Type | None] | None,
                   key: int) -> Type | None:
        """The type of an expression, as far as declarations tell."""
        cut = self.f.cut
        for _ in range(64):
            t = node.type
            if t in ("parenthesized_expression",):
                node = node.named_children[0] if node.named_children else node
                continue
            if t == "unary_expression":
                operand = node.child_by_field_name("operand")
                if operand is None or cut(node)[:1] != "&":
                    return None
                node = operand
                continue
            break
        t = node.type
        if t == "identifier":
            name = cut(node)
            if scope is not None and name in scope:
                return self.local_type(name, scope, key)
            if name in self.imports.bound or name in _BUILTIN_VALUES or not self.module:
                return None
            return f"{self.module}.{name}", 1  # a package-level var (its alias: pkg.v)
        if t == "composite_literal":
            declared = node.child_by_field_name("type")
            return self.type_name(declared) if declared is not None else None
        if t == "type_assertion_expression":
            declared = node.child_by_field_name("type")
            return self.type_name(declared) if declared is not None else None
        if t == "selector_expression":
            operand = node.child_by_field_name("operand")
            field = node.child_by_field_name("field")
            if operand is None or field is None:
                return None
            if operand.type == "identifier" and (scope is None or cut(operand) not in scope):
                head = cut(operand)
                if head in self.standard:
                    return None
                bound = self.imports.bound.get(head)
                if bound is not None:  # pkg.V: a package-level var of another package
                    return f"{bound}.{cut(field)}", 1
            base = self.value_type(operand, scope, key)
            return _member(base, cut(field))
        if t == "index_expression":
            operand = node.child_by_field_name("operand")
            return _element(self.value_type(operand, scope, key)) if operand is not None \
                else None
        if t == "call_expression":
            function = node.child_by_field_name("function")
            if function is None:
                return None
            if function.type == "identifier" and cut(function) == "new":
                args = node.child_by_field_name("arguments")
                declared = args.named_children[0] if args is not None and \
                    args.named_children else None
                return self.type_name(declared) if declared is not None else None
            if function.type == "identifier":
                name = cut(function)
                if (scope is not None and name in scope) or name in self.imports.bound:
                    return None  # a func value: what it returns is not declared here
                from ragdb.tree_symbols import _GO_BUILTIN_FUNCS

                if name in _GO_BUILTIN_FUNCS or not self.module:
                    return None
                return f"{self.module}.{name}.{RESULT}", 1
            if function.type == "selector_expression":
                operand = function.child_by_field_name("operand")
                field = function.child_by_field_name("field")
                if operand is None or field is None:
                    return None
                if self._package(function):  # pkg.F(): F's result
                    head = cut(operand)
                    if head in self.standard:
                        return None
                    return f"{self.imports.bound[head]}.{cut(field)}.{RESULT}", 1
                base = self.value_type(operand, scope, key)  # x.M(): M's result
                if base is None or base[0].startswith(ELEMENT):
                    return None
                return f"{base[0]}.{cut(field)}.{RESULT}", base[1] + 1
            return None
        return None

    def _package(self, selector: ts.Node) -> bool:
        """Whether `a.F` names F of an imported package (not a member of a value a)."""
        operand = selector.child_by_field_name("operand")
        return operand is not None and operand.type == "identifier" and \
            self.f.cut(operand) in self.imports.bound

    # -- what tree_symbols asks --------------------------------------------------------------

    def member_of(self, qual: ts.Node) -> str | None:
        """The qualified name of what `qual` (the x of `x.Name`) is, where its type is
        known and reachable within MEMBER_STEPS (a package-level var: `pkg.v`, typed by its
        declaration's alias in whichever file declares it); None otherwise (an imported
        package; a receiver is tree_symbols' own)."""
        scope = self.locals_of(qual)
        key = qual.start_byte
        cut = self.f.cut
        if qual.type == "identifier":
            name = cut(qual)
            if scope is None or name not in scope:  # a package-level var (alias: pkg.v)
                if name in self.imports.bound or name in _BUILTIN_VALUES or not self.module:
                    return None
                return f"{self.module}.{name}"
            found = self.local_type(name, scope, id(scope))
        else:
            found = self.value_type(qual, scope, id(scope) if scope is not None else key)
        if found is None or found[0].startswith(ELEMENT) or found[1] > MEMBER_STEPS:
            return None
        return found[0]

    def value_use(self, node: ts.Node, name: str) -> bool:
        """Whether an identifier is a use of a package-level name as a value (`Args:
        NoArgs`, `f(defaultHandler)`): not a local's or a parameter's, a package's, a
        builtin's, a struct literal's key, a name being declared, a call's or a selector's
        head (their own patterns)."""
        if name in _BUILTIN_VALUES or name in self.imports.bound:
            return False
        parent = node.parent
        if parent is None or parent.type in _NAMING:
            return False
        if parent.type == "literal_element":
            keyed = parent.parent
            if keyed is not None and keyed.type == "keyed_element" and \
                    keyed.named_children and keyed.named_children[0] == parent:
                return False  # {Use: ...}: a field's name
        scope = self.locals_of(node)
        return scope is None or name not in scope


def _member(base: Type | None, name: str) -> Type | None:
    if base is None or base[0].startswith(ELEMENT):
        return None
    return f"{base[0]}.{name}", base[1] + 1


def _element(base: Type | None) -> Type | None:
    """The type of an element of a value of type `base`."""
    if base is None:
        return None
    name, steps = base
    if name.startswith(ELEMENT):
        return name[len(ELEMENT):], steps
    return f"{name}.{ELEMENT}", steps + 1


def _literal_type(node: ts.Node) -> ts.Node | None:
    """The type node of `T{...}` or `&T{...}`."""
    if node.type == "unary_expression":
        operand = node.child_by_field_name("operand")
        node = operand if operand is not None else node
    if node.type == "composite_literal":
        return node.child_by_field_name("type")
    return None


def _specs(node: ts.Node, kind: str) -> list[ts.Node]:
    found = []
    for child in node.named_children:
        if child.type == kind:
            found.append(child)
        elif child.type.endswith("_spec_list"):
            found += [c for c in child.named_children if c.type == kind]
    return found


def _descendants(node: ts.Node, kind: str, depth: int) -> list[ts.Node]:
    found = []
    stack = [(node, 0)]
    while stack:
        current, level = stack.pop()
        if current.type == kind:
            found.append(current)
            continue
        if level < depth:
            stack.extend((c, level + 1) for c in current.named_children)
    return found
