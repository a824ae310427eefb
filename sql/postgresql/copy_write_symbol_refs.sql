-- ragdb copy, rag.db -> PostgreSQL: rows of sql/copy_read_symbol_refs.sql (ids: the table's own).
COPY symbol_refs (file_id, first_char, kind, enclosing_id, name, target_id, alias_id, line)
FROM STDIN;
