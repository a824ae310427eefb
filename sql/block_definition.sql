-- The functions and methods an answer's code block may be about (generate/blocks shows the
-- one the question names, or the only one, whole when it fits, and names its callers): those
-- of file :path overlapping a source's characters :first to :last and nested in no other
-- that does, in order, at most :limit.
SELECT s.name, s.qualified, s.first_char, s.last_char
FROM symbols AS s
JOIN files AS f ON f.id = s.file_id
WHERE f.path = :path
  AND s.kind IN ('function', 'method')
  AND s.first_char < :last AND s.last_char > :first
  AND NOT EXISTS (
      SELECT 1 FROM symbols AS o
      WHERE o.file_id = s.file_id AND o.id <> s.id
        AND o.kind IN ('function', 'method')
        AND o.first_char <= s.first_char AND o.last_char >= s.last_char
        AND o.first_char < :last AND o.last_char > :first)
ORDER BY s.first_char, s.id
LIMIT :limit;
