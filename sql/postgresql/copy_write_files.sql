-- ragdb copy, rag.db -> PostgreSQL: rows of sql/copy_read_files.sql.
COPY files (id, path, sha256, size, kind, n_chars, indexed_at, symbols_version) FROM STDIN;
