-- ragdb copy, rag.db -> PostgreSQL: each chunk with its full-text row exactly as FTS5 holds
-- it (path, context, body: the analysed text the postings are made from), in id order.
SELECT c.id, c.file_id, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       c.context, c.text, t.path, t.context, t.body
FROM chunks AS c
LEFT JOIN chunks_fts AS t ON t.rowid = c.id
ORDER BY c.id;
