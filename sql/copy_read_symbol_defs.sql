-- ragdb copy, either way: every definition, by id (ids kept: parent_id and chunk_id point at them).
SELECT id, file_id, chunk_id, parent_id, name, qualified, kind, first_char, last_char,
       start_line, end_line
FROM symbols ORDER BY id;
