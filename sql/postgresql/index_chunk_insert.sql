-- One chunk (run with executemany, one row per chunk); its postings follow in a batch
-- (ragdb.postgres.PostgresConnection.write_postings), which also sets fts_length.
INSERT INTO chunks (file_id, first_char, last_char, start_line, end_line, kind, context, text)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
RETURNING id;
