"""Source code in languages other than Python, cut along its tree-sitter syntax tree.

The same contract as ragdb.python_chunking, with the same cutting rules (ragdb.chunk_packing):
a chunk is a range [first, last) of the file's str text, whole definitions are grouped up to
the cap, a definition too large is split by its inner statements and each piece names the
signatures around it in `context`. Tree-sitter reports UTF-8
byte offsets; they are turned into str offsets here so a chunk can always be cited by offset.
Configuration files and scripts have no useful tree for retrieval and are cut as text.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import replace

import tree_sitter as ts

from ragdb.chunk_packing import (
    _CHAR, _LINE, _TOP, _WORD, Chunk, _chunk_units, _min_len, _pack, _Seps, _trim, merge_pieces,
    segment_units,
)
from ragdb.chunk_packing import pack_range as pack_text_range
from ragdb.definition_names import definition_names
from ragdb.syntax_trees import GRAMMARS, parse


def _with_names(chunks: list[Chunk], names: list[tuple[int, str]],
                pos: Callable[[int], int]) -> list[Chunk]:
    """Each chunk with the names defined inside it, once each, in order."""
    if not names:
        return chunks
    at = [pos(b) for b, _ in names]
    out = []
    for chunk in chunks:
        lo, hi = bisect_left(at, chunk.first), bisect_left(at, chunk.last)
        inside = tuple(dict.fromkeys(name for _, name in names[lo:hi]))
        out.append(replace(chunk, names=inside) if inside else chunk)
    return out


# --- node types -------------------------------------------------------------------------------

_FUNCTIONS = frozenset({
    "function_declaration", "generator_function_declaration", "method_definition",
    "function_definition", "method_declaration", "function_item", "constructor_declaration",
    "compact_constructor_declaration", "template_function",
    # Ruby, PHP, C#, Kotlin, Swift, Scala, Lua
    "method", "singleton_method", "local_function_statement", "init_declaration",
    "protocol_function_declaration", "secondary_constructor",
})
# Anonymous functions are definitions only when bound to a name (`const f = () => {...}`);
# a lambda passed as an argument has no signature worth repeating.
_LAMBDAS = frozenset({
    "arrow_function", "function_expression", "function", "generator_function", "func_literal",
    "closure_expression", "lambda_expression",
})
_LAMBDA_HOLDERS = frozenset({
    "variable_declarator", "assignment_expression", "pair", "public_field_definition",
    "field_definition", "init_declarator", "let_declaration", "static_item", "const_item",
})
_CLASSES = frozenset({
    "class_declaration", "class", "abstract_class_declaration", "interface_declaration",
    "enum_declaration", "record_declaration", "annotation_type_declaration",
    "class_specifier", "struct_specifier", "union_specifier", "enum_specifier",
    "struct_item", "enum_item", "union_item", "trait_item", "impl_item", "type_spec",
    "object_declaration",
    # Ruby, PHP, C#, Kotlin, Swift, Scala
    "trait_declaration", "struct_declaration", "companion_object", "protocol_declaration",
    "class_definition", "object_definition", "trait_definition", "enum_definition",
    # Dart, Zig
    "mixin_declaration", "extension_declaration",
})
# Scopes that name what they hold but are not one thing: in context, but no kind of their own.
_CONTAINERS = frozenset({
    "namespace_definition", "linkage_specification", "mod_item", "internal_module", "module",
    "foreign_mod_item", "namespace_declaration", "singleton_class",
})
# Nodes that only wrap a definition: the signature starts at them, and a unit holding one
# takes the definition's kind.
_WRAPPERS = frozenset({
    "template_declaration", "export_statement", "lexical_declaration", "variable_declaration",
    "variable_declarator", "type_declaration", "declaration", "type_definition",
    "expression_statement", "ambient_declaration", "field_declaration", "init_declarator",
    "let_declaration", "static_item", "const_item", "public_field_definition",
    "field_definition", "assignment_expression", "decorated_definition",
})
_SINGLE_WRAPPERS = frozenset({"type_declaration", "lexical_declaration", "variable_declaration"})
# Nodes that belong to what follows them: comments, attributes, template parameters.
_COMMENTS = frozenset({"comment", "line_comment", "block_comment", "multiline_comment"})
_PREFIXES = _COMMENTS | {
    "attribute_item", "inner_attribute_item", "decorator", "attribute_declaration",
    "template_parameter_list", "preproc_call", "attribute_list", "annotation",
}

_NONWS = re.compile(r"\S")
_BLANK_LINE = re.compile(r"^[ \t\f\v\r]*\n", re.M)
_SEPS: _Seps = (
    (re.compile(r"\n(?:[ \t\f\v\r]*\n)+"), 4),
    (re.compile(r"\n"), _LINE),
    (re.compile(r"\s+"), _WORD),
)
_OVERLAP_BELOW = 3  # text cut at a blank line needs no overlap; mid-block it does


def _def_kind(node: ts.Node) -> str | None:
    """'function', 'class', '' for a container, None for a node that defines nothing."""
    t = node.type
    if t in _FUNCTIONS:
        return "function"
    if t in _CLASSES:
        return "class"
    if t in _CONTAINERS:
        return ""
    if t in _LAMBDAS:
        parent = node.parent
        return "function" if parent is not None and parent.type in _LAMBDA_HOLDERS else None
    return None


def _body(node: ts.Node) -> ts.Node | None:
    """The braces holding a definition's members or statements."""
    body = node.child_by_field_name("body")
    if body is not None:
        return body if body.child_count else None
    for _ in range(3):
        if any(c.type == "{" for c in node.children):
            return node
        last = None
        for c in reversed(node.children):
            if c.is_named and c.type not in _COMMENTS:
                last = c
                break
        if last is None:
            return None
        node = last
    return None


