-- Rebuild cached hits from their ids, in the cached order (columns as search_*.sql).
-- (pgcore's port, for its own end-to-end runs; pgsearch owns the read side.)
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       CAST(cached.value ->> 1 AS double precision) AS score, c.text, f.kind AS language,
       (SELECT CAST(json_agg(d.path ORDER BY d.path) AS text)
        FROM files AS d
        WHERE f.sha256 <> '' AND d.sha256 = f.sha256 AND d.id <> f.id
        HAVING count(*) > 0) AS duplicates
FROM jsonb_array_elements(CAST(:hits AS jsonb)) WITH ORDINALITY AS cached(value, n)
JOIN chunks AS c ON c.id = CAST(cached.value ->> 0 AS bigint)
JOIN files AS f ON f.id = c.file_id
ORDER BY cached.n;
