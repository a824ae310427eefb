-- The highest chunk id ever handed out (chunk ids are never reused), for rag.db's
-- AUTOINCREMENT sequence (NULL last value: the sequence was never used).
SELECT greatest(coalesce(pg_sequence_last_value(
                    CAST(pg_get_serial_sequence('chunks', 'id') AS regclass)), 0),
                coalesce((SELECT max(id) FROM chunks), 0)) AS chunks;
