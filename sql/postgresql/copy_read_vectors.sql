-- The window vectors as halfvec text ('[1,-2,...]'), in vector id order.
SELECT vector_id, chunk_id, CAST(embedding AS text) FROM chunk_vectors ORDER BY vector_id;
