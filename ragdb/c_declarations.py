"""C's declarations as tree-sitter's C and C++ grammars leave them, for ragdb.tree_symbols:
which name a declarator declares and whether it declares a function (`int (*f)(int)` is a
pointer), what is a definition (a declaration at file or namespace level, not `extern`, not a
prototype), and what the parser could not place. Real C is full of macros it never expands:
`int ZEXPORT f(...)`, `local const int FAR x[]`, `ZLIB_INTERNAL x` (which C++ reads as a made-up
`::`), K&R heads (`int f(a, b) int a; { ... }`) and bodies that error recovery leaves as
loose tokens; the rules below still find the function or variable such a declaration defines.
"""

from __future__ import annotations

import tree_sitter as ts

#: Type words a broken declaration may seem to declare (`OF((void))`): never a name.
TYPE_WORDS = frozenset("void char short int long float double signed unsigned".split())
_PREPROC_BLOCKS = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                             "preproc_elifdef"})
_DECLARATOR_NAMES = frozenset({"identifier", "field_identifier", "type_identifier",
                               "qualified_identifier", "destructor_name", "operator_name",
                               "namespace_identifier", "primitive_type"})


def declarator(node: ts.Node) -> tuple[ts.Node | None, bool]:
    """The name node a C declarator declares, and whether it declares a function (the
    declarator right around the name is a function's: `int (*f)(int)` is a pointer)."""
    function = False
    for _ in range(16):
        if node.type in _DECLARATOR_NAMES:
            after = node.next_sibling
            if node.type == "identifier" and after is not None and _macro_word(after) and \
                    after.named_children[-1].type == "identifier":
                return after.named_children[-1], function  # `int ZEXPORT f(...)`: the last
            return node, function
        function = node.type == "function_declarator"
        inner = node.child_by_field_name("declarator")
        if inner is None:
            inner = next((c for c in node.named_children
                          if c.type.endswith("declarator") or c.type in _DECLARATOR_NAMES), None)
        if inner is None:
            return None, function
        node = inner
    return None, function


#: Declarators where a name may follow a macro word (`ZLIB_INTERNAL x[4]`).
_NAME_AFTER_MACRO = frozenset({"init_declarator", "array_declarator", "function_declarator",
                               "pointer_declarator"})


def _macro_word(node: ts.Node) -> bool:
    """An ERROR node of identifiers alone: words the parser could not place, unexpanded
    macros (`local`, `FAR`, `ZEXPORT`) as a C declaration holds them."""
    return node.type == "ERROR" and node.child_count > 0 and all(
        c.type in ("identifier", "primitive_type", "type_identifier") for c in node.children)


def macro_scope(node: ts.Node) -> bool:
    """A `::` the parser made up: C++'s reading of `MACRO name` in C (`ZLIB_INTERNAL x`)."""
    return node.is_missing and node.type == "::" and node.parent is not None and \
        node.parent.type == "qualified_identifier"


def only_macro_words(node: ts.Node) -> bool:
    """Whether every error in a declaration is an unexpanded macro word where C writes
    them, before the name (`local const int FAR x[] = {...}`, `int ZLIB_INTERNAL x`):
    nothing missing, nothing else skipped, so it is still a definition of x."""
    stack = [node]
    while stack:
        parent = stack.pop()
        value = parent.child_by_field_name("value") if parent.type == "init_declarator" \
            else None  # what an initializer holds does not change what is defined
        for child in parent.children:
            if child.type == "ERROR":
                before = child.prev_sibling
                if not _macro_word(child) or not (parent == node or (
                        before is not None and before.type == "identifier" and
                        parent.type in _NAME_AFTER_MACRO)):
                    return False
            elif child.is_missing:
                if not macro_scope(child):
                    return False
            elif child.has_error and child != value:
                stack.append(child)
    return True


def call_shaped(node: ts.Node) -> bool:
    """A declarator written as a call: `f(a, b)` (C++'s object built with arguments)."""
    return node.type == "init_declarator" and any(
        c.type == "argument_list" for c in node.children)


def _call_name(head: ts.Node) -> ts.Node | None:
    """The name a function head declares, as error recovery left it: the name before the
    last parameter or argument list of identifiers in it (`ZEXPORT inflate(strm, flush)`)."""
    if head.type == "function_declarator":
        return declarator(head)[0]
    name = None
    stack = [head]
    for _ in range(256):
        if not stack:
            break
        node = stack.pop()
        for child in node.children:
            if child.type in ("parameter_list", "argument_list"):
                before = child.prev_sibling
                if before is not None and before.type == "qualified_identifier":
                    before = before.child_by_field_name("name")  # `MACRO f(...)` in C++
                elif before is not None and _macro_word(before):
                    before = before.named_children[-1]
                if before is not None and before.type == "identifier" and all(
                        c.type in ("identifier", "parameter_declaration", "comment")
                        for c in child.named_children):
                    if name is None or before.start_byte > name.start_byte:
                        name = before
            elif child.type in ("ERROR", "declaration") or child.type.endswith("declarator"):
                stack.append(child)
    return name


