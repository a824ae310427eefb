-- ragdb copy, PostgreSQL -> rag.db: rows of copy_read_symbols.
INSERT INTO symbols (id, file_id, chunk_id, parent_id, name, qualified, kind, first_char,
                     last_char, start_line, end_line)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);
