-- The recorded roots with the walk options of their last run (index_paths: a full rebuild
-- walks every root again; check_working_folder).
SELECT path, options FROM roots ORDER BY path;
