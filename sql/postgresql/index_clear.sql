-- A full rebuild starts from nothing (vectors included: chunk ids are about to change).
-- DELETE, not TRUNCATE: TRUNCATE would lock every search out until the run commits.
DELETE FROM symbol_refs;
DELETE FROM symbol_defs;
DELETE FROM symbol_names;
DELETE FROM postings;
DELETE FROM chunk_vectors;
DELETE FROM chunks;
DELETE FROM files;
UPDATE fts_stats SET n_chunks = 0, total_length = 0;
