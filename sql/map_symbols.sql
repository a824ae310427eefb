-- Every definition in the files the filters allow, for the repository map (ragdb/repo_map.py).
SELECT s.id, n.qualified, k.name AS kind, f.path, s.start_line, f.kind AS language,
       s.first_char
FROM symbol_defs AS s
JOIN symbol_names AS n ON n.id = s.qualified_id
JOIN symbol_kinds AS k ON k.id = s.kind
JOIN files AS f ON f.id = s.file_id
WHERE 1 = 1
      AND (:langs IS NULL OR f.kind IN (SELECT value FROM json_each(:langs)))
      AND (:paths IS NULL OR EXISTS (
              SELECT 1 FROM json_each(:paths) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value))
      AND (:excludes IS NULL OR NOT EXISTS (
              SELECT 1 FROM json_each(:excludes) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value));
