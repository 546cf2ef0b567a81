-- Statements of the migration runner (tenure_server/db/migrate.py).

-- name: lock
-- A session-level advisory lock: replicas starting at once apply migrations one after another;
-- the later ones find every version recorded and apply nothing. Tried, not waited for: the caller
-- tries again after a pause until it is free. A statement waiting on it would be a transaction
-- that CREATE INDEX CONCURRENTLY (a no-transaction migration) waits for in turn, while the
-- waiter waits for the lock the build's runner holds: a deadlock, which failed the start of every
-- replica but one.
SELECT pg_try_advisory_lock(7365251289317512211) AS locked;

-- name: unlock
SELECT pg_advisory_unlock(7365251289317512211);

-- name: lock_timeout
-- $1 milliseconds, for the session: each migration waits so long for a lock before it is rolled
-- back and tried again (the advisory lock above is taken before, without a limit).
SELECT set_config('lock_timeout', $1, false);

-- name: create_table
-- Safe to race only because it runs under the advisory lock above.
CREATE TABLE IF NOT EXISTS tenure_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: applied
SELECT version FROM tenure_migrations ORDER BY version;

-- name: record
-- $1 version, $2 name. Runs in the migration's own transaction, so a version is recorded if and
-- only if its statements committed.
INSERT INTO tenure_migrations (version, name) VALUES ($1, $2);
