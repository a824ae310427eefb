-- Uses of :name that their file could not resolve (a method of an object of unknown type), of
-- the kinds in :kinds, in the files the filters allow; a page of them with the count (total).
WITH found AS (
    SELECT f.path, r.line, k.name AS kind, r.name, en.qualified AS enclosing,
           f.kind AS language, r.first_char
    FROM symbol_refs AS r
    JOIN symbol_kinds AS k ON k.id = r.kind
    JOIN files AS f ON f.id = r.file_id
    LEFT JOIN symbol_defs AS e ON e.id = r.enclosing_id
    LEFT JOIN symbol_names AS en ON en.id = e.qualified_id
    WHERE r.target_id IS NULL AND r.name = :name
      AND (:kinds IS NULL OR k.name IN (SELECT value FROM json_each(:kinds)))
      AND (:langs IS NULL OR f.kind IN (SELECT value FROM json_each(:langs)))
      AND (:paths IS NULL OR EXISTS (
              SELECT 1 FROM json_each(:paths) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value))
      AND (:excludes IS NULL OR NOT EXISTS (
              SELECT 1 FROM json_each(:excludes) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value))
)
SELECT path, line, kind, name, enclosing, language, first_char,
       (SELECT count(*) FROM found) AS total
FROM found
ORDER BY path, first_char
LIMIT :limit OFFSET :offset;
