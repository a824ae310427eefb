COPY fts_common_terms (term) FROM STDIN;
