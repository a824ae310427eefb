-- What the qualified name :alias_id (a symbol_names id) is imported from, where a module-level
-- import binds it.
SELECT DISTINCT t.qualified
FROM symbol_refs AS r
JOIN symbol_names AS t ON t.id = r.target_id
WHERE r.alias_id = :alias_id;
