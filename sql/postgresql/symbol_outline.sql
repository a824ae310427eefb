-- The definitions of a file (:path, the stored path or its tail after a '/'), or of every file
-- under a folder (:path/...), in reading order; of the kinds in :kinds, in the files the
-- filters allow; a page of them (:limit, :offset) with the count of all (total).
WITH found AS (
    SELECT s.id, f.path, s.start_line, k.name AS kind, n.qualified, f.kind AS language,
           s.first_char, s.last_char, s.end_line
    FROM files AS f
    JOIN symbol_defs AS s ON s.file_id = f.id
    JOIN symbol_names AS n ON n.id = s.qualified_id
    JOIN symbol_kinds AS k ON k.id = s.kind
    WHERE (f.path = :path
           OR (length(f.path) > length(:path)
               AND substr(f.path, length(f.path) - length(:path)) = '/' || :path)
           OR substr(f.path, 1, length(:path) + 1) = :path || '/')
      AND (CAST(:kinds AS jsonb) IS NULL OR k.name IN (SELECT jsonb_array_elements_text(CAST(:kinds AS jsonb))))
      AND (CAST(:langs AS jsonb) IS NULL
           OR f.kind IN (SELECT jsonb_array_elements_text(CAST(:langs AS jsonb))))
      AND (CAST(:paths AS jsonb) IS NULL OR ragdb_glob_any(f.path, CAST(:paths AS jsonb), true))
      AND (CAST(:excludes AS jsonb) IS NULL
           OR NOT ragdb_glob_any(f.path, CAST(:excludes AS jsonb), true))
)
SELECT id, path, start_line, kind, qualified, language, first_char, last_char, end_line,
       (SELECT count(*) FROM found) AS total
FROM found
ORDER BY path, first_char, id
LIMIT :limit OFFSET :offset;
