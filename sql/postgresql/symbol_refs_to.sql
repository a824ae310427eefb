-- Uses whose target is one of :ids (symbol_names ids, a JSON array), of the kinds in :kinds,
-- in the files the filters allow, with the definition enclosing each; a page of them (:limit,
-- :offset) in path order with the count of all (total). A use's name, where not stored, is
-- its target's last part.
WITH found AS (
    SELECT f.path, r.line, k.name AS kind, t.qualified AS target,
           coalesce(r.name, substr(t.qualified,
                                   length(rtrim(t.qualified, replace(t.qualified, '.', ''))) + 1))
               AS name,
           en.qualified AS enclosing, f.kind AS language, r.first_char
    FROM symbol_refs AS r
    JOIN symbol_names AS t ON t.id = r.target_id
    JOIN symbol_kinds AS k ON k.id = r.kind
    JOIN files AS f ON f.id = r.file_id
    LEFT JOIN symbol_defs AS e ON e.id = r.enclosing_id
    LEFT JOIN symbol_names AS en ON en.id = e.qualified_id
    WHERE r.target_id IN (SELECT CAST(jsonb_array_elements_text(CAST(:ids AS jsonb)) AS bigint))
      AND (CAST(:kinds AS jsonb) IS NULL OR k.name IN (SELECT jsonb_array_elements_text(CAST(:kinds AS jsonb))))
      AND (CAST(:langs AS jsonb) IS NULL
           OR f.kind IN (SELECT jsonb_array_elements_text(CAST(:langs AS jsonb))))
      AND (CAST(:paths AS jsonb) IS NULL OR ragdb_glob_any(f.path, CAST(:paths AS jsonb), true))
      AND (CAST(:excludes AS jsonb) IS NULL
           OR NOT ragdb_glob_any(f.path, CAST(:excludes AS jsonb), true))
)
SELECT path, line, kind, target, name, enclosing, language, first_char,
       (SELECT count(*) FROM found) AS total
FROM found
ORDER BY path, first_char
LIMIT :limit OFFSET :offset;
