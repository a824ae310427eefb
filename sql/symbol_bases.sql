-- The base classes (as their file names them) of the definitions :ids (symbol_defs ids, a
-- JSON array): the uses of kind inherit that each holds.
SELECT t.qualified
FROM symbol_defs AS s
JOIN symbol_refs AS r ON r.file_id = s.file_id AND r.enclosing_id = s.id
JOIN symbol_names AS t ON t.id = r.target_id
WHERE s.id IN (SELECT value FROM json_each(:ids))
  AND r.kind = (SELECT id FROM symbol_kinds WHERE name = 'inherit');
