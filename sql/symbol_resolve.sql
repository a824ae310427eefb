-- The definitions whose qualified name is :qualified (looked up by its last part, :name).
SELECT s.id, f.path, s.start_line, k.name AS kind, n.qualified, f.kind AS language,
       s.first_char, s.last_char, s.end_line
FROM symbol_names AS n
JOIN symbol_defs AS s ON s.qualified_id = n.id
JOIN symbol_kinds AS k ON k.id = s.kind
JOIN files AS f ON f.id = s.file_id
WHERE substr(n.qualified, length(rtrim(n.qualified, replace(n.qualified, '.', ''))) + 1) = :name
  AND n.qualified = :qualified
ORDER BY f.path, s.first_char;
