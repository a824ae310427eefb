COPY postings (term, chunk_id, tf_path, tf_context, tf_body) FROM STDIN;
