-- Uses whose target is one of :ids (symbol_names ids, a JSON array), of the kinds in :kinds,
-- in the files the filters allow, with the definition enclosing each; a page of them (:limit,
-- :offset) in path order with the count of all (total). A use's name, where not stored, is
-- its target's last part (migrations/009_symbols_compact.sql).
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
    WHERE r.target_id IN (SELECT value FROM json_each(:ids))
      AND (:kinds IS NULL OR k.name IN (SELECT value FROM json_each(:kinds)))
      AND (:langs IS NULL OR f.kind IN (SELECT value FROM json_each(:langs)))
      AND (:paths IS NULL OR EXISTS (
              SELECT 1 FROM json_each(:paths) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value))
      AND (:excludes IS NULL OR NOT EXISTS (
              SELECT 1 FROM json_each(:excludes) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value))
)
SELECT path, line, kind, target, name, enclosing, language, first_char,
       (SELECT count(*) FROM found) AS total
FROM found
ORDER BY path, first_char
LIMIT :limit OFFSET :offset;