def _block_end(brace: ts.Node, root: ts.Node, data: bytes) -> ts.Node:
    """The `}` that closes a loose `{` (a function's body error recovery left as tokens):
    the one its siblings' braces match, or the first `}` token that starts a line after it
    (C closes a function's body so), whichever comes first. Where `#ifdef`s open a brace in
    one branch and close it in the other, or computed gotos (`&&label`) break the parse, the
    closing `}` lies inside a node recovery made of what follows, not among the siblings:
    counting siblings alone ran to the file's end and took every later function in."""
    depth, last = 0, brace
    node: ts.Node | None = brace
    while node is not None:
        depth += {"{": 1, "}": -1}.get(node.type, 0)
        last = node
        if depth == 0:
            break
        node = node.next_sibling
    at = data.find(b"\n}", brace.end_byte, last.start_byte)
    while at >= 0:  # a `}` at a line's start before it: the body's end, if it is a token
        close = root.descendant_for_byte_range(at + 1, at + 2)
        if close is not None and close.type == "}":
            return close
        at = data.find(b"\n}", at + 2, last.start_byte)  # in a comment, a string, a macro
    return last


def old_style_functions(root: ts.Node, data: bytes, taken: set[int]
                        ) -> list[tuple[ts.Node, ts.Node, ts.Node]]:
    """C functions the parser did not see whole: K&R definitions (`int f(a, b) int a;
    char *b; { ... }`), and definitions whose macros (`int ZEXPORT f(...)`) broke the
    parse, read from what error recovery leaves at file level: a block not inside any
    function, after the declarations of its parameters, after a head whose last call
    shape (`f(a, b)`) names the function: (its name, its body, its head). `taken` gets the
    heads and the parameter declarations (not global variables)."""
    found: list[tuple[ts.Node, ts.Node, ts.Node]] = []
    stack = [(root, False)]
    while stack:
        parent, in_error = stack.pop()
        for child in parent.children:
            if child.type == "function_definition":
                continue
            if not child.is_named:
                if child.type != "{" or parent.type != "ERROR":
                    continue
                body = _block_end(child, root, data)  # loose tokens
            else:
                if in_error or child.type in _PREPROC_BLOCKS or child.type == "ERROR":
                    # what the parser could not read holds more functions, blocks too
                    stack.append((child, in_error or child.type == "ERROR"))
                if child.type not in ("compound_statement", "ERROR") or (
                        child.type == "ERROR" and child.children[0].type != "{"):
                    continue
                body = child
            params: list[ts.Node] = []
            head = child.prev_named_sibling
            name: ts.Node | None = None
            for _ in range(64):
                if head is None:
                    break
                if head.type != "comment":
                    name = _call_name(head)
                    if name is not None or head.type != "declaration":
                        break
                    params.append(head)
                head = head.prev_named_sibling
            if name is None or head is None or _indented(head, data) or not (
                    params or head.has_error or body.type != "compound_statement"):
                continue  # a head's line is not indented, as C writes a function's
            taken.update(n.start_byte for n in [head, *params])
            found.append((name, body, head))
    return found


def _indented(node: ts.Node, data: bytes) -> bool:
    """Whether the line a node starts on starts with blanks (code inside a body)."""
    start = data.rfind(b"\n", 0, node.start_byte) + 1
    return data[start:start + 1] in (b" ", b"\t")


def in_function(node: ts.Node) -> bool:
    """Whether a C or C++ node lies in a function's body."""
    parent = node.parent
    for _ in range(64):
        if parent is None:
            return False
        if parent.type == "compound_statement":
            return True
        if parent.type in ("translation_unit", "field_declaration_list",
                           "declaration_list"):
            return False
        parent = parent.parent
    return False


def global_declaration(node: ts.Node, data: bytes) -> bool:
    """A C declaration at file or namespace level, not `extern` (declared, not defined)."""
    parent = node.parent
    broken = False
    while parent is not None and (parent.type in _PREPROC_BLOCKS or parent.type == "ERROR"):
        broken = broken or parent.type == "ERROR"
        parent = parent.parent  # `#ifdef DEBUG int verbose; #endif` at file level
    if broken and _indented(node, data):
        return False  # in what the parser could not read, only an unindented line's
    if parent is None or parent.type not in ("translation_unit", "declaration_list",
                                             "linkage_specification"):
        return False
    return not any(c.type == "storage_class_specifier" and
                   data[c.start_byte:c.end_byte] == b"extern" for c in node.children)
