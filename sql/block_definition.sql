-- The functions and methods an answer's code block may be about (generate/blocks shows the
-- one the question names, or the only one, whole when it fits, and names its callers): those
-- of file :path overlapping a source's characters :first to :last and nested in no other
-- that does, in order, at most :limit; with the line of each one's name (its signature).
WITH defs AS (
    SELECT s.id, s.qualified_id, s.first_char, s.last_char, s.start_line
    FROM symbol_defs AS s
    JOIN files AS f ON f.id = s.file_id
    WHERE f.path = :path
      AND s.kind IN (SELECT id FROM symbol_kinds WHERE name IN ('function', 'method'))
      AND s.first_char < :last AND s.last_char > :first
)
SELECT substr(n.qualified, length(rtrim(n.qualified, replace(n.qualified, '.', ''))) + 1), n.qualified, s.first_char, s.last_char,
       s.start_line
FROM defs AS s
JOIN symbol_names AS n ON n.id = s.qualified_id
WHERE NOT EXISTS (
      SELECT 1 FROM defs AS o
      WHERE o.id <> s.id AND o.first_char <= s.first_char AND o.last_char >= s.last_char)
ORDER BY s.first_char, s.id
LIMIT :limit;
