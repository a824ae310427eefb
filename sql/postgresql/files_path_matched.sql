-- Whether any indexed file matches one --path filter (:paths, its JSON array of GLOBs), by
-- the search's rule (ragdb_allowed_files, migration 011), as sql/files_path_matched.sql.
SELECT EXISTS (
    SELECT 1 FROM ragdb_allowed_files(NULL, CAST(:paths AS jsonb), NULL)
);
