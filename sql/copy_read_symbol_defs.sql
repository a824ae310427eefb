-- ragdb copy, either way: every definition, by id (ids kept: parent_id, enclosing_id and
-- chunk_id point at them); qualified names and kinds by id.
SELECT id, file_id, chunk_id, parent_id, qualified_id, kind, first_char, last_char,
       start_line, end_line
FROM symbol_defs ORDER BY id;
