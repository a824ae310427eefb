-- Core schema: files, their chunks, the full-text index over the analysed chunk text,
-- and a record of every index run. Offsets are Python str character offsets.

CREATE TABLE files (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL UNIQUE,        -- relative to where `ragdb index` ran
    sha256      TEXT NOT NULL,
    size        INTEGER NOT NULL,            -- bytes on disk
    kind        TEXT NOT NULL,               -- python, markdown, text, rst
    n_chars     INTEGER NOT NULL,
    indexed_at  TEXT NOT NULL                -- ISO 8601, UTC
);

CREATE TABLE chunks (
    id          INTEGER PRIMARY KEY,
    file_id     INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    first_char  INTEGER NOT NULL,            -- inclusive
    last_char   INTEGER NOT NULL,            -- exclusive: text == file_text[first_char:last_char]
    start_line  INTEGER NOT NULL,            -- 1-based, for people
    end_line    INTEGER NOT NULL,
    kind        TEXT NOT NULL,               -- module, function, class, section, paragraph, text ...
    context     TEXT NOT NULL DEFAULT '',    -- enclosing signatures or headings
    text        TEXT NOT NULL
);
CREATE INDEX chunks_file ON chunks(file_id, first_char);

-- Identifier-split, lower-cased text (see ragdb/tokenize.py) indexed with built-in tokenizers,
-- so any SQLite client can query it: SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'lora'.
-- rowid = chunks.id.
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    path,                                    -- the file path, split into words
    context,                                 -- enclosing signatures or heading path
    body,                                    -- the chunk text
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Document frequencies straight from the FTS5 index (built in: readable by any client).
CREATE VIRTUAL TABLE chunks_fts_vocab USING fts5vocab(chunks_fts, 'row');

-- Stemmed terms found in more than half of all chunks. BM25 gives them no weight (FTS5 clamps
-- their IDF to ~0) yet each costs a scan of most rows, so queries leave them out.
CREATE TABLE fts_common_terms (
    term  TEXT PRIMARY KEY
) WITHOUT ROWID;

-- Settings the index was built with (keys: ragdb.db.Setting). A change of max_chunk_size,
-- tokenizer or chunker forces a full rebuild; of embedder or embed_policy, a re-embedding.
CREATE TABLE settings (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

CREATE TABLE index_runs (
    id              INTEGER PRIMARY KEY,
    started_at      TEXT NOT NULL,
    finished_at     TEXT,
    roots           TEXT NOT NULL,           -- JSON list of indexed paths
    max_chunk_size  INTEGER NOT NULL,
    tokenizer       TEXT NOT NULL,
    full_rebuild    INTEGER NOT NULL,
    files_seen      INTEGER NOT NULL DEFAULT 0,
    files_indexed   INTEGER NOT NULL DEFAULT 0,
    files_removed   INTEGER NOT NULL DEFAULT 0,
    files_skipped   INTEGER NOT NULL DEFAULT 0,
    chunks_written  INTEGER NOT NULL DEFAULT 0,
    chunks_total    INTEGER NOT NULL DEFAULT 0,
    seconds         REAL
);
