-- Remove a file with its definitions and references, its chunks and their postings (the
-- full-text rows). Its vectors become orphans that index_paths removes in one sweep at the end
-- of the run (vectors_orphans_delete.sql); fts_stats is recomputed at the end of the run
-- (index_fts_stats.sql).
DELETE FROM symbol_refs WHERE file_id = :file_id;
DELETE FROM symbol_defs WHERE file_id = :file_id;
DELETE FROM postings WHERE chunk_id IN (SELECT id FROM chunks WHERE file_id = :file_id);
DELETE FROM chunks WHERE file_id = :file_id;
DELETE FROM files WHERE id = :file_id;
