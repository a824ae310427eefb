SELECT count(*) FROM chunk_vectors;
