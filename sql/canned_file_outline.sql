-- title: Outline of a file
-- description: The definitions of one file (:path, as the index stores it) in reading order, each with its kind, qualified name and lines.
SELECT s.start_line AS line, s.end_line, s.kind, s.qualified, s.chunk_id
FROM symbols AS s
JOIN files AS f ON f.id = s.file_id
WHERE f.path = :path
ORDER BY s.first_char
