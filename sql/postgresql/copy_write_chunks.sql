-- fts_length: FTS5's row length of the chunk (tokens of its path, context and body).
COPY chunks (id, file_id, first_char, last_char, start_line, end_line, kind, context, text,
             fts_length) FROM STDIN;
