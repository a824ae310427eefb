-- Lexical search on PostgreSQL: sql/search_lexical.sql with FTS5's BM25 computed over the
-- postings (migrations/postgresql/001_core.sql), so the same question ranks the same chunks
-- with the same scores as rag.db. Same parameters and result columns as the SQLite file,
-- except :terms in place of the MATCH expression.
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
-- the stored path or any tail of it after a '/' (ragdb_glob_any, migrations/postgresql/
-- 010_search.sql, matches as SQLite's GLOB), and :langs, a JSON array of languages; NULL
-- means no filter of that sort. Only allowed chunks are ranked.
--
-- Priors (as in sql/search_hybrid.sql): a file whose lower-cased path (ASCII letters only, as
-- SQLite's lower()) GLOBs one of :prior_paths gets :prior; when the question names projects
-- (:named_roots), a file under none of them gets :root_prior.
--
-- Identical files share one slot: of the chunks with the same file sha256 and the same range,
-- only the best ranked is kept, and `duplicates` lists the other files with those bytes (JSON
-- text, NULL when there are none). Ties break by chunk id, as in rag.db.
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
lexical AS (
    SELECT chunk_id, score
    FROM bm25
    ORDER BY score, chunk_id
    LIMIT greatest(CAST(:k AS integer), CAST(:depth AS integer))
),
scored AS (
    SELECT l.chunk_id,
           l.score
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
    FROM lexical AS l
    JOIN chunks AS c ON c.id = l.chunk_id
    JOIN files AS f ON f.id = c.file_id
),
ranked AS (                             -- one slot per distinct text range
    SELECT chunk_id, score
    FROM (SELECT chunk_id, score,
                 row_number() OVER (PARTITION BY copy_of ORDER BY score, chunk_id) AS nth
          FROM scored) AS slots
    WHERE nth = 1
    ORDER BY score, chunk_id
    LIMIT CAST(:k AS integer)
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       ranked.score, c.text, f.kind AS language,
       CASE WHEN f.sha256 = '' THEN NULL ELSE (
           SELECT CAST(json_agg(d.path ORDER BY d.path COLLATE "C") AS text)
           FROM files AS d WHERE d.sha256 = f.sha256 AND d.id <> f.id) END AS duplicates
FROM ranked
JOIN chunks AS c ON c.id = ranked.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY ranked.score, c.id;
