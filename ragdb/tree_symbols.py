"""Definitions and references of Go, Rust, TypeScript, JavaScript, C, C++, CUDA and Java,
read from the tree-sitter tree the chunker parsed (ragdb.syntax_trees.parse, which keeps it);
and of a Python file its own `ast` refuses (a syntax error, Python 2, newer syntax), whose
definitions, imports, calls, base classes, decorators and annotations are read as
ragdb.python_symbols reads them, without its typing of locals.

Two queries per grammar, run by tree-sitter in C so Python only sees what they capture: one
for definitions (`@name`, the definition node captured by its kind), one for uses (`@call`,
`@type`, `@attr`, `@macro`, `@inherit`, with `@qual` the qualifier written before a name:
`pkg.F`, `a::b::f`, `this.m`). Imports are read per language (ragdb.tree_imports), C's
declarations as its parser leaves them, macros and all, by ragdb.c_declarations. A use is
resolved as ragdb.symbols says: through the file's own definitions, its imports, `self`/
`this`/`Self` and the language's rule for a bare name (Go: the same package; C and C++: the
one global namespace; Java: the enclosing class, then the same package).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

import tree_sitter as ts

from ragdb import c_declarations
from ragdb.go_types import GoTypes
from ragdb.python_types import BUILTINS, STD
from ragdb.symbols import ByteOffsets, FileSymbols, Ref, Symbol, is_test_file
from ragdb.syntax_trees import MAX_ERROR_SHARE, best_tree, grammar_language
from ragdb.tree_imports import Imports, module_of, read_imports

_C_DEFS = """
(function_definition declarator: (_) @decl) @function
(declaration declarator: (_) @decl) @variable
(struct_specifier name: (_) @name body: (_)) @struct
(union_specifier name: (_) @name body: (_)) @struct
(enum_specifier name: (_) @name body: (_)) @enum
(enumerator name: (_) @name) @constant
(field_declaration declarator: (_) @decl) @field
(type_definition declarator: (_) @decl) @type
(preproc_def name: (_) @name) @macro
(preproc_function_def name: (_) @name) @macro
"""
_CPP_DEFS = _C_DEFS + """
(class_specifier name: (_) @name body: (_)) @class
(namespace_definition name: (_) @name) @module
(alias_declaration name: (_) @name) @type
"""
_JS_DEFS = """
(function_declaration name: (identifier) @name) @function
(generator_function_declaration name: (identifier) @name) @function
(function_expression name: (identifier) @name) @function
(class_declaration name: (_) @name) @class
(method_definition name: (_) @name) @method
(field_definition property: (_) @name) @field
(program (lexical_declaration (variable_declarator name: (identifier) @name) @variable))
(program (variable_declaration (variable_declarator name: (identifier) @name) @variable))
(export_statement declaration: (lexical_declaration
    (variable_declarator name: (identifier) @name) @variable))
(export_statement declaration: (variable_declaration
    (variable_declarator name: (identifier) @name) @variable))
(variable_declarator name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function) (class)]) @function
(expression_statement (assignment_expression
    left: (member_expression object: (_) @recv property: (property_identifier) @name)
    right: [(arrow_function) (function_expression) (generator_function) (class)]) @function)
"""
# TypeScript's own: members of classes and interfaces (not of object literals and type
# literals), overload signatures left out (the implementation is the definition), a `const`
# or `let` in any block but a function's body (locals are left out in Python: _File.in_body).
_TS_DEFS = _JS_DEFS.replace("(field_definition property: (_) @name) @field\n", "").replace(
    "(method_definition name: (_) @name) @method",
    "(class_body (method_definition name: (_) @name) @method)") + """
(abstract_class_declaration name: (_) @name) @class
(interface_body (method_signature name: (_) @name) @method)
(abstract_method_signature name: (_) @name) @method
(ambient_declaration (function_signature name: (_) @name) @function)
(export_statement (function_signature name: (_) @name) @function)
(interface_declaration name: (_) @name) @interface
(type_alias_declaration name: (_) @name) @type
(enum_declaration name: (_) @name) @enum
(enum_body name: (property_identifier) @name @constant)
(enum_assignment name: (property_identifier) @name) @constant
(internal_module name: (_) @name) @module
(public_field_definition name: (_) @name) @field
(interface_body (property_signature name: (_) @name) @field)
(internal_module body: (statement_block (export_statement declaration: (lexical_declaration
    (variable_declarator name: (identifier) @name) @variable))))
