-- Rebuild cached hits from their ids, in the cached order (columns as search_hybrid.sql).
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       CAST(cached.hit ->> 1 AS double precision) AS score, c.text, f.kind AS language,
       CASE WHEN f.sha256 = '' THEN NULL ELSE (
           SELECT CAST(json_agg(d.path ORDER BY d.path COLLATE "C") AS text)
           FROM files AS d WHERE d.sha256 = f.sha256 AND d.id <> f.id) END AS duplicates
FROM jsonb_array_elements(CAST(:hits AS jsonb)) WITH ORDINALITY AS cached(hit, nth)
JOIN chunks AS c ON c.id = CAST(cached.hit ->> 0 AS bigint)
JOIN files AS f ON f.id = c.file_id
ORDER BY cached.nth;
