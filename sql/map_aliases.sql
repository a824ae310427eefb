-- Every module-level import that gives a name another qualified name (alias, target).
SELECT a.qualified, t.qualified
FROM symbol_refs AS r
JOIN symbol_names AS a ON a.id = r.alias_id
JOIN symbol_names AS t ON t.id = r.target_id
WHERE r.alias_id IS NOT NULL;