(ambient_declaration (lexical_declaration (variable_declarator name: (identifier) @name)
    @variable))
(lexical_declaration "const" (variable_declarator name: (identifier) @name) @constant)
(lexical_declaration "let" (variable_declarator name: (identifier) @name) @variable)
(variable_declaration (variable_declarator name: (identifier) @name) @variable)
(variable_declarator name: [(array_pattern (identifier) @name)
                            (object_pattern (shorthand_property_identifier_pattern) @name)])
    @variable
"""
DEF_QUERIES: dict[str, str] = {
    "c": _C_DEFS,
    "cpp": _CPP_DEFS,
    "javascript": _JS_DEFS,
    "typescript": _TS_DEFS,
    "tsx": _TS_DEFS,
    "go": """
(function_declaration name: (identifier) @name) @function
(method_declaration receiver: (parameter_list (parameter_declaration type: (_) @recv))
    name: (field_identifier) @name) @method
(type_spec name: (type_identifier) @name) @type
(type_alias name: (type_identifier) @name) @type
(source_file (const_declaration (const_spec name: (identifier) @name) @constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @variable))
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name) @variable)))
(type_spec type: (struct_type (field_declaration_list
    (field_declaration name: (field_identifier) @name) @field)))
(type_spec type: (interface_type (method_elem name: (field_identifier) @name) @method))
""",
    "rust": """
(function_item name: (identifier) @name) @function
(function_signature_item name: (identifier) @name) @method
(struct_item name: (type_identifier) @name) @struct
(union_item name: (type_identifier) @name) @struct
(enum_item name: (type_identifier) @name) @enum
(enum_variant name: (identifier) @name) @constant
(trait_item name: (type_identifier) @name) @trait
(type_item name: (type_identifier) @name) @type
(associated_type name: (type_identifier) @name) @type
(mod_item name: (identifier) @name) @module
(macro_definition name: (identifier) @name) @macro
(const_item name: (identifier) @name) @constant
(static_item name: (identifier) @name) @variable
(struct_item body: (field_declaration_list
    (field_declaration name: (field_identifier) @name) @field))
(union_item body: (field_declaration_list
    (field_declaration name: (field_identifier) @name) @field))
(impl_item type: (_) @name) @impl
""",
    "python": """
(function_definition name: (identifier) @name) @function
(class_definition name: (identifier) @name) @class
(type_alias_statement left: (type (identifier) @name)) @type
(assignment left: (identifier) @name) @variable
(assignment left: [(pattern_list (identifier) @name) (tuple_pattern (identifier) @name)])
    @variable
""",
    "java": """
(class_declaration name: (identifier) @name) @class
(record_declaration name: (identifier) @name) @class
(interface_declaration name: (identifier) @name) @interface
(annotation_type_declaration name: (identifier) @name) @interface
(enum_declaration name: (identifier) @name) @enum
(enum_constant name: (identifier) @name) @constant
(method_declaration name: (identifier) @name) @method
(constructor_declaration name: (identifier) @name) @method
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @field
(constant_declaration declarator: (variable_declarator name: (identifier) @name)) @constant
""",
}

_C_REFS = """
(call_expression function: (identifier) @call)
(call_expression function: (field_expression argument: (_) @qual field: (field_identifier) @call))
(type_identifier) @type
"""
_CPP_REFS = _C_REFS + """
(call_expression function: (qualified_identifier scope: (_) @qual name: (identifier) @call))
(qualified_identifier scope: (_) @qual name: (type_identifier) @type)
(base_class_clause (type_identifier) @inherit)
"""
_JS_REFS = """
(call_expression function: (identifier) @call)
(call_expression function: (member_expression object: (_) @qual
    property: (property_identifier) @call))
(new_expression constructor: (identifier) @new)
(new_expression constructor: (member_expression object: (_) @qual
    property: (property_identifier) @new))
