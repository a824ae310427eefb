-- Dense search: chunks ranked by their nearest window vector (cosine, sqlite-vec KNN).
WITH knn AS MATERIALIZED (
    SELECT chunk_id, distance
    FROM chunk_vectors
    WHERE embedding MATCH vec_int8(:query_vector)
      AND k = :knn_depth
),
dense AS (
    SELECT chunk_id, min(distance) AS distance
    FROM knn
    WHERE distance <= :max_distance     -- farther than this is noise, not a match
    GROUP BY chunk_id
    ORDER BY distance, chunk_id
    LIMIT :k
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       dense.distance, c.text
FROM dense
JOIN chunks AS c ON c.id = dense.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY dense.distance, c.id;
