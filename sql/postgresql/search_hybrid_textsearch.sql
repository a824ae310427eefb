-- Hybrid search on PostgreSQL with the pg_textsearch option (settings('pg_lexical') =
-- 'pg_textsearch'): sql/postgresql/search_hybrid.sql with the lexical leg's hits made by
-- search_textsearch_hits.sql (its BM25 index), passed in as :hit_ids and :hit_scores, best
-- first (ragdb.pg_search.search_rows), and the bridge leg's likewise as :bridge_ids and
-- :bridge_scores (the same index on the bridge terms). The dense leg, fusion, gate, priors, filters,
-- duplicate slots and result columns are the same.
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
bm25_hits AS (                              -- search_textsearch_hits.sql's hits
    SELECT h.chunk_id, h.score
    FROM unnest(CAST(:hit_ids AS bigint[]), CAST(:hit_scores AS double precision[]))
         AS h(chunk_id, score)
),
lexical AS MATERIALIZED (
    SELECT h.chunk_id, h.score,
           row_number() OVER (ORDER BY h.score, h.chunk_id) AS rank,
           CASE WHEN row_number() OVER (ORDER BY h.score, h.chunk_id) = 1   -- the margin
                THEN LEAST(CAST(:margin_cap AS double precision), GREATEST(1.0, coalesce(
                         h.score / nullif(lead(h.score) OVER (ORDER BY h.score, h.chunk_id), 0),
                         1.0)))
                ELSE 1.0 END AS margin,
           CAST(:dense_kinds AS jsonb) IS NOT NULL
             AND f.kind NOT IN (SELECT jsonb_array_elements_text(CAST(:dense_kinds AS jsonb)))
             AS unembedded
    FROM bm25_hits AS h
    JOIN chunks AS c ON c.id = h.chunk_id
    JOIN files AS f ON f.id = c.file_id
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
dense AS MATERIALIZED (                 -- a chunk ranks by its best window
    SELECT chunk_id, min(distance) AS distance,
           row_number() OVER (ORDER BY min(distance), chunk_id) AS rank
    FROM knn
    WHERE distance <= CAST(:max_distance AS double precision)  -- farther is noise
    GROUP BY chunk_id
    ORDER BY rank
    LIMIT CAST(:depth AS integer)
),
bridge_hits AS (                            -- the bridge leg's hits, the same way
    SELECT h.chunk_id, h.score
    FROM unnest(CAST(:bridge_ids AS bigint[]), CAST(:bridge_scores AS double precision[]))
         AS h(chunk_id, score)
),
bridge AS MATERIALIZED (
    SELECT h.chunk_id,
           row_number() OVER (
               ORDER BY h.score
                        * CASE WHEN CAST(:prior_paths AS jsonb) IS NOT NULL
                                    AND ragdb_glob_any(
                                        translate(f.path, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
                                                  'abcdefghijklmnopqrstuvwxyz'),
                                        CAST(:prior_paths AS jsonb), false)
                               THEN CAST(:prior AS double precision) ELSE 1.0 END,
                        h.chunk_id) AS rank
    FROM bridge_hits AS h
    JOIN chunks AS c ON c.id = h.chunk_id
    JOIN files AS f ON f.id = c.file_id
    WHERE CAST(:dense_kinds AS jsonb) IS NOT NULL
      AND f.kind NOT IN (SELECT jsonb_array_elements_text(CAST(:dense_kinds AS jsonb)))
),
gate AS (                               -- 0 to 1: how much the question looks like one on code
    SELECT CASE WHEN CAST(:gate_far AS double precision)
                     <= CAST(:gate_near AS double precision) THEN 1.0
                ELSE greatest(0.0, least(1.0,
                         (coalesce((SELECT min(distance) FROM dense),
                                   CAST(:max_distance AS double precision))
                          - CAST(:gate_near AS double precision))
                         / (CAST(:gate_far AS double precision)
                            - CAST(:gate_near AS double precision)))) END
           * CASE WHEN CAST(:gate_high AS double precision)
                       <= CAST(:gate_low AS double precision) THEN 1.0
                  WHEN best.code IS NULL THEN 0.0
                  WHEN best.docs IS NULL THEN 1.0
                  ELSE greatest(0.0, least(1.0,
                           (best.code / best.docs - CAST(:gate_low AS double precision))
                           / (CAST(:gate_high AS double precision)
                              - CAST(:gate_low AS double precision)))) END AS code
    FROM (SELECT min(CASE WHEN unembedded THEN score END) AS code,   -- bm25: lower is better
                 min(CASE WHEN NOT unembedded THEN score END) AS docs
          FROM lexical) AS best
),
joined AS (
    SELECT coalesce(lexical.chunk_id, dense.chunk_id, bridge.chunk_id) AS chunk_id,
           coalesce(CAST(:w_lex AS double precision) / (CAST(:c AS double precision)
                                                        + lexical.rank) * lexical.margin, 0.0)
             + CASE WHEN dense.rank IS NOT NULL
                    THEN CAST(:w_dense AS double precision) / (CAST(:c AS double precision)
                                                               + dense.rank)
                    WHEN lexical.unembedded
                    THEN CAST(:w_absent AS double precision) / (CAST(:c AS double precision)
                                                                + lexical.rank)
                         * (SELECT code FROM gate)
                    ELSE 0.0 END
             + coalesce(CAST(:w_bridge AS double precision) / (CAST(:c AS double precision)
                                                              + bridge.rank), 0.0) AS score
    FROM lexical
    FULL OUTER JOIN dense ON dense.chunk_id = lexical.chunk_id
    FULL OUTER JOIN bridge ON bridge.chunk_id = coalesce(lexical.chunk_id, dense.chunk_id)
),
scored AS (
    SELECT j.chunk_id,
           j.score
           * CASE WHEN CAST(:prior_paths AS jsonb) IS NOT NULL
                       AND ragdb_glob_any(translate(f.path, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
                                                    'abcdefghijklmnopqrstuvwxyz'),
                                          CAST(:prior_paths AS jsonb), false)
                  THEN CAST(:prior AS double precision) ELSE 1.0 END
           * CASE WHEN CAST(:named_roots AS jsonb) IS NOT NULL AND NOT EXISTS (
                       SELECT 1 FROM jsonb_array_elements_text(CAST(:named_roots AS jsonb)) AS r
                       WHERE substr(f.path, 1, length(r) + 1) = r || '/')
                  THEN CAST(:root_prior AS double precision) ELSE 1.0 END AS score,
           CASE WHEN f.sha256 = '' THEN 'chunk ' || c.id      -- rows written without a hash
                ELSE f.sha256 || ' ' || c.first_char || ' ' || c.last_char END AS copy_of
    FROM joined AS j
    JOIN chunks AS c ON c.id = j.chunk_id
    JOIN files AS f ON f.id = c.file_id
),
fused AS (                              -- one slot per distinct text range
    SELECT chunk_id, score
    FROM (SELECT chunk_id, score,
                 row_number() OVER (PARTITION BY copy_of ORDER BY score DESC, chunk_id) AS nth
          FROM scored) AS slots
    WHERE nth = 1
    ORDER BY score DESC, chunk_id
    LIMIT CAST(:k AS integer)
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       fused.score, c.text, f.kind AS language,
       CASE WHEN f.sha256 = '' THEN NULL ELSE (
           SELECT CAST(json_agg(d.path ORDER BY d.path COLLATE "C") AS text)
           FROM files AS d WHERE d.sha256 = f.sha256 AND d.id <> f.id) END AS duplicates
FROM fused
JOIN chunks AS c ON c.id = fused.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY fused.score DESC, c.id;
