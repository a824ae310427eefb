-- The lines of the names of the definitions of :name in the file :path, any number of them
-- (ragdb/generate/named.py: a first block showing one is about a name the question writes
-- and keeps its place).
SELECT s.start_line
FROM symbols AS s
JOIN files AS f ON f.id = s.file_id
WHERE s.name = :name AND f.path = :path
  AND s.kind IN ('function', 'method', 'class', 'struct', 'interface', 'trait', 'type', 'enum');
