-- The postings of a batch of chunks (ragdb.postings: FTS5's porter tokens, counted per
-- column), written by COPY: 1.7 million rows for the vLLM corpus.
COPY postings (term, chunk_id, tf_path, tf_context, tf_body) FROM STDIN;
