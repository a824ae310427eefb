-- The definitions that call one of :ids (symbol_names ids, a JSON array), one row each with
-- its first call and the number of calls (n); of the kinds in :kinds, in the files the
-- filters allow; a page of them with the count of all (total). Calls at a file's top level
-- (outside any definition) count as the file's. :home (a path, or NULL: the name's every
-- definition) asks for the callers of the definition in that file alone: a call in another
-- file that defines the same qualified name itself (C's `static int exec()` in three files,
-- each calling its own) calls that file's definition, not this one.
WITH calls AS (
    SELECT r.file_id, r.enclosing_id, min(r.first_char) AS at, min(r.line) AS line,
           count(*) AS n
    FROM symbol_refs AS r
    JOIN files AS f ON f.id = r.file_id
    LEFT JOIN symbol_defs AS e ON e.id = r.enclosing_id
    WHERE r.target_id IN (SELECT CAST(jsonb_array_elements_text(CAST(:ids AS jsonb)) AS bigint))
      AND r.kind IN (SELECT id FROM symbol_kinds WHERE name IN ('call', 'decorator', 'macro'))
      AND (CAST(:home AS text) IS NULL OR f.path = :home OR NOT EXISTS (
              SELECT 1 FROM symbol_defs AS d
              WHERE d.file_id = r.file_id AND d.qualified_id = r.target_id))
      AND (CAST(:kinds AS jsonb) IS NULL OR e.kind IN (
              SELECT k.id FROM symbol_kinds AS k
              WHERE k.name IN (SELECT jsonb_array_elements_text(CAST(:kinds AS jsonb)))))
      AND (CAST(:langs AS jsonb) IS NULL
           OR f.kind IN (SELECT jsonb_array_elements_text(CAST(:langs AS jsonb))))
      AND (CAST(:paths AS jsonb) IS NULL OR ragdb_glob_any(f.path, CAST(:paths AS jsonb), true))
      AND (CAST(:excludes AS jsonb) IS NULL
           OR NOT ragdb_glob_any(f.path, CAST(:excludes AS jsonb), true))
    GROUP BY r.file_id, r.enclosing_id
)
SELECT f.path, c.line, coalesce(k.name, 'file') AS kind, coalesce(n.qualified, f.path),
       f.kind AS language, c.n, (SELECT count(*) FROM calls) AS total
FROM calls AS c
JOIN files AS f ON f.id = c.file_id
LEFT JOIN symbol_defs AS e ON e.id = c.enclosing_id
LEFT JOIN symbol_names AS n ON n.id = e.qualified_id
LEFT JOIN symbol_kinds AS k ON k.id = e.kind
ORDER BY f.path, c.at
LIMIT :limit OFFSET :offset;
