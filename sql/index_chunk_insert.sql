-- One chunk (run with executemany, one row per chunk); its full-text row follows in a batch
-- (index_fts_insert.sql).
INSERT INTO chunks (file_id, first_char, last_char, start_line, end_line, kind, context, text)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
RETURNING id;
