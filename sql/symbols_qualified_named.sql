-- The qualified names of every definition named :name.
SELECT n.qualified
FROM symbol_names AS n
JOIN symbol_defs AS s ON s.qualified_id = n.id
WHERE substr(n.qualified, length(rtrim(n.qualified, replace(n.qualified, '.', ''))) + 1) = :name;
