-- One chunk: its row, then its analysed (identifier-split) text, whose rowid ties it to
-- chunks.id. Run with executemany, one parameter set per chunk.
INSERT INTO chunks (file_id, first_char, last_char, start_line, end_line, kind, context, text)
VALUES (:file_id, :first_char, :last_char, :start_line, :end_line, :kind, :context, :text);
INSERT INTO chunks_fts (rowid, path, context, body)
VALUES (last_insert_rowid(), :path, :context_terms, :body);
