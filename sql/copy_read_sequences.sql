-- The highest chunk id ever handed out (AUTOINCREMENT: never reused), and the highest ids of
-- the other tables, so the copy hands out the same next ids.
SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0),
           coalesce((SELECT max(id) FROM chunks), 0)) AS chunks,
       coalesce((SELECT max(id) FROM files), 0) AS files,
       coalesce((SELECT max(id) FROM index_runs), 0) AS index_runs;
