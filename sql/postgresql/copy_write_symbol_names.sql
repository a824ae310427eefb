-- ragdb copy, rag.db -> PostgreSQL: rows of sql/copy_read_symbol_names.sql.
COPY symbol_names (id, qualified) FROM STDIN;
