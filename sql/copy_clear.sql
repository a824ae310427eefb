-- ragdb copy --replace into a rag.db: everything an index holds, in the copy's transaction.
DELETE FROM symbol_refs;
DELETE FROM symbol_defs;
DELETE FROM symbol_names;
DELETE FROM chunks_fts;
DELETE FROM chunk_vectors;
DELETE FROM chunks;
DELETE FROM files;
DELETE FROM settings;
DELETE FROM roots;
DELETE FROM index_runs;
DELETE FROM fts_common_terms;
DELETE FROM query_cache;
