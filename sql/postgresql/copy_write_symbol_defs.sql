-- ragdb copy, rag.db -> PostgreSQL: rows of sql/copy_read_symbols.sql.
COPY symbols (id, file_id, chunk_id, parent_id, name, qualified, kind, first_char, last_char,
              start_line, end_line) FROM STDIN;
