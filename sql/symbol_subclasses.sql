-- The classes that name one of :ids (symbol_names ids, a JSON array) as a base class.
SELECT n.qualified
FROM symbol_refs AS r
JOIN symbol_defs AS e ON e.id = r.enclosing_id
JOIN symbol_names AS n ON n.id = e.qualified_id
WHERE r.target_id IN (SELECT value FROM json_each(:ids))
  AND r.kind = (SELECT id FROM symbol_kinds WHERE name = 'inherit');
