-- Chunk ids are never reused: the next one is past every id the source ever handed out.
UPDATE sqlite_sequence SET seq = max(seq, :seq) WHERE name = 'chunks';
INSERT INTO sqlite_sequence (name, seq)
SELECT 'chunks', :seq WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'chunks');
