-- Definitions named :name (their last part); with :qualified, those whose qualified name is
-- it or ends with '.' || it; of the kinds in :kinds (a JSON array; NULL: any), in the files
-- the filters allow (:langs, :paths, :excludes as in sql/search_lexical.sql). A page of them
-- (:limit, :offset) in path order, each with the count of all (total). As sql/symbols_named.sql.
WITH found AS (
    SELECT s.id, f.path, s.start_line, k.name AS kind, n.qualified, f.kind AS language,
           s.first_char, s.last_char, s.end_line
    FROM symbol_names AS n
    JOIN symbol_defs AS s ON s.qualified_id = n.id
    JOIN symbol_kinds AS k ON k.id = s.kind
    JOIN files AS f ON f.id = s.file_id
    WHERE substr(n.qualified, length(rtrim(n.qualified, replace(n.qualified, '.', ''))) + 1) = :name
      AND (CAST(:qualified AS text) IS NULL OR n.qualified = CAST(:qualified AS text)
           OR (length(n.qualified) > length(CAST(:qualified AS text))
               AND substr(n.qualified, length(n.qualified) - length(CAST(:qualified AS text)))
                   = '.' || CAST(:qualified AS text)))
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
