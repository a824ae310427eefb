-- Every definition in the files the filters allow, for the repository map (ragdb/repo_map.py).
SELECT s.id, n.qualified, k.name AS kind, f.path, s.start_line, f.kind AS language,
       s.first_char
FROM symbol_defs AS s
JOIN symbol_names AS n ON n.id = s.qualified_id
JOIN symbol_kinds AS k ON k.id = s.kind
JOIN files AS f ON f.id = s.file_id
WHERE 1 = 1
      AND (CAST(:langs AS jsonb) IS NULL
           OR f.kind IN (SELECT jsonb_array_elements_text(CAST(:langs AS jsonb))))
      AND (CAST(:paths AS jsonb) IS NULL OR ragdb_glob_any(f.path, CAST(:paths AS jsonb), true))
      AND (CAST(:excludes AS jsonb) IS NULL
           OR NOT ragdb_glob_any(f.path, CAST(:excludes AS jsonb), true));
