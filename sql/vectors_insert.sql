-- :blob is 384 int8 values (ragdb.embed.to_int8(...).tobytes()).
INSERT INTO chunk_vectors (vector_id, chunk_id, embedding)
VALUES (:vector_id, :chunk_id, vec_int8(:blob));
