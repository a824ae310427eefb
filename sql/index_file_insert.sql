-- A new or changed file. Its old chunks are removed first (index_file_delete.sql).
INSERT INTO files (path, sha256, size, kind, n_chars, indexed_at, symbols_version)
VALUES (:path, :sha256, :size, :kind, :n_chars, :indexed_at, :symbols_version)
RETURNING id;
