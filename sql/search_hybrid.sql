-- Hybrid search: weighted Reciprocal Rank Fusion of BM25 (FTS5) and vector KNN (sqlite-vec).
--
--   score(chunk) = :w_lex / (:c + rank_lex) + :w_dense / (:c + rank_dense)
--
-- Each leg ranks its own :depth candidates (the dense leg from :knn_depth nearest windows) with row_number(); the legs are joined on chunk id,
-- and a chunk missing from one leg gets nothing from it. Ranks, not ids or raw scores, are
-- fused: BM25 and cosine distance are on unrelated scales.
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
bm25_hits AS MATERIALIZED (
    SELECT rowid AS chunk_id,
           bm25(chunks_fts, :w_path, :w_context, :w_body) AS score
    FROM chunks_fts
    WHERE chunks_fts MATCH :match
      AND (:filtered = 0 OR +rowid IN (SELECT id FROM allowed))
    ORDER BY score
    LIMIT :depth
),
lexical AS (
    SELECT chunk_id,
           row_number() OVER (ORDER BY score, chunk_id) AS rank
    FROM bm25_hits
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
dense AS (                              -- a chunk ranks by its best window
    SELECT chunk_id,
           row_number() OVER (ORDER BY min(distance), chunk_id) AS rank
    FROM knn
    WHERE distance <= :max_distance     -- farther than this is noise, not a match
    GROUP BY chunk_id
    ORDER BY rank
    LIMIT :depth
),
fused AS (
    SELECT coalesce(lexical.chunk_id, dense.chunk_id) AS chunk_id,
           coalesce(:w_lex / (:c + lexical.rank), 0.0)
             + coalesce(:w_dense / (:c + dense.rank), 0.0) AS score
    FROM lexical
    FULL OUTER JOIN dense ON dense.chunk_id = lexical.chunk_id
    ORDER BY score DESC, chunk_id
    LIMIT :k
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       fused.score, c.text, f.kind AS language
FROM fused
JOIN chunks AS c ON c.id = fused.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY fused.score DESC, c.id;
