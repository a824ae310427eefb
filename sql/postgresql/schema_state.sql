-- What opening a database must know before it writes anything (ragdb.postgres._open): the
-- schema ragdb's tables go in (the first of search_path), whether it holds ragdb's marker
-- table, how many relations it holds besides, and whether pgvector is enabled or available.
SELECT current_schema() AS schema_name,
       EXISTS (SELECT 1 FROM pg_catalog.pg_tables
               WHERE schemaname = current_schema() AND tablename = 'ragdb_schema') AS is_ragdb,
       (SELECT count(*) FROM pg_catalog.pg_class AS c
        JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
       ) AS relations,
       EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'vector') AS has_vector,
       EXISTS (SELECT 1 FROM pg_catalog.pg_available_extensions WHERE name = 'vector'
              ) AS vector_available;
