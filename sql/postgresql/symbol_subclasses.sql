-- The classes that name one of :ids as a base class (as sql/symbol_subclasses.sql).
SELECT n.qualified
FROM symbol_refs AS r
JOIN symbol_defs AS e ON e.id = r.enclosing_id
JOIN symbol_names AS n ON n.id = e.qualified_id
WHERE r.target_id IN (SELECT CAST(jsonb_array_elements_text(CAST(:ids AS jsonb)) AS bigint))
  AND r.kind = (SELECT id FROM symbol_kinds WHERE name = 'inherit');
