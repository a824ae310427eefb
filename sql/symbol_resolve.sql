-- The definitions whose qualified name is :qualified (looked up by its last part, :name).
SELECT s.id, f.path, s.start_line, s.kind, s.qualified, f.kind AS language, s.first_char,
       s.last_char, s.end_line
FROM symbols AS s
JOIN files AS f ON f.id = s.file_id
WHERE s.name = :name AND s.qualified = :qualified
ORDER BY f.path, s.first_char;
