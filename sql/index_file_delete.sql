-- Remove a file with its definitions and references, its chunks and their full-text rows.
-- Its vectors become orphans that index_paths removes in one sweep at the end of the run
-- (sql/vectors_orphans_delete.sql).
DELETE FROM symbol_refs WHERE file_id = :file_id;
DELETE FROM symbol_defs WHERE file_id = :file_id;
DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE file_id = :file_id);
DELETE FROM chunks WHERE file_id = :file_id;
DELETE FROM files WHERE id = :file_id;
