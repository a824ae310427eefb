-- The ids of qualified names, given as a JSON array of [qualified, last part] pairs (each
-- looked up by its last part, then compared whole).
SELECT n.qualified, n.id
FROM json_each(:names) AS j
JOIN symbol_names AS n
  ON n.last = json_extract(j.value, '$[1]') AND n.qualified = json_extract(j.value, '$[0]');
