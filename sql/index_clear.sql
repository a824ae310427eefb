-- A full rebuild starts from nothing (vectors included: chunk ids are about to change).
DELETE FROM chunks_fts;
DELETE FROM chunk_vectors;
DELETE FROM chunks;
DELETE FROM files;
