-- Lexical search: BM25 over the analysed text (see ragdb/tokenize.py) with a weight per column.
-- :match is an FTS5 expression of quoted terms built from the question; lower bm25() is better.
--
-- Filters (:filtered = 1): :paths, a JSON array of GLOB patterns matched against the stored path
-- or any tail of it after a '/', and :langs, a JSON array of languages (files.kind); NULL means
-- no filter of that sort. Both legs apply them inside their search: the lexical leg keeps only
-- allowed chunks among its matches before ranking, the dense leg's KNN runs over the allowed
-- chunks' windows only (sqlite-vec's IN constraint on the chunk_id metadata column).
WITH allowed_files AS MATERIALIZED (         -- the filters: --path GLOB and --lang NAME
    SELECT f.id FROM files AS f
    WHERE :filtered = 1
      AND (:langs IS NULL OR f.kind IN (SELECT value FROM json_each(:langs)))
      AND (:paths IS NULL OR EXISTS (
              SELECT 1 FROM json_each(:paths) AS p
              WHERE f.path GLOB p.value OR f.path GLOB '*/' || p.value))
),
allowed AS MATERIALIZED (
    SELECT c.id FROM chunks AS c WHERE c.file_id IN (SELECT id FROM allowed_files)
),
lexical AS (
    SELECT rowid AS chunk_id,
           bm25(chunks_fts, :w_path, :w_context, :w_body) AS score
    FROM chunks_fts
    WHERE chunks_fts MATCH :match
      AND (:filtered = 0 OR +rowid IN (SELECT id FROM allowed))
    ORDER BY score
    LIMIT :k
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       lexical.score, c.text, f.kind AS language
FROM lexical
JOIN chunks AS c ON c.id = lexical.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY lexical.score;
