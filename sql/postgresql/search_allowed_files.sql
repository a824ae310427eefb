-- The ids of the files a search's filters allow (ragdb_allowed_files, migration 011), as one
-- array for sql/postgresql/search_textsearch_hits.sql's allowed_file_ids (run only where a
-- filter applies: ragdb.pg_search.search_rows).
SELECT coalesce(array_agg(f.id ORDER BY f.id), CAST('{}' AS bigint[]))
FROM ragdb_allowed_files(CAST(:langs AS jsonb), CAST(:paths AS jsonb),
                         CAST(:excludes AS jsonb)) AS f;