def _unit_kind(node: ts.Node, depth: int = 0) -> str | None:
    """'function' or 'class' when the node is, or only wraps, one whole definition.

    _def_kind's tests inlined, with the node's type read once: this runs on every unit."""
    t = node.type
    if t in _FUNCTIONS:
        return "function"
    if t in _CLASSES:  # not `struct foo *p;`, `type X int`
        return "class" if _body(node) is not None else None
    if t in _CONTAINERS:
        return None
    if t in _LAMBDAS:
        parent = node.parent
        return "function" if parent is not None and parent.type in _LAMBDA_HOLDERS else None
    if depth < 3 and t in _WRAPPERS:
        for child in node.named_children:
            if child.type not in _PREFIXES:
                found = _unit_kind(child, depth + 1)
                if found:
                    return found
    return None


_SIG_OPEN = re.compile(r"([(\[{]) ")
_SIG_CLOSE = re.compile(r",? ([)\]}])")
_LINE_COMMENT = re.compile(r"//.*$|/\*.*?\*/|\s#\s.*$")
# A Ruby, shell or Lua comment line between a definition's name and its body (`# ...`, not a
# C preprocessor line, which writes no space after the hash).
_HASH_LINE = re.compile(r"\s*(?:#(?:\s|$)|--)")


def _drop_comments(line: str) -> str:
    if _HASH_LINE.match(line):
        return ""
    if '"' not in line and "'" not in line:
        return _LINE_COMMENT.sub("", line).rstrip()
    return line.rstrip()


# --- the chunker ------------------------------------------------------------------------------

# (first, last, kind, context) of a chunk before trimming
_Piece = tuple[int, int, str, str]


def chunk_code(text: str, language: str, cap: int) -> list[Chunk] | None:
    """Chunks of a source file along its syntax tree, in order of `first`, none over `cap`;
    None when it does not parse well enough (the caller then cuts it as text)."""
    if cap < 1:
        raise ValueError(f"cap must be positive, not {cap}")
    if language not in GRAMMARS:
        raise ValueError(f"no syntax chunker for {language!r}")
    if not _NONWS.search(text):
        return []
    parsed = parse(text, language)
    if parsed is None:
        return None
    tree, grammar, data = parsed
    names = definition_names(tree, grammar, data)
    if len(text) <= cap:
        trimmed = _trim(text, 0, len(text))
        if trimmed is None:
            return []
        # One chunk holds every name: no offsets to map.
        return [Chunk(trimmed[0], trimmed[1], "module", "",
                      tuple(dict.fromkeys(name for _, name in names)))]
    cutter = _Cutter(text, data, cap)
    try:
        pieces = cutter.pieces(tree.root_node)
    except RecursionError:  # a pathologically deep expression
        return None
    if not pieces:  # comments only
        return chunk_as_text(text, cap, "module")
    return _with_names(merge_pieces(text, pieces, cap), names, cutter.pos)


def chunk_as_text(text: str, cap: int, kind: str = "text") -> list[Chunk]:
    """Chunks of code or configuration without a usable tree: cut at blank lines, then lines
    (as the Python chunker does with a file that does not parse)."""
    if cap < 1:
        raise ValueError(f"cap must be positive, not {cap}")
    if not _NONWS.search(text):
        return []
    return _chunk_units(text, [(0, len(text), _TOP, "", kind)], cap, _SEPS, _OVERLAP_BELOW)


