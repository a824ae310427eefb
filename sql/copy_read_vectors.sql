-- ragdb copy, rag.db -> PostgreSQL: the window vectors (int8 blobs), in vector id order.
SELECT vector_id, chunk_id, embedding FROM chunk_vectors ORDER BY vector_id;
