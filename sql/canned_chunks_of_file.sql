-- title: Chunks of a file
-- description: Every chunk of one file in reading order, with its line range and text.
SELECT c.id AS chunk_id,
       f.path,
       c.start_line,
       c.end_line,
       c.first_char,
       c.last_char,
       c.kind,
       c.context,
       c.text
FROM chunks AS c
JOIN files AS f ON f.id = c.file_id
WHERE c.file_id = :file_id
ORDER BY c.first_char
