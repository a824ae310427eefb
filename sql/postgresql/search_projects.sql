-- The projects a question can name (SearchParams.root_prior), as sql/search_projects.sql:
-- every root, by its folder name, and, for a root that holds no file directly (a folder of
-- repositories), each of its first-level folders. name is the folder name, path the stored
-- path prefix of its files. (SQLite's instr is strpos here; substr, length, rtrim and
-- replace count characters in both.)
WITH tops AS (
    SELECT r.path AS root,
           CASE WHEN r.path = '.' THEN f.path ELSE substr(f.path, length(r.path) + 2) END AS rest
    FROM roots AS r
    JOIN files AS f
      ON r.path = '.' OR substr(f.path, 1, length(r.path) + 1) = r.path || '/'
),
collections AS (                        -- roots whose files all lie in subfolders
    SELECT root FROM tops GROUP BY root HAVING min(strpos(rest, '/')) > 0
)
SELECT replace(rtrim(r.path, '/'), rtrim(r.path, replace(r.path, '/', '')), '') AS name,
       r.path AS path
FROM roots AS r
WHERE r.path <> '.'
UNION
SELECT DISTINCT substr(t.rest, 1, strpos(t.rest, '/') - 1),
       CASE WHEN t.root = '.' THEN '' ELSE t.root || '/' END
           || substr(t.rest, 1, strpos(t.rest, '/') - 1)
FROM tops AS t
WHERE t.root IN (SELECT root FROM collections);
