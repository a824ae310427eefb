-- The recorded roots with the walk options and the start of their last run (index_paths: a
-- full rebuild walks every root again; a skip that run could have seen is not named again;
-- check_working_folder).
SELECT path, options, last_indexed_at FROM roots ORDER BY path;
