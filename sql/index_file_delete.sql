-- Remove a file with its chunks, their full-text rows and their vectors.
DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE file_id = :file_id);
DELETE FROM chunk_vectors WHERE chunk_id IN (SELECT id FROM chunks WHERE file_id = :file_id);
DELETE FROM chunks WHERE file_id = :file_id;
DELETE FROM files WHERE id = :file_id;
