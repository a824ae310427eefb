-- :blob is 384 int8 values (ragdb.embed.to_int8(...).tobytes()).
INSERT INTO chunk_vectors (chunk_id, embedding) VALUES (:id, vec_int8(:blob));
