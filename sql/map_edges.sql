-- The reference graph: each definition, the qualified names it uses and how often.
SELECT r.enclosing_id, t.qualified, count(*)
FROM symbol_refs AS r
JOIN symbol_names AS t ON t.id = r.target_id
WHERE r.enclosing_id IS NOT NULL AND r.target_id IS NOT NULL
GROUP BY r.enclosing_id, t.qualified;
