-- ragdb copy, rag.db -> PostgreSQL: rows of sql/copy_read_symbol_defs.sql.
COPY symbol_defs (id, file_id, chunk_id, parent_id, qualified_id, kind, first_char, last_char,
                  start_line, end_line) FROM STDIN;
