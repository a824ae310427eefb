-- ragdb copy: what the target database holds, read before anything is written. ragdb marks
-- its databases with ragdb_schema; a database with tables and no mark is another
-- application's, and ragdb leaves it untouched.
SELECT to_regclass('ragdb_schema') IS NOT NULL AS is_ragdb,
       (SELECT count(*) FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f'))
           AS tables;
