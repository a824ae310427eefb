-- The calls made directly inside the definitions :ids (symbols ids, a JSON array), in reading
-- order: the name called and its target as far as the calling file tells (NULL: unknown).
SELECT f.path, r.line, r.name, t.qualified AS target, f.kind AS language, r.kind
FROM symbol_refs AS r
JOIN files AS f ON f.id = r.file_id
LEFT JOIN symbol_names AS t ON t.id = r.target_id
WHERE r.file_id IN (SELECT s.file_id FROM symbols AS s
                    WHERE s.id IN (SELECT CAST(jsonb_array_elements_text(CAST(:ids AS jsonb)) AS bigint)))
  AND r.enclosing_id IN (SELECT CAST(jsonb_array_elements_text(CAST(:ids AS jsonb)) AS bigint))
  AND r.kind IN ('call', 'decorator', 'macro')
ORDER BY f.path, r.first_char;
