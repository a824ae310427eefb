-- Hybrid search on PostgreSQL: sql/search_hybrid.sql's fusion, over the legs' hits passed in
-- as arrays, best first (ragdb.pg_search.search_rows): the lexical leg's as :hit_ids and
-- :hit_scores (search_bm25_hits.sql, FTS5's BM25 over the postings; or with the
-- pg_textsearch option, search_textsearch_hits.sql), the dense leg's as :dense_ids and
-- :dense_distances (search_knn.sql, exact or HNSW), and the bridge leg's as :bridge_ids and
-- :bridge_scores (the lexical leg's file on the bridge terms; empty: no leg). A search with
-- a bridge leg runs this twice and each leg's file once. Same parameters otherwise, same
-- result columns; with the default legs, the same scores and ties as rag.db.
--
--   score(chunk) = (:w_lex x margin / (:c + rank_lex) + :w_dense / (:c + rank_dense)
--                   + :w_bridge / (:c + rank_bridge) + :w_symbol / (:c + rank_symbol)) * priors
--
-- margin: the first lexical hit's BM25 over the second's, 1 to :margin_cap (1 for the others).
-- Each leg ranks its own :depth candidates (the dense leg's chunks by their nearest window);
-- the legs are joined on chunk id, and a chunk missing from one leg gets nothing from it.
-- A chunk of a kind outside :dense_kinds (JSON; NULL: the rule is off) gets :w_absent /
-- (:c + rank_lex) times the code gate in place of the dense term it cannot have (the gate:
-- the nearest window's distance from :gate_near to :gate_far, times the best code chunk's
-- BM25 over the best doc chunk's from :gate_low to :gate_high; a range whose ends are equal
-- or reversed counts 1 throughout; :gate_override, NULL or 0 to 1, forces it).
--
-- The bridge leg (as sql/search_hybrid.sql's): the hits of the identifiers the best doc
-- passages of a first run name rank the chunks of the kinds outside :dense_kinds only (the
-- path prior applied before ranking), each adding :w_bridge / (:c + rank_bridge).
--
-- The symbol leg (as sql/search_hybrid.sql's): search_symbol_hits.sql's chunks, which define
-- names the question writes, as :symbol_ids with how many of the names each defines
-- (:symbol_names_held; empty: no leg), ranked by that, then outside the prior paths first,
-- then by their lexical rank, each adding :w_symbol / (:c + rank_symbol).
--
-- The legs' files apply the filters (--path, --exclude, --lang); priors (the SQLite
-- file's prior_paths / :prior, :named_roots / :root_prior) multiply the fused score; the
-- path patterns come compiled, as :prior_likes and :prior_regex
-- (sql/postgresql/search_glob_compile.sql, once per connection: compiled as the statement
-- was planned they cost about 1.9 ms a run at 10x), matched against the path lower-cased in
-- the "C" collation (ASCII letters only, as SQLite's lower(); translate() of the 26 letters
-- gives the same text at 13 us a path, 100 times slower). Identical files share one slot,
-- `duplicates` listing the others (JSON text or NULL).
-- Equal scores are ordered by path and position (then chunk id), never by chunk id alone: the
-- order of ties must not depend on the order files were indexed in (a resumed or incremental
-- run answers like a clean one).
-- Planned once per connection: a generic plan (this transaction's plan_cache_mode, reset
-- by the next search's search_settings.sql; ragdb.pg_search prepares this file). Every
-- parameter is a value the plan reads, none a pattern to compile or a branch to prune:
-- at 10x the vLLM corpus the hybrid fusion took 4.7 ms a run, against 6.4 planned each time.
SELECT set_config('plan_cache_mode', 'force_generic_plan', true);

WITH bm25_hits AS (                   -- the lexical leg's hits (search_*_hits.sql)
    SELECT h.chunk_id, h.score
    FROM unnest(CAST(:hit_ids AS bigint[]), CAST(:hit_scores AS double precision[]))
         AS h(chunk_id, score)
),
lexical AS MATERIALIZED (
    SELECT h.chunk_id, h.score,
           row_number() OVER (ORDER BY h.score, f.path COLLATE "C", c.first_char, h.chunk_id) AS rank,
           CASE WHEN row_number() OVER (ORDER BY h.score, f.path COLLATE "C", c.first_char, h.chunk_id) = 1   -- the margin
                THEN LEAST(CAST(:margin_cap AS double precision), GREATEST(1.0, coalesce(
                         h.score / nullif(lead(h.score) OVER (ORDER BY h.score, f.path COLLATE "C", c.first_char, h.chunk_id), 0),
                         1.0)))
                ELSE 1.0 END AS margin,
           CAST(:dense_kinds AS jsonb) IS NOT NULL
             AND f.kind NOT IN (SELECT jsonb_array_elements_text(CAST(:dense_kinds AS jsonb)))
             AS unembedded
    FROM bm25_hits AS h
    JOIN chunks AS c ON c.id = h.chunk_id
    JOIN files AS f ON f.id = c.file_id
),
dense AS MATERIALIZED (                 -- search_knn.sql's rows: the first :depth
    SELECT d.chunk_id, d.distance,
           row_number() OVER (ORDER BY d.distance, f.path COLLATE "C", c.first_char,
                                       d.chunk_id) AS rank
    FROM unnest(CAST(:dense_ids AS bigint[]), CAST(:dense_distances AS double precision[]))
         AS d(chunk_id, distance)
    JOIN chunks AS c ON c.id = d.chunk_id
    JOIN files AS f ON f.id = c.file_id
    ORDER BY rank
    LIMIT CAST(:depth AS integer)
),
bridge_hits AS (                 -- the bridge leg's: the same file, the bridge terms
    SELECT h.chunk_id, h.score
    FROM unnest(CAST(:bridge_ids AS bigint[]), CAST(:bridge_scores AS double precision[]))
         AS h(chunk_id, score)
),
bridge AS MATERIALIZED (
    SELECT h.chunk_id,
           row_number() OVER (
               ORDER BY h.score
                        * CASE WHEN ragdb_glob_match(lower(f.path COLLATE "C"),
                                                     CAST(:prior_likes AS text[]),
                                                     CAST(:prior_regex AS text))
                               THEN CAST(:prior AS double precision) ELSE 1.0 END,
                        f.path COLLATE "C", c.first_char, h.chunk_id) AS rank
    FROM bridge_hits AS h
    JOIN chunks AS c ON c.id = h.chunk_id
    JOIN files AS f ON f.id = c.file_id
    WHERE CAST(:dense_kinds AS jsonb) IS NOT NULL
      AND f.kind NOT IN (SELECT jsonb_array_elements_text(CAST(:dense_kinds AS jsonb)))
),
symbol AS MATERIALIZED (                -- search_symbol_hits.sql's rows, ranked
    SELECT d.chunk_id,
           row_number() OVER (
               ORDER BY d.names DESC,
                        coalesce(ragdb_glob_match(lower(f.path COLLATE "C"),
                                                  CAST(:prior_likes AS text[]),
                                                  CAST(:prior_regex AS text)), false),
                        coalesce(l.rank, CAST(:depth AS integer) + 1),
                        f.path COLLATE "C", c.first_char, d.chunk_id) AS rank
    FROM unnest(CAST(:symbol_ids AS bigint[]),
                CAST(:symbol_names_held AS double precision[])) AS d(chunk_id, names)
    JOIN chunks AS c ON c.id = d.chunk_id
    JOIN files AS f ON f.id = c.file_id
    LEFT JOIN lexical AS l ON l.chunk_id = d.chunk_id
    ORDER BY rank
    LIMIT CAST(:depth AS integer)
),
gate AS (                               -- 0 to 1: how much the question looks like one on code
    SELECT CASE WHEN CAST(:gate_override AS double precision) IS NOT NULL  -- forced (benchmarks)
                THEN CAST(:gate_override AS double precision)
                ELSE
           CASE WHEN CAST(:gate_far AS double precision)
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
                              - CAST(:gate_low AS double precision)))) END END AS code
    FROM (SELECT min(CASE WHEN unembedded THEN score END) AS code,   -- bm25: lower is better
                 min(CASE WHEN NOT unembedded THEN score END) AS docs
          FROM lexical) AS best
),
joined AS (
    SELECT coalesce(lexical.chunk_id, dense.chunk_id, bridge.chunk_id, symbol.chunk_id)
             AS chunk_id,
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
                                                              + bridge.rank), 0.0)
             + coalesce(CAST(:w_symbol AS double precision) / (CAST(:c AS double precision)
                                                              + symbol.rank), 0.0) AS score
    FROM lexical
    FULL OUTER JOIN dense ON dense.chunk_id = lexical.chunk_id
    FULL OUTER JOIN bridge ON bridge.chunk_id = coalesce(lexical.chunk_id, dense.chunk_id)
    FULL OUTER JOIN symbol
      ON symbol.chunk_id = coalesce(lexical.chunk_id, dense.chunk_id, bridge.chunk_id)
),
scored AS (
    SELECT j.chunk_id, f.path, c.first_char,
           j.score
           * CASE WHEN ragdb_glob_match(lower(f.path COLLATE "C"),
                                        CAST(:prior_likes AS text[]), CAST(:prior_regex AS text))
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
    FROM (SELECT chunk_id, score, path, first_char,
                 row_number() OVER (PARTITION BY copy_of
                                    ORDER BY score DESC, path COLLATE "C", first_char, chunk_id) AS nth
          FROM scored) AS slots
    WHERE nth = 1
    ORDER BY score DESC, path COLLATE "C", first_char, chunk_id
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
ORDER BY fused.score DESC, f.path COLLATE "C", c.first_char, c.id;
