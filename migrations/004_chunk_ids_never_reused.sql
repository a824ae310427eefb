-- Chunk ids are never reused (AUTOINCREMENT). A plain INTEGER PRIMARY KEY hands out max+1
-- again after the chunks holding the highest ids are deleted, so an edited file's new chunks
-- could take the ids of its old ones, and their old vectors (keyed by chunk id) looked current.
-- SQLite cannot change a primary key in place: the table is rebuilt with the same ids, so the
-- full-text rows (rowid = chunks.id) and the vectors keep pointing at the right chunks.
CREATE TABLE chunks_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id     INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    first_char  INTEGER NOT NULL,            -- inclusive
    last_char   INTEGER NOT NULL,            -- exclusive: text == file_text[first_char:last_char]
    start_line  INTEGER NOT NULL,            -- 1-based, for people
    end_line    INTEGER NOT NULL,
    kind        TEXT NOT NULL,               -- module, function, class, section, paragraph, text ...
    context     TEXT NOT NULL DEFAULT '',    -- enclosing signatures or headings
    text        TEXT NOT NULL
);
INSERT INTO chunks_new (id, file_id, first_char, last_char, start_line, end_line, kind, context,
                        text)
SELECT id, file_id, first_char, last_char, start_line, end_line, kind, context, text FROM chunks;
-- Ids a vector may still carry stay used: the sequence starts past every chunk and vector.
INSERT INTO sqlite_sequence (name, seq)
SELECT 'chunks_new', max(coalesce((SELECT max(id) FROM chunks), 0),
                         coalesce((SELECT max(chunk_id) FROM chunk_vectors), 0))
WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'chunks_new');
UPDATE sqlite_sequence
SET seq = max(seq, coalesce((SELECT max(chunk_id) FROM chunk_vectors), 0))
WHERE name = 'chunks_new';
DROP TABLE chunks;
ALTER TABLE chunks_new RENAME TO chunks;
CREATE INDEX chunks_file ON chunks(file_id, first_char);
