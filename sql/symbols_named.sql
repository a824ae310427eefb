-- Definitions named :name (their last part, looked up by symbol_names_last: the expression
-- is migrations/009_symbols_compact.sql's); with :qualified, those whose qualified name is it
-- or ends with '.' || it; of the kinds in :kinds (a JSON array; NULL: any), in the files the
-- filters allow (:langs, :paths, :excludes as in sql/search_lexical.sql). A page of them
-- (:limit, :offset) in path order, each with the count of all (total).
WITH found AS (
    SELECT s.id, f.path, s.start_line, k.name AS kind, n.qualified, f.kind AS language,
           s.first_char, s.last_char, s.end_line
    FROM symbol_names AS n
    JOIN symbol_defs AS s ON s.qualified_id = n.id
    JOIN symbol_kinds AS k ON k.id = s.kind
    JOIN files AS f ON f.id = s.file_id
    WHERE substr(n.qualified, length(rtrim(n.qualified, replace(n.qualified, '.', ''))) + 1) = :name
      AND (:qualified IS NULL OR n.qualified = :qualified
           OR (length(n.qualified) > length(:qualified)
               AND substr(n.qualified, length(n.qualified) - length(:qualified))
                   = '.' || :qualified))
      AND (:kinds IS NULL OR k.name IN (SELECT value FROM json_each(:kinds)))
      AND (:langs IS NULL OR f.kind IN (SELECT value FROM json_each(:langs)))
      AND (:paths IS NULL OR EXISTS (
              SELECT 1 FROM json_each(:paths) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value))
      AND (:excludes IS NULL OR NOT EXISTS (
              SELECT 1 FROM json_each(:excludes) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value))
)
SELECT id, path, start_line, kind, qualified, language, first_char, last_char, end_line,
       (SELECT count(*) FROM found) AS total
FROM found
ORDER BY path, first_char, id
LIMIT :limit OFFSET :offset;
