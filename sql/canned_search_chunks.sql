-- title: Full-text search
-- description: BM25 search over the chunks with ragdb's identifier splitting applied to the query (trust_remote_code finds "trust remote code"), as `ragdb search --mode lexical` ranks them. Lower scores are better.
SELECT c.id AS chunk_id,
       f.path,
       c.file_id,
       c.start_line,
       c.end_line,
       c.kind,
       round(bm25(chunks_fts, 2.0, 1.0, 1.0), 3) AS score,
       c.text
FROM chunks_fts
JOIN chunks AS c ON c.id = chunks_fts.rowid
JOIN files AS f ON f.id = c.file_id
WHERE chunks_fts MATCH ragdb_fts_query(:q)
ORDER BY bm25(chunks_fts, 2.0, 1.0, 1.0)
LIMIT 20
