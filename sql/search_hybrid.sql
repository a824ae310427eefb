-- Hybrid search: weighted Reciprocal Rank Fusion of BM25 (FTS5) and vector KNN (sqlite-vec).
--
--   score(chunk) = :w_lex / (:c + rank_lex) + :w_dense / (:c + rank_dense)
--
-- Each leg ranks its own :depth candidates with row_number(); the legs are joined on chunk id,
-- and a chunk missing from one leg gets nothing from it. Ranks, not ids or raw scores, are
-- fused: BM25 and cosine distance are on unrelated scales.
WITH lexical AS (
    SELECT rowid AS chunk_id,
           row_number() OVER (
               ORDER BY bm25(chunks_fts, :w_path, :w_context, :w_body), rowid
           ) AS rank
    FROM chunks_fts
    WHERE chunks_fts MATCH :match
    ORDER BY rank
    LIMIT :depth
),
dense AS (
    SELECT chunk_id,
           row_number() OVER (ORDER BY distance, chunk_id) AS rank
    FROM chunk_vectors
    WHERE embedding MATCH vec_int8(:query_vector)
      AND k = :depth
),
fused AS (
    SELECT coalesce(lexical.chunk_id, dense.chunk_id) AS chunk_id,
           coalesce(:w_lex / (:c + lexical.rank), 0.0)
             + coalesce(:w_dense / (:c + dense.rank), 0.0) AS score
    FROM lexical
    FULL OUTER JOIN dense ON dense.chunk_id = lexical.chunk_id
    ORDER BY score DESC, chunk_id
    LIMIT :k
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       fused.score, c.text
FROM fused
JOIN chunks AS c ON c.id = fused.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY fused.score DESC, c.id;
