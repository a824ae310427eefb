-- title: Directories
-- description: Indexed files grouped by directory (a facet Datasette cannot compute on a table): files, chunks and characters per directory.
WITH per_file AS (
    SELECT rtrim(f.path, replace(f.path, '/', '')) AS dir,
           f.n_chars,
           (SELECT count(*) FROM chunks AS c WHERE c.file_id = f.id) AS chunks
    FROM files AS f
)
SELECT dir,
       count(*) AS files,
       sum(chunks) AS chunks,
       sum(n_chars) AS characters
FROM per_file
GROUP BY dir
ORDER BY dir
