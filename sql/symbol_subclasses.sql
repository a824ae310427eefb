-- The classes that name one of :ids (symbol_names ids, a JSON array) as a base class, and
-- whether each defines :member itself (an override: its uses are its own).
SELECT e.qualified,
       EXISTS (SELECT 1 FROM symbols AS m
               WHERE m.name = :member AND m.qualified = e.qualified || '.' || :member)
FROM symbol_refs AS r
JOIN symbols AS e ON e.id = r.enclosing_id
WHERE r.target_id IN (SELECT value FROM json_each(:ids)) AND r.kind = 'inherit';
