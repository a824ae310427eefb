-- The index lock's own session: idle for the whole run, so the server must not end it for
-- idling (idle_session_timeout, PostgreSQL 14 and later; set only where the server has it).
-- Its pid is what each of the run's writes checks the lock against (index_lock_held).
SELECT set_config('idle_session_timeout', '0', false)
FROM pg_catalog.pg_settings WHERE name = 'idle_session_timeout';
SELECT pg_backend_pid();
