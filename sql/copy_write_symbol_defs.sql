-- ragdb copy, PostgreSQL -> rag.db: rows of copy_read_symbol_defs.
INSERT INTO symbol_defs (id, file_id, chunk_id, parent_id, qualified_id, kind, first_char,
                         last_char, start_line, end_line)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);
