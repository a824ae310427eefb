-- Dense search on PostgreSQL: sql/search_dense.sql's ranking of the dense leg's rows
-- (search_knn.sql: chunks by their nearest window, exact or HNSW, filtered already),
-- passed in as :dense_ids and :dense_distances, nearest first
-- (ragdb.pg_search.search_rows). Same result columns as the SQLite file.
--
-- Priors (as in sql/search_hybrid.sql): the similarity (1 - distance) times :prior for a file
-- whose lower-cased path GLOBs one of the SQLite file's prior_paths (given compiled:
-- :prior_likes, :prior_regex, sql/postgresql/search_glob_compile.sql), times :root_prior for
-- a file under none of :named_roots when the question names projects.
--
-- Identical files share one slot (same sha256, same range): the best ranked is kept and
-- `duplicates` lists the other files with those bytes (JSON text, NULL when none).
-- Equal scores are ordered by path and position (then chunk id), never by chunk id alone: the
-- order of ties must not depend on the order files were indexed in (a resumed or incremental
-- run answers like a clean one).
-- Planned once per connection: a generic plan (this transaction's plan_cache_mode, reset
-- by the next search's search_settings.sql; ragdb.pg_search prepares this file). Every
-- parameter is a value the plan reads, none a pattern to compile or a branch to prune:
-- at 10x the vLLM corpus the hybrid fusion took 4.7 ms a run, against 6.4 planned each time.
SELECT set_config('plan_cache_mode', 'force_generic_plan', true);

WITH dense AS (                             -- search_knn.sql's rows
    SELECT d.chunk_id, d.distance
    FROM unnest(CAST(:dense_ids AS bigint[]), CAST(:dense_distances AS double precision[]))
         AS d(chunk_id, distance)
),
scored AS (
    SELECT d.chunk_id, f.path, c.first_char,
           1.0 - (1.0 - d.distance)
           * CASE WHEN ragdb_glob_match(lower(f.path COLLATE "C"),
                                        CAST(:prior_likes AS text[]), CAST(:prior_regex AS text))
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
    FROM (SELECT chunk_id, distance, path, first_char,
                 row_number() OVER (PARTITION BY copy_of
                                    ORDER BY distance, path COLLATE "C", first_char, chunk_id) AS nth
          FROM scored) AS slots
    WHERE nth = 1
    ORDER BY distance, path COLLATE "C", first_char, chunk_id
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
ORDER BY ranked.distance, f.path COLLATE "C", c.first_char, c.id;
