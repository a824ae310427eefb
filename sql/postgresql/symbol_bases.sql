-- The base classes of the definitions :ids (as sql/symbol_bases.sql).
SELECT t.qualified
FROM symbol_defs AS s
JOIN symbol_refs AS r ON r.file_id = s.file_id AND r.enclosing_id = s.id
JOIN symbol_names AS t ON t.id = r.target_id
WHERE s.id IN (SELECT CAST(jsonb_array_elements_text(CAST(:ids AS jsonb)) AS bigint))
  AND r.kind = (SELECT id FROM symbol_kinds WHERE name = 'inherit');
