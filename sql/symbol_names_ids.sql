-- The ids of qualified names, given as a JSON array of [qualified, last part] pairs (each
-- looked up by its last part, then compared whole).
-- Each last part is looked up once by its index (symbol_names_last: this expression), the
-- qualified names matched against a set (a join by last part alone compares every pair:
-- 10,000 definitions of `run`).
SELECT n.qualified, n.id
FROM symbol_names AS n
WHERE substr(n.qualified, length(rtrim(n.qualified, replace(n.qualified, '.', ''))) + 1)
      IN (SELECT DISTINCT json_extract(j.value, '$[1]') FROM json_each(:names) AS j)
  AND n.qualified IN (SELECT json_extract(j.value, '$[0]') FROM json_each(:names) AS j);
