-- The module-level imports of the names :ids (symbol_names ids, a JSON array) that give them
-- another qualified name: (alias, whether any use names the alias, target, the use's kind). A
-- package that re-exports a class gives it its own name; an alias no use names leads nowhere.
-- A use of another kind (a type) carries a member alias: `pkg.Cls.attr` is declared a `pkg.T`,
-- so its members are T's (ragdb.python_symbols).
SELECT a.qualified,
       EXISTS (SELECT 1 FROM symbol_refs AS u WHERE u.target_id = r.alias_id) AS used,
       t.qualified, k.name
FROM symbol_refs AS r
JOIN symbol_names AS a ON a.id = r.alias_id
JOIN symbol_names AS t ON t.id = r.target_id
JOIN symbol_kinds AS k ON k.id = r.kind
WHERE r.target_id IN (SELECT value FROM json_each(:ids)) AND r.alias_id IS NOT NULL;
