-- Dense search on PostgreSQL: chunks ranked by their nearest window vector (pgvector's cosine
-- distance `<=>` over chunk_vectors), as sql/search_dense.sql. Same parameters and result
-- columns, plus :ann.
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
-- means no filter of that sort. The KNN runs over the allowed chunks' windows only.
--
-- Priors (as in sql/search_hybrid.sql): the similarity (1 - distance) times :prior for a file
-- whose lower-cased path GLOBs one of :prior_paths, times :root_prior for a file under none
-- of :named_roots when the question names projects.
--
-- Identical files share one slot (same sha256, same range): the best ranked is kept and
-- `duplicates` lists the other files with those bytes (JSON text, NULL when none).
WITH allowed_files AS MATERIALIZED (         -- the filters: --path, --exclude and --lang
    SELECT f.id FROM files AS f
    WHERE CAST(:filtered AS integer) = 1
      AND (CAST(:langs AS jsonb) IS NULL
           OR f.kind IN (SELECT jsonb_array_elements_text(CAST(:langs AS jsonb))))
      AND (CAST(:paths AS jsonb) IS NULL
           OR ragdb_glob_any(f.path, CAST(:paths AS jsonb), true))
      AND (CAST(:excludes AS jsonb) IS NULL
           OR NOT ragdb_glob_any(f.path, CAST(:excludes AS jsonb), true))
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
),
dense AS (
    SELECT chunk_id, min(distance) AS distance
    FROM knn
    WHERE distance <= CAST(:max_distance AS double precision)  -- farther is noise
    GROUP BY chunk_id
),
scored AS (
    SELECT d.chunk_id,
           1.0 - (1.0 - d.distance)
           * CASE WHEN CAST(:prior_paths AS jsonb) IS NOT NULL
                       AND ragdb_glob_any(translate(f.path, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
                                                    'abcdefghijklmnopqrstuvwxyz'),
                                          CAST(:prior_paths AS jsonb), false)
                  THEN CAST(:prior AS double precision) ELSE 1.0 END
           * CASE WHEN CAST(:named_roots AS jsonb) IS NOT NULL AND NOT EXISTS (
                       SELECT 1 FROM jsonb_array_elements_text(CAST(:named_roots AS jsonb)) AS r
                       WHERE substr(f.path, 1, length(r) + 1) = r || '/')
                  THEN CAST(:root_prior AS double precision) ELSE 1.0 END AS distance,
           CASE WHEN f.sha256 = '' THEN 'chunk ' || c.id      -- rows written without a hash
                ELSE f.sha256 || ' ' || c.first_char || ' ' || c.last_char END AS copy_of
    FROM dense AS d
    JOIN chunks AS c ON c.id = d.chunk_id
    JOIN files AS f ON f.id = c.file_id
),
ranked AS (                             -- one slot per distinct text range
    SELECT chunk_id, distance
    FROM (SELECT chunk_id, distance,
                 row_number() OVER (PARTITION BY copy_of ORDER BY distance, chunk_id) AS nth
          FROM scored) AS slots
    WHERE nth = 1
    ORDER BY distance, chunk_id
    LIMIT CAST(:k AS integer)
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       ranked.distance, c.text, f.kind AS language,
       CASE WHEN f.sha256 = '' THEN NULL ELSE (
           SELECT CAST(json_agg(d.path ORDER BY d.path COLLATE "C") AS text)
           FROM files AS d WHERE d.sha256 = f.sha256 AND d.id <> f.id) END AS duplicates
FROM ranked
JOIN chunks AS c ON c.id = ranked.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY ranked.distance, c.id;
