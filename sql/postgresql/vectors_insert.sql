-- :blob is 384 int8 values, passed as pgvector text ('[1,-2,...]': ragdb.postgres turns the
-- bytes of ragdb.vectors.to_int8(...).tobytes() into it); halfvec holds them exactly.
INSERT INTO chunk_vectors (vector_id, chunk_id, embedding)
VALUES (:vector_id, :chunk_id, CAST(:blob AS halfvec(384)));
