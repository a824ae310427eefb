-- embedding as halfvec text, '[1,-2,...]': int8 values are exact in halfvec.
COPY chunk_vectors (vector_id, chunk_id, embedding) FROM STDIN;
