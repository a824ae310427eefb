"""The names each grammar defines (functions, methods, classes, types, constants, macros),
read from a tree-sitter tree by one query per grammar. Indexed in the context column, they rank
the definition of an identifier above its uses."""

from __future__ import annotations

from functools import lru_cache

import tree_sitter as ts

from ragdb.syntax_trees import grammar_language


# What each grammar calls the name of everything it defines: functions, methods, classes,
# types, constants, macros. Indexed in the context column (ragdb.tokenize.analyse_names), they
# rank the definition of an identifier a question names above its uses, as for Python
# (ragdb.tokenize.defined_names). Variables count where they are a module's own names (top
# level, exported, or holding a function); a function's local variables are not definitions.
_C_DEFINITIONS = """
(function_definition declarator: (function_declarator declarator: (_) @name))
(function_definition declarator: (pointer_declarator
    declarator: (function_declarator declarator: (_) @name)))
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator
    declarator: (function_declarator declarator: (_) @name))))
(struct_specifier name: (_) @name body: (_))
(union_specifier name: (_) @name body: (_))
(enum_specifier name: (_) @name body: (_))
(type_definition declarator: (type_identifier) @name)
(type_definition declarator: (pointer_declarator declarator: (type_identifier) @name))
(type_definition declarator: (function_declarator declarator: (parenthesized_declarator
    (pointer_declarator declarator: (type_identifier) @name))))
(preproc_def name: (_) @name)
(preproc_function_def name: (_) @name)
"""
_JS_DEFINITIONS = """
(function_declaration name: (_) @name)
(generator_function_declaration name: (_) @name)
(class_declaration name: (_) @name)
(method_definition name: (_) @name)
(variable_declarator name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function) (class)])
(program (lexical_declaration (variable_declarator name: (identifier) @name)))
(program (variable_declaration (variable_declarator name: (identifier) @name)))
(program (export_statement declaration: [
    (lexical_declaration (variable_declarator name: (identifier) @name))
    (variable_declaration (variable_declarator name: (identifier) @name))]))
(pair key: [(property_identifier) (string)] @name
    value: [(arrow_function) (function_expression) (generator_function)])
(assignment_expression left: (member_expression property: (property_identifier) @name)
    right: [(arrow_function) (function_expression) (generator_function) (class)])
"""
_TS_DEFINITIONS = _JS_DEFINITIONS + """
(abstract_class_declaration name: (_) @name)
(interface_declaration name: (_) @name)
(type_alias_declaration name: (_) @name)
(enum_declaration name: (_) @name)
(function_signature name: (_) @name)
(abstract_method_signature name: (_) @name)
(method_signature name: (_) @name)
(internal_module name: (identifier) @name)
(public_field_definition name: (property_identifier) @name
    value: [(arrow_function) (function_expression)])
(internal_module body: (statement_block (export_statement
    declaration: (lexical_declaration (variable_declarator name: (identifier) @name)))))
(ambient_declaration (lexical_declaration (variable_declarator name: (identifier) @name)))
"""
NAME_QUERIES: dict[str, str] = {
    "c": _C_DEFINITIONS,
    "cpp": _C_DEFINITIONS + """
(class_specifier name: (_) @name body: (_))
(alias_declaration name: (_) @name)
(namespace_definition name: (_) @name)
""",
    "javascript": _JS_DEFINITIONS + """
(field_definition property: (property_identifier) @name
    value: [(arrow_function) (function_expression)])
""",
    "typescript": _TS_DEFINITIONS,
    "go": """
(function_declaration name: (_) @name)
(method_declaration name: (_) @name)
(type_spec name: (_) @name)
(type_alias name: (_) @name)
(source_file (const_declaration (const_spec (identifier) @name)))
(source_file (var_declaration (var_spec (identifier) @name)))
(source_file (var_declaration (var_spec_list (var_spec (identifier) @name))))
""",
    "rust": """
(function_item name: (_) @name)
(function_signature_item name: (_) @name)
(struct_item name: (_) @name)
(enum_item name: (_) @name)
(union_item name: (_) @name)
(trait_item name: (_) @name)
(type_item name: (_) @name)
(mod_item name: (_) @name body: (_))
(macro_definition name: (_) @name)
(const_item name: (_) @name)
(static_item name: (_) @name)
(impl_item type: (type_identifier) @name)
(impl_item type: (generic_type type: (type_identifier) @name))
(impl_item type: (scoped_type_identifier name: (type_identifier) @name))
""",
    "java": """
(class_declaration name: (_) @name)
(interface_declaration name: (_) @name)
(enum_declaration name: (_) @name)
(record_declaration name: (_) @name)
(annotation_type_declaration name: (_) @name)
(method_declaration name: (_) @name)
(constructor_declaration name: (_) @name)
""",
    "bash": "(function_definition name: (_) @name)",
    "ruby": """
(method name: (_) @name)
(singleton_method name: (_) @name)
(class name: (constant) @name)
(class name: (scope_resolution name: (constant) @name))
(module name: (constant) @name)
(module name: (scope_resolution name: (constant) @name))
(assignment left: (constant) @name)
(alias name: (_) @name)
""",
    "php": """
(function_definition name: (name) @name)
(method_declaration name: (name) @name)
(class_declaration name: (name) @name)
(interface_declaration name: (name) @name)
(trait_declaration name: (name) @name)
(enum_declaration name: (name) @name)
(const_element (name) @name)
""",
    "c_sharp": """
(class_declaration name: (identifier) @name)
(interface_declaration name: (identifier) @name)
(struct_declaration name: (identifier) @name)
(enum_declaration name: (identifier) @name)
(record_declaration name: (identifier) @name)
(delegate_declaration name: (identifier) @name)
(method_declaration name: (identifier) @name)
(constructor_declaration name: (identifier) @name)
(local_function_statement name: (identifier) @name)
(property_declaration name: (identifier) @name)
(field_declaration (variable_declaration (variable_declarator name: (identifier) @name)))
""",
    "kotlin": """
(class_declaration name: (_) @name)
(object_declaration name: (_) @name)
(function_declaration name: (_) @name)
(type_alias type: (_) @name)
(source_file (property_declaration (variable_declaration (identifier) @name)))
(class_body (property_declaration (variable_declaration (identifier) @name)))
""",
    "swift": """
(class_declaration name: (type_identifier) @name)
(class_declaration name: (user_type (type_identifier) @name))
(protocol_declaration name: (_) @name)
(function_declaration name: (simple_identifier) @name)
(protocol_function_declaration name: (simple_identifier) @name)
(typealias_declaration name: (type_identifier) @name)
(source_file (property_declaration name: (pattern bound_identifier: (_) @name)))
(class_body (property_declaration name: (pattern bound_identifier: (_) @name)))
""",
    "scala": """
(class_definition name: (_) @name)
(object_definition name: (_) @name)
(trait_definition name: (_) @name)
(enum_definition name: (_) @name)
(function_definition name: (_) @name)
(function_declaration name: (_) @name)
(type_definition name: (_) @name)
(given_definition name: (_) @name)
(compilation_unit (val_definition pattern: (identifier) @name))
(template_body (val_definition pattern: (identifier) @name))
""",
    "lua": """
(function_declaration name: (identifier) @name)
(function_declaration name: (dot_index_expression field: (identifier) @name))
(function_declaration name: (method_index_expression method: (identifier) @name))
(assignment_statement (variable_list name: (dot_index_expression field: (identifier) @name))
    (expression_list value: (function_definition)))
(chunk (variable_declaration (assignment_statement (variable_list name: (identifier) @name))))
""",
    # Elixir defines by calling macros: `def name(...)`, `defmodule Name do`.
    "elixir": """
(call target: (identifier) @keyword
    (#any-of? @keyword "def" "defp" "defmacro" "defmacrop" "defguard" "defguardp"
        "defdelegate" "defn" "defnp")
    (arguments . [(call target: (identifier) @name) (identifier) @name
                  (binary_operator left: (call target: (identifier) @name))]))
(call target: (identifier) @keyword
    (#any-of? @keyword "defmodule" "defprotocol" "defimpl" "defexception")
    (arguments . (alias) @name))
""",
    "haskell": """
(function name: (variable) @name)
(bind name: (variable) @name)
(signature name: (variable) @name)
(data_type name: (name) @name)
(newtype name: (name) @name)
(type_synonym name: (name) @name)
(class name: (name) @name)
""",
    "ocaml": """
(compilation_unit (value_definition (let_binding pattern: (value_name) @name)))
(structure (value_definition (let_binding pattern: (value_name) @name)))
(type_binding name: (type_constructor) @name)
(module_binding (module_name) @name)
(module_type_definition (module_type_name) @name)
(class_binding (class_name) @name)
(exception_definition (constructor_declaration (constructor_name) @name))
(method_definition (method_name) @name)
(external (value_name) @name)
(value_specification (value_name) @name)
""",
    "zig": """
(function_declaration name: (identifier) @name)
(source_file (variable_declaration (identifier) @name))
(struct_declaration (variable_declaration (identifier) @name))
""",
    "dart": """
(class_definition name: (identifier) @name)
(mixin_declaration (identifier) @name)
(enum_declaration name: (identifier) @name)
(extension_declaration name: (identifier) @name)
(type_alias (type_identifier) @name)
(function_signature name: (identifier) @name)
(getter_signature name: (identifier) @name)
(setter_signature name: (identifier) @name)
(constructor_signature name: (identifier) @name)
(program (static_final_declaration_list (static_final_declaration (identifier) @name)))
""",
    # Only for a file Python's ast refuses (ragdb.python_chunking); its chunks then take their
    # names from tokenize.defined_names, as a file ast cut does.
    "python": """
(function_definition name: (identifier) @name)
(class_definition name: (identifier) @name)
""",
}
NAME_QUERIES["tsx"] = NAME_QUERIES["typescript"]


