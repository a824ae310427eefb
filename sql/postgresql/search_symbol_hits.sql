-- The symbol leg on PostgreSQL (sql/search_hybrid.sql's `named` and `symbol`): the chunks
-- holding the definitions of the names a question writes (:symbol_names, a JSON array;
-- ragdb.tokenize.written_names), a name defined more than :symbol_max times in the index
-- left out, each chunk with how many of the names it defines. Its rows go to
-- search_hybrid.sql as symbol_ids and symbol_names_held, which ranks them
-- (ragdb.pg_search.search_rows); run once for both runs of a bridged search.
--
-- Filters (:filtered = 1): :paths, :excludes and :langs as in search_bm25_hits.sql
-- (ragdb_allowed_files, migrations/postgresql/011_allowed_files.sql).
WITH allowed_files AS MATERIALIZED (  -- the filters: --path, --exclude and --lang
    SELECT f.id
    FROM ragdb_allowed_files(CAST(:langs AS jsonb), CAST(:paths AS jsonb),
                             CAST(:excludes AS jsonb)) AS f
    WHERE CAST(:filtered AS integer) = 1
),
named AS MATERIALIZED (               -- the names that point at a definition
    SELECT q.name
    FROM jsonb_array_elements_text(CAST(:symbol_names AS jsonb)) AS q(name)
    WHERE (SELECT count(*) FROM symbols AS s WHERE s.name = q.name)
          BETWEEN 1 AND CAST(:symbol_max AS integer)
)
SELECT s.chunk_id, CAST(count(DISTINCT s.name) AS double precision) AS names
FROM symbols AS s
WHERE s.name IN (SELECT name FROM named)
  AND s.chunk_id IS NOT NULL
  AND (CAST(:filtered AS integer) = 0 OR s.file_id IN (SELECT id FROM allowed_files))
GROUP BY s.chunk_id
ORDER BY names DESC, s.chunk_id;
