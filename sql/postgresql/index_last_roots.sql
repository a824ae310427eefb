-- The roots of the most recent index run that recorded any (JSON list), for re-indexing them.
SELECT roots FROM index_runs WHERE roots != '[]' ORDER BY id DESC LIMIT 1;
