-- Lexical search on PostgreSQL: sql/search_lexical.sql's ranking of the lexical leg's hits,
-- passed in as :hit_ids and :hit_scores, best first (ragdb.pg_search.search_rows): from
-- search_bm25_hits.sql (the default: FTS5's BM25 over the postings, so the same question
-- ranks the same chunks with the same scores as rag.db) or, with the pg_textsearch option
-- (settings('pg_lexical') = 'pg_textsearch'), from search_textsearch_hits.sql (its BM25
-- index, its own formula: close to rag.db's ranking, not the same). The hits are filtered
-- already (--path, --exclude, --lang). Same result columns as the SQLite file.
--
-- Priors (as in sql/search_hybrid.sql): a file whose lower-cased path (ASCII letters only, as
-- SQLite's lower()) GLOBs one of the SQLite file's prior_paths (given compiled: :prior_likes,
-- :prior_regex, sql/postgresql/search_glob_compile.sql) gets :prior; when the question names
-- projects (:named_roots), a file under none of them gets :root_prior.
--
-- Identical files share one slot: of the chunks with the same file sha256 and the same range,
-- only the best ranked is kept, and `duplicates` lists the other files with those bytes (JSON
-- text, NULL when there are none). Ties break by chunk id, as in rag.db.
-- Equal scores are ordered by path and position (then chunk id), never by chunk id alone: the
-- order of ties must not depend on the order files were indexed in (a resumed or incremental
-- run answers like a clean one).
-- Planned once per connection: a generic plan (this transaction's plan_cache_mode, reset
-- by the next search's search_settings.sql; ragdb.pg_search prepares this file). Every
-- parameter is a value the plan reads, none a pattern to compile or a branch to prune:
-- at 10x the vLLM corpus the hybrid fusion took 4.7 ms a run, against 6.4 planned each time.
SELECT set_config('plan_cache_mode', 'force_generic_plan', true);

WITH lexical AS (                                -- search_textsearch_hits.sql's hits
    SELECT h.chunk_id, h.score
    FROM unnest(CAST(:hit_ids AS bigint[]), CAST(:hit_scores AS double precision[]))
         AS h(chunk_id, score)
),
scored AS (
    SELECT l.chunk_id, f.path, c.first_char,
           l.score
           * CASE WHEN ragdb_glob_match(lower(f.path COLLATE "C"),
                                        CAST(:prior_likes AS text[]), CAST(:prior_regex AS text))
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
    FROM (SELECT chunk_id, score, path, first_char,
                 row_number() OVER (PARTITION BY copy_of
                                    ORDER BY score, path COLLATE "C", first_char, chunk_id) AS nth
          FROM scored) AS slots
    WHERE nth = 1
    ORDER BY score, path COLLATE "C", first_char, chunk_id
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
ORDER BY ranked.score, f.path COLLATE "C", c.first_char, c.id;
