-- The context (enclosing signatures or headings, as the chunker wrote it) of some chunks: what
-- the reranker reads before a candidate's text (ragdb/rerank.py). :ids is a JSON array of
-- chunk ids.
SELECT id, context
FROM chunks
WHERE id IN (SELECT value FROM json_each(:ids));
