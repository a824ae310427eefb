-- ragdb copy, PostgreSQL -> rag.db: one file, with its id (columns of copy_read_files).
INSERT INTO files (id, path, sha256, size, kind, n_chars, indexed_at, symbols_version)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);
