-- Hybrid search on PostgreSQL: sql/search_hybrid.sql line for line, with the lexical leg of
-- sql/postgresql/search_lexical.sql (FTS5's BM25 over the postings; :terms in place of
-- the MATCH expression) and the dense leg of sql/postgresql/search_dense.sql (pgvector, :ann = 0 exact or
-- 1 HNSW). Same parameters otherwise, same result columns, same scores and ties.
--
--   score(chunk) = (:w_lex x margin / (:c + rank_lex) + :w_dense / (:c + rank_dense)
--                   + :w_bridge / (:c + rank_bridge)) * priors
--
-- margin: the first lexical hit's BM25 over the second's, 1 to :margin_cap (1 for the others).
-- Each leg ranks its own :depth candidates (the dense leg from :knn_depth nearest windows);
-- the legs are joined on chunk id, and a chunk missing from one leg gets nothing from it.
-- A chunk of a kind outside :dense_kinds (JSON; NULL: the rule is off) gets :w_absent /
-- (:c + rank_lex) times the code gate in place of the dense term it cannot have (the gate:
-- the nearest window's distance from :gate_near to :gate_far, times the best code chunk's
-- BM25 over the best doc chunk's from :gate_low to :gate_high; a range whose ends are equal
-- or reversed counts 1 throughout).
--
-- The bridge leg (as sql/search_hybrid.sql's): :bridge_terms (text[] of stems, or NULL: no
-- leg) are the identifiers the best doc passages of a first run name; their BM25 over the
-- postings ranks chunks of the kinds outside :dense_kinds only (the path prior applied
-- before ranking), each adding :w_bridge / (:c + rank_bridge).
--
-- Filters (:filtered = 1: :paths, :excludes GLOB arrays, :langs) apply inside both legs;
-- priors (:prior_paths / :prior, :named_roots / :root_prior) multiply the fused score;
-- identical files share one slot, `duplicates` listing the others (JSON text or NULL).
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
phrases AS MATERIALIZED (                    -- one row per MATCH phrase, with its IDF
    SELECT t.phrase, t.term,
           CASE WHEN x.idf <= 0.0 THEN CAST(1e-6 AS double precision) ELSE x.idf END AS idf
    FROM unnest(CAST(:terms AS text[])) WITH ORDINALITY AS t(term, phrase)
    CROSS JOIN fts_stats AS s
    CROSS JOIN LATERAL (SELECT count(*) AS hits FROM postings AS p WHERE p.term = t.term) AS h
    CROSS JOIN LATERAL (
        SELECT ln((CAST(s.n_chunks - h.hits AS double precision) + 0.5)
                  / (CAST(h.hits AS double precision) + 0.5)) AS idf) AS x
),
stats AS MATERIALIZED (                     -- FTS5's constants and its average row length
    SELECT CAST(1.2 AS double precision) AS k1, CAST(0.75 AS double precision) AS b,
           CAST(total_length AS double precision) / CAST(n_chunks AS double precision) AS avgdl
    FROM fts_stats
),
matches AS (                                 -- one row per (phrase, chunk) that holds it
    SELECT p.chunk_id, ph.phrase, ph.idf,
           CAST(:w_path AS double precision) * p.tf_path
           + CAST(:w_context AS double precision) * p.tf_context
           + CAST(:w_body AS double precision) * p.tf_body AS tf
    FROM phrases AS ph
    JOIN postings AS p ON p.term = ph.term
    WHERE CAST(:filtered AS integer) = 0 OR p.chunk_id IN (SELECT id FROM allowed)
),
bm25 AS (
    SELECT m.chunk_id,
           -1.0 * sum(m.idf * ((m.tf * (s.k1 + 1.0))
                               / (m.tf + s.k1 * ((1.0 - s.b)
                                                 + s.b * CAST(c.fts_length AS double precision)
                                                   / s.avgdl)))
                      ORDER BY m.phrase) AS score
    FROM matches AS m
    JOIN chunks AS c ON c.id = m.chunk_id
    CROSS JOIN stats AS s
    GROUP BY m.chunk_id
),
bm25_hits AS MATERIALIZED (
    SELECT chunk_id, score
    FROM bm25
    ORDER BY score, chunk_id
    LIMIT CAST(:depth AS integer)
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
bridge_phrases AS MATERIALIZED (             -- the bridge leg's phrases (:bridge_terms)
    SELECT t.phrase, t.term,
           CASE WHEN x.idf <= 0.0 THEN CAST(1e-6 AS double precision) ELSE x.idf END AS idf
    FROM unnest(CAST(:bridge_terms AS text[])) WITH ORDINALITY AS t(term, phrase)
    CROSS JOIN fts_stats AS s
    CROSS JOIN LATERAL (SELECT count(*) AS hits FROM postings AS p WHERE p.term = t.term) AS h
    CROSS JOIN LATERAL (
        SELECT ln((CAST(s.n_chunks - h.hits AS double precision) + 0.5)
                  / (CAST(h.hits AS double precision) + 0.5)) AS idf) AS x
),
bridge_bm25 AS (
    SELECT p.chunk_id,
           -1.0 * sum(ph.idf * ((m.tf * (s.k1 + 1.0))
                                / (m.tf + s.k1 * ((1.0 - s.b)
                                                  + s.b * CAST(c.fts_length AS double precision)
                                                    / s.avgdl)))
                      ORDER BY ph.phrase) AS score
    FROM bridge_phrases AS ph
    JOIN postings AS p ON p.term = ph.term
    CROSS JOIN LATERAL (
        SELECT CAST(:w_path AS double precision) * p.tf_path
               + CAST(:w_context AS double precision) * p.tf_context
               + CAST(:w_body AS double precision) * p.tf_body AS tf) AS m
    JOIN chunks AS c ON c.id = p.chunk_id
    CROSS JOIN stats AS s
    WHERE CAST(:filtered AS integer) = 0 OR p.chunk_id IN (SELECT id FROM allowed)
    GROUP BY p.chunk_id
),
bridge_hits AS MATERIALIZED (          -- the bridge leg: code the best doc passages name
    SELECT chunk_id, score
    FROM bridge_bm25
    ORDER BY score, chunk_id
    LIMIT CAST(:depth AS integer)
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
