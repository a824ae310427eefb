SELECT path, added_at, last_indexed_at, options FROM roots ORDER BY path;
