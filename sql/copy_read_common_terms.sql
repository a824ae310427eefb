SELECT term FROM fts_common_terms ORDER BY term;