_NAME_DEPTH = 6  # namespace > body > template > class > body > method
# Grammars whose scopes put a node between each definition and the next: Ruby's body_statement
# (module > body > class > body > method is depth 6 for a method two modules in).
_NAME_DEPTHS = {"ruby": 10}


@lru_cache(maxsize=None)
def name_query(grammar: str) -> ts.Query:
    return ts.Query(grammar_language(grammar), NAME_QUERIES[grammar])


def definition_names(tree: ts.Tree, grammar: str, data: bytes) -> list[tuple[int, str]]:
    """(byte offset, name) of each definition, in order; a qualified C++ name (`Cls::method`)
    by its last part, as a call writes it. Names are cut from `data`, never read as node.text:
    a tree parsed through a callback (parse_in_time) reads its text through the callback
    again, which returns nothing once the parse's budget is spent, and node.text then waits
    forever."""
    cursor = ts.QueryCursor(name_query(grammar))
    # Definitions deeper than this (local types, lambdas in bodies) are not worth the walk:
    # on vLLM's C, C++ and CUDA depth 6 finds 83% of the names in a fifth of the time
    # (0.033 s against 0.153 s of CPU for 254 files, whose parse takes 0.52 s).
    cursor.set_max_start_depth(_NAME_DEPTHS.get(grammar, _NAME_DEPTH))
    found = cursor.captures(tree.root_node).get("name", [])
    out = []
    for node in found:
        name = data[node.start_byte:node.end_byte].decode("utf-8", "replace")
        name = name.rsplit("::", 1)[-1].strip("'\" ")
        name = name.rstrip("?!=")  # Ruby's `empty?`, `save!`, `name=` are `empty`, ...
        name = name.rsplit(".", 1)[-1]  # Elixir's `MyApp.Accounts` is `Accounts`
        if name.isidentifier() and name != "_":  # Go's `var _ = x`: a check, no name
            out.append((node.start_byte, name))
    out.sort()
    return out
