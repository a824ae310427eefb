-- ragdb copy, rag.db -> PostgreSQL: the files, in id order (columns of copy_write_files).
SELECT id, path, sha256, size, kind, n_chars, indexed_at, symbols_version FROM files ORDER BY id;
