-- The HNSW option switched off (ragdb legs --vectors exact): searches scan every window again.
DROP INDEX IF EXISTS chunk_vectors_hnsw;
