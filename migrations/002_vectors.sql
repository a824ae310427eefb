-- Dense vectors: int8 all-MiniLM-L6-v2 embeddings in a sqlite-vec vec0 table, keyed by chunk id.
-- Which embedder made them is kept in settings('embedder'); a different one means re-embedding.
-- Needs the sqlite-vec extension loaded (ragdb loads it; in the sqlite3 shell: .load <vec0 path>).
CREATE VIRTUAL TABLE chunk_vectors USING vec0(
    chunk_id   INTEGER PRIMARY KEY,
    embedding  int8[384] distance_metric=cosine
);
