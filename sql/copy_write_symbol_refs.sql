-- ragdb copy, PostgreSQL -> rag.db: rows of copy_read_symbol_refs.
INSERT INTO symbol_refs (file_id, first_char, kind, enclosing_id, name, target_id, alias_id,
                         line)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);
