-- The recorded roots' stored paths (indexing.check_working_folder, index_paths).
SELECT path FROM roots ORDER BY path;
