-- The next ids are the source's next ids (chunk ids are never reused). setval(seq, n, true)
-- hands out n + 1 next; a table that never had a row starts at 1.
SELECT setval(pg_get_serial_sequence('files', 'id'),
              greatest(CAST(:files AS bigint), 1), CAST(:files AS bigint) > 0),
       setval(pg_get_serial_sequence('chunks', 'id'),
              greatest(CAST(:chunks AS bigint), 1), CAST(:chunks AS bigint) > 0),
       setval(pg_get_serial_sequence('index_runs', 'id'),
              greatest(CAST(:index_runs AS bigint), 1), CAST(:index_runs AS bigint) > 0);
