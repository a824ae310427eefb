-- The dense leg on PostgreSQL: chunks by their nearest window vector (pgvector's cosine
-- distance `<=>` over chunk_vectors), each with its best window's distance, nearest first
-- (ties by chunk id), as sql/search_dense.sql and sql/search_hybrid.sql find them. Its rows
-- go to search_dense.sql and search_hybrid.sql as dense_ids and dense_distances
-- (ragdb.pg_search.search_rows): a hybrid search with a bridge leg runs this once.
--
-- :query_vector is the int8 query vector as halfvec text ('[1,-2,...]', ragdb.pg_search),
-- exact as halfvec. Distances are rounded to float4 as sqlite-vec's are (it computes them
-- in float and returns a float), so scores and ties are rag.db's.
--
-- :ann = 0: exact, every window (or every allowed chunk's windows) is measured and the
-- :knn_depth nearest are kept, ties by vector id (sqlite-vec's scan order). :ann = 1: the
-- HNSW index (ragdb.pg_search.ANN_INDEX) answers the :knn_depth nearest; the caller sets
-- hnsw.ef_search to at least :knn_depth (pgvector returns at most ef_search rows) and, where
-- filters apply, hnsw.iterative_scan (sql/postgresql/search_settings.sql).
--
-- Filters (:filtered = 1): :paths and :excludes, JSON arrays of GLOB patterns matched against
-- the stored path or any tail of it after a '/', and :langs, a JSON array of languages; NULL
-- means no filter of that sort (ragdb_allowed_files, migrations/postgresql/
-- 011_allowed_files.sql). The KNN runs over the allowed chunks' windows only.
WITH allowed_files AS MATERIALIZED (  -- the filters: --path, --exclude and --lang
    SELECT f.id
    FROM ragdb_allowed_files(CAST(:langs AS jsonb), CAST(:paths AS jsonb),
                             CAST(:excludes AS jsonb)) AS f
    WHERE CAST(:filtered AS integer) = 1
),
allowed AS MATERIALIZED (
    SELECT c.id FROM chunks AS c WHERE c.file_id IN (SELECT id FROM allowed_files)
),
knn AS MATERIALIZED (                  -- exact, or by the HNSW index
    SELECT exact.chunk_id, exact.distance
    FROM (SELECT v.vector_id, v.chunk_id,
                 CAST(CAST(v.embedding <=> CAST(:query_vector AS halfvec(384)) AS real)
                      AS double precision) AS distance
          FROM chunk_vectors AS v
          WHERE CAST(:ann AS integer) = 0
            AND (CAST(:filtered AS integer) = 0 OR v.chunk_id IN (SELECT id FROM allowed))
          ORDER BY distance, v.vector_id
          LIMIT CAST(:knn_depth AS integer)) AS exact
    UNION ALL
    SELECT near.chunk_id, CAST(CAST(near.distance AS real) AS double precision)
    FROM (SELECT v.chunk_id, v.embedding <=> CAST(:query_vector AS halfvec(384)) AS distance
          FROM chunk_vectors AS v
          WHERE CAST(:ann AS integer) = 1
            AND (CAST(:filtered AS integer) = 0 OR v.chunk_id IN (SELECT id FROM allowed))
          ORDER BY v.embedding <=> CAST(:query_vector AS halfvec(384))
          LIMIT CAST(:knn_depth AS integer)) AS near
)
SELECT chunk_id, min(distance) AS distance
FROM knn
WHERE distance <= CAST(:max_distance AS double precision)  -- farther is noise
GROUP BY chunk_id
ORDER BY min(distance), chunk_id;
