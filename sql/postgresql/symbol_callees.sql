-- The calls made directly inside the definitions :ids (symbol_defs ids, a JSON array), in
-- reading order: the name called and its target as far as the calling file tells (NULL:
-- unknown).
SELECT f.path, r.line,
       coalesce(r.name, substr(t.qualified,
                               length(rtrim(t.qualified, replace(t.qualified, '.', ''))) + 1)),
       t.qualified AS target, f.kind AS language, k.name AS kind
FROM symbol_refs AS r
JOIN symbol_kinds AS k ON k.id = r.kind
JOIN files AS f ON f.id = r.file_id
LEFT JOIN symbol_names AS t ON t.id = r.target_id
WHERE r.file_id IN (SELECT s.file_id FROM symbol_defs AS s WHERE s.id IN (SELECT CAST(jsonb_array_elements_text(CAST(:ids AS jsonb)) AS bigint)))
  AND r.enclosing_id IN (SELECT CAST(jsonb_array_elements_text(CAST(:ids AS jsonb)) AS bigint))
  AND k.name IN ('call', 'decorator', 'macro')
ORDER BY f.path, r.first_char;