(member_expression object: (identifier) @qual property: (property_identifier) @attr)
(class_heritage (identifier) @inherit)
"""
_TS_REFS = _JS_REFS.replace("(class_heritage (identifier) @inherit)",
                            "") + """
(type_identifier) @type
(nested_type_identifier module: (_) @qual name: (type_identifier) @type)
(extends_clause value: (identifier) @inherit)
(implements_clause (type_identifier) @inherit)
(extends_type_clause type: (type_identifier) @inherit)
"""
REF_QUERIES: dict[str, str] = {
    "python": """
(call function: (identifier) @call)
(call function: (attribute object: (_) @qual attribute: (identifier) @call))
(class_definition superclasses: (argument_list (identifier) @inherit))
(class_definition superclasses: (argument_list (attribute object: (_) @qual
    attribute: (identifier) @inherit)))
(decorator (identifier) @decorator)
(decorator (attribute object: (_) @qual attribute: (identifier) @decorator))
(decorator (call function: (identifier) @decorator))
(decorator (call function: (attribute object: (_) @qual attribute: (identifier) @decorator)))
(type (identifier) @type)
(type (attribute object: (_) @qual attribute: (identifier) @type))
(attribute object: (identifier) @qual attribute: (identifier) @attr)
""",
    "c": _C_REFS,
    "cpp": _CPP_REFS,
    "javascript": _JS_REFS,
    "typescript": _TS_REFS,
    "tsx": _TS_REFS,
    "go": """
(call_expression function: (identifier) @call)
(call_expression function: (selector_expression operand: (_) @qual
    field: (field_identifier) @call))
(type_identifier) @type
(qualified_type package: (package_identifier) @qual name: (type_identifier) @type)
(selector_expression operand: (_) @qual field: (field_identifier) @attr)
(identifier) @use
""",
    "rust": """
(call_expression function: (identifier) @call)
(call_expression function: (scoped_identifier path: (_) @qual name: (identifier) @call))
(call_expression function: (field_expression value: (_) @qual field: (field_identifier) @call))
(call_expression function: (generic_function function: (identifier) @call))
(call_expression function: (generic_function function: (scoped_identifier path: (_) @qual
    name: (identifier) @call)))
(macro_invocation macro: (identifier) @macro)
(macro_invocation macro: (scoped_identifier path: (_) @qual name: (identifier) @macro))
(type_identifier) @type
(scoped_type_identifier path: (_) @qual name: (type_identifier) @type)
(impl_item trait: (type_identifier) @inherit)
(struct_expression name: (type_identifier) @call)
""",
    "java": """
(method_invocation !object name: (identifier) @call)
(method_invocation object: (_) @qual name: (identifier) @call)
(object_creation_expression type: (type_identifier) @new)
(type_identifier) @type
(superclass (type_identifier) @inherit)
(super_interfaces (type_list (type_identifier) @inherit))
""",
}
#: Captures that make a scope (their names qualify what they hold).
_SCOPES = frozenset({"function", "method", "class", "struct", "enum", "interface", "trait",
                     "module", "impl", "test"})
_GO_BUILTIN_TYPES = frozenset(
    "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune "
    "string uint uint8 uint16 uint32 uint64 uintptr any comparable".split())
_GO_BUILTIN_FUNCS = frozenset(
    "append cap clear close complex copy delete imag len make max min new panic print println "
    "real recover".split())
#: Kinds whose functions are methods, and what `this` and `self` name.
_TYPES = frozenset({"class", "struct", "interface", "trait", "impl", "enum"})
_REF_KIND = {"attr": "attribute", "new": "call"}
#: Parents of a qualifier that name a scope (`a::b`, `pkg.T`), not an object (`obj.f`).
_SCOPED = frozenset({"qualified_identifier", "scoped_identifier", "scoped_type_identifier",
                     "nested_type_identifier", "qualified_type"})
_SELF = frozenset({"self", "this", "Self"})
_GENERIC = re.compile(r"[<\[].*$", re.S)
_PY_CONSTANT = re.compile(r"_*[A-Z][A-Z0-9_]*$")  # as ragdb.python_symbols names them
#: Python's nodes whose names are local to them: an assignment inside is not a definition.
_PY_LOCAL_SCOPES = frozenset({"function_definition", "lambda"})


def _grammar(language: str) -> str:
    return {"cuda": "cpp"}.get(language, language)


@lru_cache(maxsize=None)
def _query(grammar: str, which: str) -> ts.Query:
    source = (DEF_QUERIES if which == "defs" else REF_QUERIES)[grammar]
    return ts.Query(grammar_language(grammar), source)


_JS = frozenset({"javascript", "typescript", "tsx"})
_JS_FUNCTIONS = frozenset({"function_declaration", "function_expression", "function",
                           "arrow_function", "method_definition", "generator_function",
                           "generator_function_declaration", "class_static_block"})


#: TypeScript declaration files: their function signatures are the definitions (the
#: implementation is compiled JavaScript elsewhere).
_DECLARATION_FILE = re.compile(r"\.d\.[cm]?tsx?$")


def _declares(signature: ts.Node, rel: str) -> bool:
    """Whether a TypeScript function signature is a definition: in a declaration file
    (`export function nanoid(size?: number): string` in index.d.ts) or `declare`d; in a .ts
    file an overload's signature is not (its implementation is)."""
    parent = signature.parent
    return bool(_DECLARATION_FILE.search(rel)) or (
        parent is not None and parent.type == "ambient_declaration")


