-- One window's vector, by its id (chunk_id * 1000 + window number): a point lookup.
SELECT embedding FROM chunk_vectors WHERE vector_id = :vector_id;
