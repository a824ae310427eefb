-- title: Largest files
-- description: The 50 largest indexed files by size on disk, with how many chunks each became.
SELECT f.id AS file_id,
       f.path,
       f.kind,
       f.size,
       f.n_chars,
       (SELECT count(*) FROM chunks AS c WHERE c.file_id = f.id) AS chunks
FROM files AS f
ORDER BY f.size DESC, f.path
LIMIT 50
