-- Dense search: the :k nearest chunk vectors by cosine distance (sqlite-vec KNN).
WITH dense AS (
    SELECT chunk_id, distance
    FROM chunk_vectors
    WHERE embedding MATCH vec_int8(:query_vector)
      AND k = :k
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       dense.distance, c.text
FROM dense
JOIN chunks AS c ON c.id = dense.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY dense.distance, c.id;
