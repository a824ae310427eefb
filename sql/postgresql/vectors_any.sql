SELECT chunk_id FROM chunk_vectors LIMIT 1;
