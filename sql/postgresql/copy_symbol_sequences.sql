-- After ragdb copy wrote definitions and their names with the source's ids: the next ids
-- follow them (a table that never had a row starts at 1).
SELECT setval(pg_get_serial_sequence('symbol_defs', 'id'),
              greatest(coalesce((SELECT max(id) FROM symbol_defs), 0), 1),
              EXISTS (SELECT 1 FROM symbol_defs)),
       setval(pg_get_serial_sequence('symbol_names', 'id'),
              greatest(coalesce((SELECT max(id) FROM symbol_names), 0), 1),
              EXISTS (SELECT 1 FROM symbol_names));
