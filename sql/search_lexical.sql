-- Lexical search: BM25 over the analysed text (see ragdb/tokenize.py) with a weight per column.
-- :match is an FTS5 expression of quoted terms built from the question; lower bm25() is better.
WITH lexical AS (
    SELECT rowid AS chunk_id,
           bm25(chunks_fts, :w_path, :w_context, :w_body) AS score
    FROM chunks_fts
    WHERE chunks_fts MATCH :match
    ORDER BY score
    LIMIT :k
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       lexical.score, c.text
FROM lexical
JOIN chunks AS c ON c.id = lexical.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY lexical.score;
