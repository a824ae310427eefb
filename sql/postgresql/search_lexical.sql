-- Lexical search: FTS5's BM25 over postings (k1 1.2, b 0.75, IDF ln((N - n + 0.5) / (n + 0.5))
-- floored at 1e-6, tf = :w_path * tf_path + :w_context * tf_context + :w_body * tf_body, row
-- length = chunks.fts_length, N and the average length from fts_stats), negated as bm25()
-- is: lower is better. :terms is a JSON array of the query's stemmed tokens.
--
-- (pgcore's minimal port, for its own end-to-end runs: no --path/--lang/--exclude filters,
-- and the priors' GLOBs read as LIKE patterns. pgsearch owns the read side: take its file.)
WITH q AS MATERIALIZED (
    SELECT DISTINCT t.term
    FROM jsonb_array_elements_text(CAST(:terms AS jsonb)) AS t(term)
),
stats AS MATERIALIZED (
    SELECT CAST(n_chunks AS double precision) AS n,
           CASE WHEN n_chunks > 0 THEN CAST(total_length AS double precision) / n_chunks
                ELSE 1.0 END AS avgdl
    FROM fts_stats
),
idf AS MATERIALIZED (
    SELECT p.term,
           greatest(ln((s.n - count(*) + 0.5) / (count(*) + 0.5)), 1e-6) AS idf
    FROM q JOIN postings AS p ON p.term = q.term, stats AS s
    GROUP BY p.term, s.n
),
lexical AS MATERIALIZED (
    SELECT p.chunk_id,
           -sum(i.idf * (w.tf * 2.2) / (w.tf + 1.2 * (0.25 + 0.75 * c.fts_length / s.avgdl)))
             AS score
    FROM idf AS i
    JOIN postings AS p ON p.term = i.term
    JOIN chunks AS c ON c.id = p.chunk_id
    CROSS JOIN stats AS s
    CROSS JOIN LATERAL (SELECT :w_path * p.tf_path + :w_context * p.tf_context
                               + :w_body * p.tf_body AS tf) AS w
    GROUP BY p.chunk_id
    ORDER BY score, p.chunk_id
    LIMIT greatest(:k, :depth)
),
scored AS (
    SELECT l.chunk_id,
           l.score
           * CASE WHEN CAST(:prior_paths AS jsonb) IS NOT NULL AND EXISTS (
                       SELECT 1 FROM jsonb_array_elements_text(CAST(:prior_paths AS jsonb)) AS p
                       WHERE lower(f.path) LIKE replace(replace(p.value, '*', '%'), '?', '_'))
                  THEN :prior ELSE 1.0 END
           * CASE WHEN CAST(:named_roots AS jsonb) IS NOT NULL AND NOT EXISTS (
                       SELECT 1 FROM jsonb_array_elements_text(CAST(:named_roots AS jsonb)) AS r
                       WHERE substr(f.path, 1, length(r.value) + 1) = r.value || '/')
                  THEN :root_prior ELSE 1.0 END AS score,
           CASE WHEN f.sha256 = '' THEN 'chunk ' || c.id
                ELSE f.sha256 || ' ' || c.first_char || ' ' || c.last_char END AS copy_of
    FROM lexical AS l
    JOIN chunks AS c ON c.id = l.chunk_id
    JOIN files AS f ON f.id = c.file_id
),
ranked AS (                             -- one slot per distinct text range
    SELECT chunk_id, score
    FROM (SELECT chunk_id, score,
                 row_number() OVER (PARTITION BY copy_of ORDER BY score, chunk_id) AS nth
          FROM scored) AS s
    WHERE nth = 1
    ORDER BY score, chunk_id
    LIMIT :k
)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       ranked.score, c.text, f.kind AS language,
       (SELECT CAST(json_agg(d.path ORDER BY d.path) AS text)
        FROM files AS d
        WHERE f.sha256 <> '' AND d.sha256 = f.sha256 AND d.id <> f.id
        HAVING count(*) > 0) AS duplicates
FROM ranked
JOIN chunks AS c ON c.id = ranked.chunk_id
JOIN files AS f ON f.id = c.file_id
ORDER BY ranked.score, c.id;
