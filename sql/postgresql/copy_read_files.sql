-- ragdb copy, PostgreSQL -> rag.db: the files, in id order (columns of sql/copy_write_files).
SELECT id, path, sha256, size, kind, n_chars, indexed_at FROM files ORDER BY id;
