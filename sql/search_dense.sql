-- Dense search: chunks ranked by their nearest window vector (cosine, sqlite-vec KNN).
--
-- Filters (:filtered = 1): :paths, a JSON array of GLOB patterns matched against the stored path
-- or any tail of it after a '/', and :langs, a JSON array of languages (files.kind); NULL means
-- no filter of that sort. Both legs apply them inside their search: the lexical leg keeps only
-- allowed chunks among its matches before ranking, the dense leg's KNN runs over the allowed
-- chunks' windows only (sqlite-vec's IN constraint on the chunk_id metadata column).
WITH allowed_files AS MATERIALIZED (         -- the filters: --path GLOB and --lang NAME
    SELECT f.id FROM files AS f
    WHERE :filtered = 1
      AND (:langs IS NULL OR f.kind IN (SELECT value FROM json_each(:langs)))
      AND (:paths IS NULL OR EXISTS (
              SELECT 1 FROM json_each(:paths) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value))
),
allowed AS MATERIALIZED (
    SELECT c.id FROM chunks AS c WHERE c.file_id IN (SELECT id FROM allowed_files)
),
knn AS MATERIALIZED (                  -- unfiltered, or only the allowed chunks' windows
    SELECT chunk_id, distance
    FROM chunk_vectors
    WHERE embedding MATCH vec_int8(:query_vector)
      AND k = :knn_depth
      AND :filtered = 0
    UNION ALL
    SELECT chunk_id, distance
    FROM chunk_vectors
    WHERE embedding MATCH vec_int8(:query_vector)
      AND k = :knn_depth
      AND chunk_id IN (SELECT id FROM allowed)
      AND :filtered = 1
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
       dense.distance, c.text, f.kind AS language
FROM dense
JOIN chunks AS c ON c.id = dense.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY dense.distance, c.id;
