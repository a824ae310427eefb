-- ragdb copy from PostgreSQL: every row read from one committed state.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;
