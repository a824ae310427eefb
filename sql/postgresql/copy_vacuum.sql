-- After a copy has committed (VACUUM runs outside a transaction): the visibility map, so
-- BM25's reads of the postings and of chunks_length are index-only from the first search.
VACUUM (ANALYZE) files, chunks, chunks_fts, postings, chunk_vectors;
