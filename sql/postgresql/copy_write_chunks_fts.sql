COPY chunks_fts (chunk_id, path, context, body) FROM STDIN;
