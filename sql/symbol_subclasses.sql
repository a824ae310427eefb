-- The classes that name one of :ids (symbol_names ids, a JSON array) as a base class.
SELECT e.qualified
FROM symbol_refs AS r
JOIN symbols AS e ON e.id = r.enclosing_id
WHERE r.target_id IN (SELECT value FROM json_each(:ids)) AND r.kind = 'inherit';
