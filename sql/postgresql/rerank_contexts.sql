-- The context (enclosing signatures or headings) of some chunks, for the reranker; the port
-- of sql/rerank_contexts.sql. ids: a JSON array of chunk ids.
SELECT id, context
FROM chunks
WHERE id IN (SELECT CAST(value AS bigint)
             FROM jsonb_array_elements_text(CAST(:ids AS jsonb)));
