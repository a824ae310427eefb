-- Dense vectors: int8 all-MiniLM-L6-v2 embeddings in a sqlite-vec vec0 table.
--
-- A chunk may have several vectors, one per window of its text (a 2000-character section is
-- more than the model reads well at once; see README, Performance): vector_id is
-- chunk_id * 1000 + window number, and chunk_id is a vec0 metadata column, so a KNN query
-- returns the chunk directly and dense ranking takes each chunk's best window.
-- Which embedder made them is kept in settings('embedder'); a different one means re-embedding.
-- Needs the sqlite-vec extension loaded (ragdb loads it; in the sqlite3 shell: .load <vec0 path>).
CREATE VIRTUAL TABLE chunk_vectors USING vec0(
    vector_id  INTEGER PRIMARY KEY,
    chunk_id   INTEGER,
    embedding  int8[384] distance_metric=cosine
);