def _within(spans: list[tuple[int, int]], at: int) -> bool:
    """Whether a byte lies inside one of the sorted, disjoint spans (start, end)."""
    k = bisect_right(spans, (at, 1 << 62)) - 1
    return k >= 0 and spans[k][0] <= at < spans[k][1]


class _Def:
    __slots__ = ("name", "qualifier", "kind", "node", "name_node", "index", "qualified",
                 "parent", "start_byte")

    def __init__(self, name: str, qualifier: str, kind: str, node: ts.Node,
                 name_node: ts.Node, start_byte: int = -1) -> None:
        self.name = name
        self.qualifier = qualifier  # written before the name: Go's receiver, C++'s A::
        self.kind = kind
        self.node = node
        #: where it starts: its node's start, or a K&R function's head (the node is its body)
        self.start_byte = node.start_byte if start_byte < 0 else start_byte
        self.name_node = name_node
        self.index = -1
        self.qualified = ""
        self.parent: _Def | None = None


class _File:
    def __init__(self, text: str, language: str, rel: str, tree: ts.Tree, data: bytes) -> None:
        self.text = text
        self.language = language
        self.grammar = _grammar(language)
        self.rel = rel
        self.tree = tree
        self.data = data
        self.pos = ByteOffsets(text, data).pos
        self.symbols: list[Symbol] = []
        self.refs: list[Ref] = []
        self.go: GoTypes | None = None  # Go: the types its syntax declares

    @staticmethod
    def line(node: ts.Node) -> int:
        return int(node.start_point[0]) + 1

    def cut(self, node: ts.Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    # -- definitions -------------------------------------------------------------------------

    def definitions(self) -> list[_Def]:
        found: dict[tuple[int, int], _Def] = {}
        namespaces: set[str] = set()
        taken: set[int] = set()  # K&R heads and parameter declarations: not variables
        bodies: list[tuple[int, int]] = []  # where the functions read from loose tokens lie
        if self.language == "c":
            for named, body, head in c_declarations.old_style_functions(
                    self.tree.root_node, self.data, taken):
                found[(named.start_byte, named.end_byte)] = _Def(
                    self.cut(named), "", "function", body, named, head.start_byte)
                bodies.append((named.end_byte, body.end_byte))
            bodies.sort()
        cursor = ts.QueryCursor(_query(self.grammar, "defs"))
        for _pattern, captures in cursor.matches(self.tree.root_node):
            kind = next(k for k in captures if k not in ("name", "decl", "recv"))
            node = captures[kind][0]
            qualifier = ""
            if node.start_byte in taken and kind == "variable":
                continue
            if node.type == "function_signature" and not _declares(node, self.rel):
                continue  # an overload signature: the implementation is the definition
            if self.grammar in ("c", "cpp") and kind not in ("macro", "constant", "type") and \
                    (c_declarations.in_function(node) or _within(bodies, node.start_byte)):
                continue  # a local type, or a macro used as a loop (`foreach(x) {...}`, and
                # `CASE_OP(X) {` in a body the parser could not read: not a function)
            if "decl" in captures:
                name_node, is_function = c_declarations.declarator(captures["decl"][0])
                if name_node is None:
                    continue
                if kind in ("variable", "field") and is_function:
                    if kind == "variable" or self.grammar == "c":
                        continue  # a prototype: declared, not defined
                    kind = "method"
                    continue  # a member function declared in its class, defined elsewhere
                if kind == "variable" and (
                        (node.has_error and not c_declarations.only_macro_words(node))
                        or not c_declarations.global_declaration(node, self.data)):
                    continue  # not a definition, or the parser's guess inside macro soup
                if kind == "variable" and (self.language == "c" or node.has_error) and \
                        c_declarations.call_shaped(captures["decl"][0]):
                    continue  # `int f OF((int a));`: a prototype (C has no constructor call)
                if name_node.type == "qualified_identifier":
                    scopes: list[str] = []
                    inner: ts.Node | None = name_node
                    while inner is not None and inner.type == "qualified_identifier":
                        scope = inner.child_by_field_name("scope")
                        if any(c_declarations.macro_scope(c) for c in inner.children):
                            scopes = []  # `ZLIB_INTERNAL x`, `MACRO ns::T f`: not scopes
                        elif scope is not None:
                            scopes.append(self.cut(scope).replace("::", "."))
                        inner = inner.child_by_field_name("name")  # a::b::f: b::f, then f
                    if inner is None:
                        continue
                    name_node = inner
                    qualifier = ".".join(scopes)
                    if kind == "function" and qualifier:
                        kind = "method"
            else:
                name_node = captures["name"][0]
                if name_node.type == "nested_namespace_specifier":  # namespace a::b {
                    parts, todo = [], [name_node]
                    while todo:  # a::b::c is (a, (b, c))
                        for c in todo.pop().named_children:
                            if c.type == "namespace_identifier":
                                parts.append(c)
                            elif c.type == "nested_namespace_specifier":
                                todo.append(c)
                    parts.sort(key=lambda c: c.start_byte)
                    *outer, last = parts or [name_node]
                    for part in outer:
                        text = self.cut(part)
                        found[(part.start_byte, part.end_byte)] = _Def(
                            text, "", "impl" if text in namespaces else "module", node, part)
                        namespaces.add(text)
                    name_node = last
                before = name_node.prev_named_sibling
                while before is not None and before.type == "comment":
                    before = before.prev_named_sibling
                if kind == "macro" and before is not None and before.type == "ERROR" and \
                        before.named_child_count and \
                        before.named_children[0].type == "identifier":
                    name_node = before.named_children[0]  # `#define F(a) \ /* c */ \`
            name = self.cut(name_node)
            if kind == "impl" or "<" in name:  # a template's specialization: its name
                name = _GENERIC.sub("", name).rsplit("::", 1)[-1].strip()
            if "recv" in captures:
                qualifier = _GENERIC.sub("", self.cut(captures["recv"][0])).lstrip("*& ")
                if qualifier in _SELF:
                    qualifier = ""  # this.f = function () {...}: the enclosing scope's
                elif self.grammar in _JS and self.in_body(node):
                    continue  # `obj.f = () => ...` in a function: a value set, not defined
            if kind in ("variable", "constant") and node.type == "variable_declarator" and \
                    self.grammar in _JS and self.in_body(node):
                continue  # a local: as in every other language, not a definition
            if kind == "type" and self.grammar == "go":
                shape = node.child_by_field_name("type")
                kind = {"struct_type": "struct", "interface_type": "interface"}.get(
                    shape.type if shape is not None else "", "type")
            name = name.strip("'\"` ")
            if name == "_" and self.grammar in ("go", "rust"):
                continue  # `var _ Iface = (*T)(nil)`, `const _: () = ...`: checks, no name
            if self.grammar == "python" and kind == "variable":
                kind = self.python_variable(node, name)
                if not kind:
                    continue
            if not name or (self.grammar in ("c", "cpp") and
                            name in c_declarations.TYPE_WORDS):
                continue  # `OF((void))` read as a declaration of `void`
            if kind == "module" and self.grammar == "cpp":
                if name in namespaces:
                    kind = "impl"  # `namespace vllm {` again: a scope, defined once
                namespaces.add(name)
            key = (name_node.start_byte, name_node.end_byte)
            if key in found and (found[key].kind not in ("variable", "constant")
                                 or kind in ("variable", "constant")):
                continue  # `const f = () => ...` is a function, whichever pattern came first
            found[key] = _Def(name, qualifier, kind, node, name_node)
        return sorted(found.values(), key=lambda d: (d.start_byte, -d.node.end_byte,
                                                     d.name_node.start_byte))

    @staticmethod
    def python_variable(assignment: ts.Node, name: str) -> str:
        """What a Python assignment defines, as ragdb.python_symbols says: a constant by its
        name, a field (`x: int` in a class body), else a variable; '' in a function (a
        local) or in an expression (a keyword argument's default, a walrus)."""
        statement = assignment.parent
        if statement is None or statement.type != "expression_statement":
            return ""  # `a = b = 1`: the inner assignment is the outer's value
        parent = statement.parent
        while parent is not None and parent.type != "module":
            if parent.type in _PY_LOCAL_SCOPES:
                return ""
            if parent.type == "class_definition":
                break
            parent = parent.parent
        if parent is not None and parent.type == "class_definition" and \
                assignment.child_by_field_name("right") is None:
            return "field"
        return "constant" if _PY_CONSTANT.match(name) else "variable"

    @staticmethod
    def in_body(node: ts.Node) -> bool:
        """Whether a JavaScript or TypeScript node lies in a function's body."""
        parent = node.parent
        while parent is not None and parent.type != "program":
            if parent.type == "statement_block" and parent.parent is not None and \
                    parent.parent.type in _JS_FUNCTIONS:
                return True
            parent = parent.parent
        return False

    def place(self, defs: list[_Def], module: str) -> None:
        """Each definition's enclosing scope, qualified name and kind in context."""
        stack: list[_Def] = []
        by_qualified: dict[str, int] = {}
        for d in defs:
            while stack and stack[-1].node.end_byte <= d.start_byte:
                stack.pop()
            parent = stack[-1] if stack else None
            d.parent = parent
            head = parent.qualified if parent is not None else module
            if d.kind == "constant" and parent is not None and parent.kind == "enum" and \
                    self.grammar in ("c", "cpp"):  # C's enumerators are names of the scope
                head = parent.parent.qualified if parent.parent is not None else module
            owner = head
            if d.qualifier:  # Go's receiver, C++'s A::m: a member defined outside its type
                owner = head = f"{head}.{d.qualifier}" if head else d.qualifier
            d.qualified = f"{head}.{d.name}" if head else d.name
            if d.kind == "function" and parent is not None and parent.kind in _TYPES:
                d.kind = "method"
            if d.kind in ("function", "method") and self.is_test(d):
                d.kind = "test"
            if d.kind in _SCOPES:
                stack.append(d)
            if d.kind == "impl":
                continue
            if parent is not None and parent.kind != "impl" and not d.qualifier:
                owner_index = parent.index
            else:
                owner_index = by_qualified.get(owner, -1)
            first, last = self.pos(d.start_byte), self.pos(d.node.end_byte)
            d.index = len(self.symbols)
            self.symbols.append(Symbol(
                d.name, d.qualified, d.kind, first, last, self.line(d.name_node),
                int(d.node.end_point[0]) + 1, owner_index))
            by_qualified.setdefault(d.qualified, d.index)

    def is_test(self, d: _Def) -> bool:
        if self.grammar == "python":  # as ragdb.python_symbols: test* in a file of tests
            return d.name.startswith("test") and is_test_file(self.rel) and (
                d.parent is None or d.parent.kind != "class" or d.parent.name.startswith("Test"))
        if self.grammar == "go":
            return d.name.startswith("Test") and self.rel.endswith("_test.go")
        if self.grammar == "rust":
            before = d.node.prev_named_sibling
            return before is not None and before.type == "attribute_item" and "test" in \
                self.cut(before)
        if self.grammar == "java":
            mods = d.node.child(0)
            return mods is not None and mods.type == "modifiers" and "@Test" in self.cut(mods)
        return False

    # -- references --------------------------------------------------------------------------

    def references(self, defs: list[_Def], imports: Imports, module: str) -> None:
        scopes = [d for d in defs if d.kind in _SCOPES]
        starts = [d.start_byte for d in scopes]
        top: dict[str, str] = {}  # a name defined at the file's top level -> qualified
        members: dict[str, set[str]] = {}  # a type's qualified name -> its members' names
        def_names = set()
        for d in defs:
            def_names.add(d.name_node.start_byte)
            parent_q, _, _ = d.qualified.rpartition(".")
            if parent_q == module or not parent_q:
                top.setdefault(d.name, d.qualified)
            members.setdefault(parent_q, set()).add(d.name)
        cursor = ts.QueryCursor(_query(self.grammar, "refs"))
        seen: dict[int, int] = {}  # name start byte -> index in self.refs
        rank = {"call": 3, "new": 3, "macro": 3, "inherit": 3, "decorator": 3, "type": 2,
                "attr": 1, "use": 0}
        go = self.go
        for _pattern, captures in cursor.matches(self.tree.root_node):
            kind = next((k for k in captures if k != "qual"), None)
            if kind is None:
                continue
            node = captures[kind][0]
            if node.start_byte in def_names:
                continue
            qual_node = captures.get("qual", [None])[0]
            known = seen.get(node.start_byte)
            if known is not None:
                old = self.refs[known]
                better = rank[kind] > rank.get(old.kind, 0) or (
                    qual_node is not None and rank[kind] == rank.get(old.kind, 0))
                if not better:
                    continue
            name = self.cut(node)
            if kind == "use" and (go is None or not go.value_use(node, name)):
                continue  # Go: a name as a value, not a local's (`Args: NoArgs`)
            scope = self.enclosing(scopes, starts, node.start_byte)
            target = self.resolve(name, qual_node, kind, scope, top, members, imports, module)
            if target is None:
                continue
            first = self.pos(node.start_byte)
            ref = Ref(name, target, _REF_KIND.get(kind, kind), first, self.line(node),
                      scope.index if scope else -1)
            if known is not None:
                self.refs[known] = ref
            else:
                seen[node.start_byte] = len(self.refs)
                self.refs.append(ref)
        if go is not None:  # the declared types: member aliases on the uses of the types
            for start, alias in go.aliases.items():
                known = seen.get(start)
                if known is not None and self.refs[known].kind == "type":
                    self.refs[known].alias = alias

    def enclosing(self, scopes: list[_Def], starts: list[int], at: int) -> _Def | None:
        k = bisect_right(starts, at) - 1
        while k >= 0:
            d = scopes[k]
            if d.node.end_byte > at and d.kind != "impl":
                return d
            k -= 1
        return None

    def receiver(self, scope: _Def | None) -> str:
        """The name a Go method gives its receiver (`s` in `func (s *S) Do()`): `s.x` is
        the type's x."""
        d = scope
        while d is not None and not d.qualifier:
            d = d.parent
        if d is None or d.node.type != "method_declaration":
            return ""
        receiver = d.node.child_by_field_name("receiver")
        params = receiver.named_children if receiver is not None else []
        name = params[0].child_by_field_name("name") if params else None
        return self.cut(name) if name is not None else ""

    @staticmethod
    def owner_type(scope: _Def | None) -> str:
        """The qualified name of the type around a use (what this, self and a bare member
        name mean there)."""
        d = scope
        while d is not None:
            if d.kind in _TYPES:
                return d.qualified
            if d.qualifier:
                return d.qualified.rsplit(".", 1)[0]
            d = d.parent
        return ""

    def resolve(self, name: str, qual: ts.Node | None, kind: str, scope: _Def | None,
                top: dict[str, str], members: dict[str, set[str]], imports: Imports,
                module: str) -> str | None:
        """The qualified name a use means ('' unknown: kept for calls only); None: not
        recorded (a builtin, a local, an attribute of an unknown object)."""
        g = self.grammar
        if qual is None:
            if g == "go" and (name in _GO_BUILTIN_TYPES or name in _GO_BUILTIN_FUNCS):
                return None
            if g == "python" and name not in top and name not in imports.bound and \
                    name in BUILTINS:
                return None
            if kind == "new":
                kind = "type"  # `new Foo()` names the class, not a method of this one
            owner = self.owner_type(scope) if g in ("java", "cpp") and kind == "call" else ""
            if owner and name in members.get(owner, ()):
                return f"{owner}.{name}"
            if name in top:
                return top[name]
            bound = imports.bound.get(name)
            if bound is not None:
                return bound
            if g == "go" and module:
                return f"{module}.{name}"
            if g in ("c", "cpp"):
                return name
            if g == "java":
                if kind == "call" and owner:
                    return f"{owner}.{name}"
                return f"{module}.{name}" if module else name
            return "" if kind in ("call", "macro") else None
        head_text = self.cut(qual)
        if qual.type in ("this", "self") or head_text in _SELF or (
                g == "python" and head_text == "cls") or (head_text == self.receiver(scope)):
            owner = self.owner_type(scope)
            return f"{owner}.{name}" if owner else ("" if kind == "call" else None)
        if self.go is not None:  # a local of a declared type, a field of one, a result
            typed = self.go.member_of(qual)
            if typed:
                return f"{typed}.{name}"
        scoped = qual.parent is not None and qual.parent.type in _SCOPED
        parts = [p for p in re.split(r"::|\.|->", head_text) if p]
        if not parts or not all(p.isidentifier() for p in parts):
            return "" if kind in ("call", "macro") else None
        head, rest = parts[0], parts[1:]
        base: str | None = None
        if g == "rust" and head in ("crate", "super", "self"):
            base = imports.rust_path(head)
        elif head in top:
            base = top[head]
        elif head in imports.bound:
            base = imports.bound[head]
        elif scoped and g in ("cpp", "rust"):
            base = head  # a type or namespace of another file: C++'s and Rust's global names
        elif g == "java" and head[:1].isupper():
            base = f"{module}.{head}" if module else head  # a class of the same package
        if base == STD:
            return None  # Python's standard library: known, never recorded
        if base is None:
            return "" if kind in ("call", "macro", "new") else None
        return ".".join([base, *rest, name])


def tree_symbols(text: str, language: str, rel: str, module: str = "",
                 package: bool = False) -> FileSymbols | None:
    """A source file's symbols and references (those its tree holds, errors or not); None
    when its parse ran out of time (the chunker then cut it as text). Python (a file ast
    refuses): `module` and `package` as ragdb.symbols.python_module says; None also when its
    tree is mostly errors, the file then cut as text (ragdb.python_chunking)."""
    parsed = best_tree(text, language)
    if parsed is None or (language == "python" and parsed[0] > MAX_ERROR_SHARE):
        return None
    _share, tree, grammar, data = parsed  # a tree with errors still holds its definitions
    if grammar not in DEF_QUERIES:
        return FileSymbols()
    f = _File(text, language, rel, tree, data)
    f.grammar = grammar  # a .h file parsed as C++
    if grammar == "python":
        f.symbols.append(Symbol(module.rsplit(".", 1)[-1], module, "module", 0, len(text), 1,
                                text.count("\n") + 1, -1))  # as python_symbols: index 0
        imports = read_imports(f, Imports(module, package=package))
    else:
        imports = read_imports(f, module_of(f, rel))
    module = imports.module
    if grammar == "go":
        f.go = GoTypes(f, imports, module)
    try:
        defs = f.definitions()
        f.place(defs, module)
        f.references(defs, imports, module)
    except RecursionError:
        return None
    f.refs.extend(imports.refs)
    for ref in imports.refs:
        ref.enclosing = -1
    if grammar == "python":  # held by the module's own symbol, as python_symbols has them
        for symbol in f.symbols[1:]:
            if symbol.parent < 0:
                symbol.parent = 0
        for ref in f.refs:
            if ref.enclosing < 0:
                ref.enclosing = 0
    return FileSymbols(f.symbols, f.refs)
