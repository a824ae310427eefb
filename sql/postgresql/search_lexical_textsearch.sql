-- Lexical search on PostgreSQL with the pg_textsearch option (settings('pg_lexical') =
-- 'pg_textsearch', sql/postgresql/fts_textsearch_index.sql): the BM25 index over
-- chunks_fts.doc ranks the chunks, with its own formula (Lucene's IDF, its own stems of the
-- english configuration), so the ranking is close to rag.db's, not the same: measured, not
-- assumed (README, PostgreSQL). :query_text is the question's informative terms, space
-- separated (ragdb.pg_search). Everything else as sql/postgresql/search_lexical.sql: the
-- same parameters, filters, priors, duplicate slots and result columns.
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
lexical AS MATERIALIZED (                 -- pg_textsearch: the BM25 index ranks
    SELECT chunk_id, score
    FROM (SELECT t.chunk_id,
                 t.doc <@> to_bm25query(CAST(:query_text AS text), 'chunks_fts_bm25') AS score
          FROM chunks_fts AS t
          WHERE CAST(:filtered AS integer) = 0 OR t.chunk_id IN (SELECT id FROM allowed)
          ORDER BY t.doc <@> to_bm25query(CAST(:query_text AS text), 'chunks_fts_bm25')
          LIMIT greatest(CAST(:k AS integer), CAST(:depth AS integer))) AS ranked_by_index
    WHERE score < 0                          -- 0: the chunk holds none of the terms
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
