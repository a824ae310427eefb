COPY roots (path, added_at, last_indexed_at, options) FROM STDIN;
