-- A different embedder or vector policy: old vectors are not comparable with new ones.
DELETE FROM chunk_vectors;
