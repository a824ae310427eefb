-- benchmarks/bench_code_gate.py: the two inputs of sql/search_hybrid.sql's code gate for one
-- question, as that file computes them (unfiltered search; same named parameters as
-- Searcher.plan gives it): the nearest dense window's distance (NULL: no window within
-- :max_distance; the gate reads :max_distance then) and the best code and best docs BM25 of
-- the lexical leg (FTS5's bm25: negative, lower is better; NULL: no hit of that kind).
WITH bm25_hits AS MATERIALIZED (
    SELECT rowid AS chunk_id,
           bm25(chunks_fts, :w_path, :w_context, :w_body) AS score
    FROM chunks_fts
    WHERE chunks_fts MATCH :match
    ORDER BY score
    LIMIT :depth
),
lexical AS MATERIALIZED (
    SELECT h.score,
           :dense_kinds IS NOT NULL
             AND f.kind NOT IN (SELECT value FROM json_each(:dense_kinds)) AS unembedded
    FROM bm25_hits AS h
    JOIN chunks AS c ON c.id = h.chunk_id
    JOIN files AS f ON f.id = c.file_id
),
knn AS MATERIALIZED (
    SELECT chunk_id, distance
    FROM chunk_vectors
    WHERE embedding MATCH vec_int8(:query_vector)
      AND k = :knn_depth
)
SELECT (SELECT min(distance) FROM knn WHERE distance <= :max_distance) AS nearest,
       (SELECT min(score) FROM lexical WHERE unembedded) AS code,
       (SELECT min(score) FROM lexical WHERE NOT unembedded) AS docs;
