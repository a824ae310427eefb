-- Rebuild cached hits from their ids, in the cached order (columns as sql/search_hybrid.sql).
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       cached.value ->> '$[1]' AS score, c.text, f.kind AS language,
       CASE WHEN f.sha256 = '' THEN NULL ELSE (
           SELECT json_group_array(d.path) FROM (
               SELECT d.path FROM files AS d WHERE d.sha256 = f.sha256 AND d.id <> f.id
               ORDER BY d.path) AS d
           HAVING count(*) > 0) END AS duplicates
FROM json_each(:hits) AS cached
JOIN chunks AS c ON c.id = cached.value ->> '$[0]'
JOIN files AS f ON f.id = c.file_id
ORDER BY cached.key;
