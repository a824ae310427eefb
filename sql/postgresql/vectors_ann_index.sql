-- The HNSW option (ragdb copy --vectors hnsw): an approximate index on the window vectors,
-- cosine distance as sqlite-vec's, m 32 and ef_construction 128 (measured: README,
-- PostgreSQL). Searches use it when settings('pg_vectors') is 'hnsw' (ann = 1).
CREATE INDEX IF NOT EXISTS chunk_vectors_hnsw ON chunk_vectors
USING hnsw (embedding halfvec_cosine_ops) WITH (m = 32, ef_construction = 128);
