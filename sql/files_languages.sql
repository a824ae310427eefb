-- The languages the index holds (files.kind), for a one-line refusal of a --lang it does not.
SELECT DISTINCT kind FROM files ORDER BY kind;
