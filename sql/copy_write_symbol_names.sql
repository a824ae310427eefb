-- ragdb copy, PostgreSQL -> rag.db: rows of copy_read_symbol_names.
INSERT INTO symbol_names (id, qualified) VALUES (?, ?);
