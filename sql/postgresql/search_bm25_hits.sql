-- The exact lexical leg on PostgreSQL (settings('pg_lexical') = 'postings', the default):
-- FTS5's BM25 computed over the postings (migrations/postgresql/001_core.sql), so the same
-- terms rank the same chunks with the same scores as rag.db's MATCH. Its hits, best first,
-- go to search_lexical.sql or search_hybrid.sql as hit_ids and hit_scores, and with the
-- bridge terms as :terms, to search_hybrid.sql as bridge_ids and bridge_scores
-- (ragdb.pg_search.search_rows). :hits_limit: how many.
--
-- :terms is an array (text[]) of the porter stems of the question's informative terms, one
-- per phrase of the SQLite MATCH expression, in its order (ragdb.pg_search.query_stems; an
-- array, not JSON, so the planner knows how many there are): a stem
-- that two terms share counts twice, as two phrases do in FTS5. FTS5's bm25() is, per phrase
-- and chunk, summed over the phrases in order and negated (lower is better):
--   idf(term) * tf * (k1 + 1) / (tf + k1 * ((1 - b) + b * dl / avgdl))
--   tf    = :w_path * tf_path + :w_context * tf_context + :w_body * tf_body
--   idf   = ln((N - n + 0.5) / (n + 0.5)), 1e-6 where that is <= 0
-- with k1 = 1.2, b = 0.75, N = fts_stats.n_chunks, n = the chunks holding the term (over the
-- whole index, filtered or not: as FTS5), dl = chunks.fts_length, avgdl =
-- fts_stats.total_length / N; all float8, in FTS5's order of operations.
--
-- Filters (:filtered = 1): :paths and :excludes, JSON arrays of GLOB patterns matched against
-- the stored path or any tail of it after a '/', and :langs, a JSON array of languages; NULL
-- means no filter of that sort (ragdb_allowed_files, migrations/postgresql/
-- 011_allowed_files.sql, matches as SQLite's GLOB). Only allowed chunks are ranked.
WITH allowed_files AS MATERIALIZED (  -- the filters: --path, --exclude and --lang
    SELECT f.id
    FROM ragdb_allowed_files(CAST(:langs AS jsonb), CAST(:paths AS jsonb),
                             CAST(:excludes AS jsonb)) AS f
    WHERE CAST(:filtered AS integer) = 1
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
)
SELECT chunk_id, score
FROM bm25
ORDER BY score, chunk_id
LIMIT CAST(:hits_limit AS integer);
