-- Each chunk with its analysed text (chunks_fts), in id order; NULLs where an index run
-- wrote no analysed text (ragdb.copying rebuilds it then).
SELECT c.id, c.file_id, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       c.context, c.text, t.path, t.context, t.body, f.path AS file_path, f.kind AS file_kind
FROM chunks AS c
JOIN files AS f ON f.id = c.file_id
LEFT JOIN chunks_fts AS t ON t.chunk_id = c.id
ORDER BY c.id;
