-- The blob is 384 int8 values, as sql/vectors_insert.sql writes them.
INSERT INTO chunk_vectors (vector_id, chunk_id, embedding) VALUES (?, ?, vec_int8(?));
