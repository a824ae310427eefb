-- Vectors (windows) and the chunks they cover.
SELECT count(*), count(DISTINCT chunk_id) FROM chunk_vectors;
