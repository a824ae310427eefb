-- After an index run removed definitions or uses: the names none of them names any more.
DELETE FROM symbol_names
WHERE NOT EXISTS (SELECT 1 FROM symbol_refs AS r WHERE r.target_id = symbol_names.id)
  AND NOT EXISTS (SELECT 1 FROM symbol_refs AS r WHERE r.alias_id = symbol_names.id)
  AND NOT EXISTS (SELECT 1 FROM symbol_defs AS d WHERE d.qualified_id = symbol_names.id);