def chunk_source(text: str, language: str, cap: int) -> tuple[list[Chunk], bool]:
    """Chunks of a file in any language language_for names, and whether its parse failed
    so it was cut as text instead (for the index run's counts)."""
    if language in GRAMMARS:
        chunks = chunk_code(text, language, cap)
        if chunks is not None:
            return chunks, False
        return chunk_as_text(text, cap), True
    return chunk_as_text(text, cap), False


class _Cutter:
    """One file's text, its byte-to-str offset map and the pieces found so far."""

    def __init__(self, text: str, data: bytes, cap: int) -> None:
        self.text = text
        self.cap = cap
        self.min_len = _min_len(cap)
        self.out: list[_Piece] = []
        #: The str offset of a byte offset: the same number in ASCII text.
        self.pos: Callable[[int], int] = int
        if len(data) != len(text):
            # char_at[b] is the str offset of the character holding byte b.
            import numpy as np  # here: a run that chunks no such file never loads numpy

            raw = np.frombuffer(data, dtype=np.uint8)
            starts = (raw & 0xC0) != 0x80
            char_at = np.empty(len(data) + 1, dtype=np.int64)
            char_at[:-1] = np.cumsum(starts) - 1
            char_at[-1] = len(text)
            self.pos = char_at.tolist().__getitem__

    def line_start(self, p: int) -> int:
        return self.text.rfind("\n", 0, p) + 1

    def pieces(self, root: ts.Node) -> list[_Piece]:
        self.block(root.children, 0, len(self.text), (), True)
        return self.out

    def signature(self, node: ts.Node, body: ts.Node) -> str:
        """The header of a definition as written, one line, from the start of what wraps it
        (`template <...>`, `export default`, `const f =`) to its opening brace."""
        start = node
        while True:
            parent = start.parent
            if (parent is None or parent.type not in _WRAPPERS
                    or start.next_named_sibling is not None
                    or start.start_byte - parent.start_byte > 200
                    or (parent.type in _SINGLE_WRAPPERS and parent.named_child_count > 1)):
                break
            start = parent
        text = self.text
        s, e = self.pos(start.start_byte), self.pos(body.start_byte)
        indent = text[self.line_start(s):s]
        if indent.strip():
            indent = ""
        lines = [_drop_comments(ln) for ln in text[s:e].split("\n")]
        parts = [ln.strip() for ln in lines if ln.strip()]
        signature = " ".join(parts)
        if len(parts) > 1:
            signature = _SIG_CLOSE.sub(r"\1", _SIG_OPEN.sub(r"\1", signature))
        signature = indent + signature
        return signature if len(signature) <= 200 else signature[:197] + "..."

    def block(self, nodes: Sequence[ts.Node], s: int, e: int, context: tuple[str, ...],
              top: bool, lead: int = -1, trail: int = -1) -> None:
        """Pieces of text[s:e], which holds `nodes` (siblings in the tree): units that fit are
        grouped, one too large is split by its children, or as text when it has none.

        text[lead:s] and text[e:trail] are small runs of the enclosing block next to this one:
        packed with the pieces here rather than left as chunks too small to find.
        """
        text = self.text
        pos = self.pos
        # Units: a named node with the comments, attributes and punctuation glued to it.
        groups: list[list[ts.Node]] = []
        mains: list[ts.Node | None] = []  # the last named node of each unit
        heads: list[ts.Node | None] = []  # the first
        pending: list[ts.Node] = []
        for node in nodes:
            if not node.is_named:
                if groups and not pending:
                    groups[-1].append(node)
                else:
                    pending.append(node)
                continue
            t = node.type
            if t in _PREFIXES:
                if (t in _COMMENTS and groups and not pending and text.find(
                        "\n", pos(groups[-1][-1].end_byte), pos(node.start_byte)) < 0):
                    groups[-1].append(node)  # a comment at the end of the line
                else:
                    pending.append(node)
                continue
            if groups and not pending and mains[-1] is not None and text.find(
                    "\n", pos(groups[-1][0].start_byte), pos(node.start_byte)) < 0:
                # On the line the unit started on: `if (x) {`, `const f = () => {`. The last
                # node is what is split when the unit is too large, the rest is its header.
                groups[-1].append(node)
                mains[-1] = node
                continue
            pending.append(node)
            groups.append(pending)
            heads.append(node)
            mains.append(node)
            pending = []
        if pending:
            groups.append(pending)
            heads.append(None)
            mains.append(None)
        if not groups:
            self.pack_range(s, e, lead, trail, context)
            return

        # Text between two units goes with the next one, from the start of its first line.
        firsts = [pos(g[0].start_byte) for g in groups]
        ends = [pos(g[-1].end_byte) for g in groups]
        rfind = text.rfind
        first_lines = [rfind("\n", 0, f) + 1 for f in firsts]  # line_start of each first
        bounds = [s]
        for k in range(1, len(groups)):
            bounds.append(min(max(first_lines[k], ends[k - 1], bounds[-1]), e))
        bounds.append(e)
        kinds = [None if m is None or h is not m else _unit_kind(m)
                 for h, m in zip(heads, mains)]

        u_s: list[int] = []
        u_e: list[int] = []
        u_k: list[int] = []
        members: list[ts.Node | None] = []
        member_kind: list[str | None] = []
        for k, main in enumerate(mains):
            trimmed = _trim(text, bounds[k], bounds[k + 1])
            if trimmed is None:
                continue
            b = bounds[k]
            if kinds[k]:
                strength = 3
            elif _BLANK_LINE.search(text, b, max(b, first_lines[k])):
                strength = 2
            elif b == 0 or text[b - 1] == "\n":
                strength = 1
            else:
                strength = _CHAR
            head = heads[k]
            if trimmed[1] - trimmed[0] > self.cap and head is not None:
                own_at = self.pos(head.start_byte)
                own = _trim(text, max(trimmed[0], self.line_start(own_at)), trimmed[1])
                if own is not None and own[0] > trimmed[0] and own[1] - own[0] <= self.cap:
                    # Comments before a unit that fits are no reason to split the unit.
                    before = _trim(text, trimmed[0], own[0])
                    for part, part_strength, part_main in (
                            (before, strength, None), (own, 1 if before else strength, main)):
                        if part is not None:
                            u_s.append(part[0])
                            u_e.append(part[1])
                            u_k.append(part_strength)
                            members.append(part_main)
                            member_kind.append(kinds[k] if part_main is not None else None)
                    continue
            u_s.append(trimmed[0])
            u_e.append(trimmed[1])
            u_k.append(strength)
            members.append(main)
            member_kind.append(kinds[k])
        around = _trim(text, lead, s) if 0 <= lead < s else None
        if around is not None:
            u_s.insert(0, around[0])
            u_e.insert(0, around[1])
            u_k.insert(0, _TOP)
            members.insert(0, None)
            member_kind.insert(0, None)
        around = _trim(text, e, trail) if trail > e else None
        if around is not None:
            u_s.append(around[0])
            u_e.append(around[1])
            u_k.append(2)
            members.append(None)
            member_kind.append(None)

        segments, split, absorbed, leads, trails = segment_units(u_s, u_e, self.cap,
                                                                 self.min_len)

        ctx = "\n".join(context)
        outside = "module" if top else "statements"
        for g, segment in enumerate(segments):
            if absorbed[g]:
                continue
            if not split[g]:
                a_s = [u_s[k] for k in segment]
                a_e = [u_e[k] for k in segment]
                a_k = [u_k[k] for k in segment]
                for i, j in _pack(a_s, a_e, a_k, 0, len(segment), self.cap, self.min_len):
                    kind = member_kind[segment[i]] if j - i == 1 else None
                    self.out.append((a_s[i], a_e[j - 1], kind or outside, ctx))
                continue
            k = segment[0]
            main = members[k]
            lead_k, trail_k = leads.get(g, -1), trails.get(g, -1)
            if main is None or main.child_count == 0:
                self.pack_range(u_s[k], u_e[k], lead_k, trail_k, context)
                continue
            def_kind = _def_kind(main)
            body = _body(main) if def_kind is not None else None
            if body is None:
                self.block(main.children, u_s[k], u_e[k], context, top, lead_k, trail_k)
                continue
            first_out = len(self.out)
            inner = context + (self.signature(main, body),)
            self.block(body.children, u_s[k], u_e[k], inner, top and not def_kind, lead_k,
                       trail_k)
            if not def_kind:
                continue
            # The piece with the definition's first line says what it is; pieces holding only
            # the neighbouring units packed along live outside it.
            def_at = self.pos(main.start_byte)
            for n in range(first_out, len(self.out)):
                a, b, _, c = self.out[n]
                if b <= def_at or a >= u_e[k]:
                    self.out[n] = (a, b, outside, ctx)
                elif a <= def_at:
                    self.out[n] = (a, b, def_kind, c)

    def pack_range(self, s: int, e: int, lead: int, trail: int,
                   context: tuple[str, ...]) -> None:
        """A unit with no children to split by (a long string, comment or macro) cut as text,
        with the small runs around it (see block)."""
        ctx = "\n".join(context)
        for a, b in pack_text_range(self.text, s, e, lead, trail, self.cap, _SEPS):
            self.out.append((a, b, "statements", ctx))
