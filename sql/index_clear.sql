-- A full rebuild starts from nothing (vectors included: chunk ids are about to change).
DELETE FROM symbol_refs;
DELETE FROM symbol_defs;
DELETE FROM symbol_names;
DELETE FROM chunks_fts;
DELETE FROM chunk_vectors;
DELETE FROM chunks;
DELETE FROM files;
