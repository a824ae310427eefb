-- The first id an index run gives the definitions it writes (it holds the index lock).
SELECT coalesce(max(id), 0) + 1 FROM symbol_defs;
