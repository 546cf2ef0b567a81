-- What readiness and start-up ask the database (tenure_server/db/health.py); plain reads.

-- name: applied_migrations
-- A plain read of the versions recorded by migrate.py.
SELECT version FROM tenure_migrations ORDER BY version;

-- name: synchronous_commit
-- The setting that makes an acknowledged generation survive a crash.
SELECT current_setting('synchronous_commit');

-- name: database_now
-- The database clock, which decides every expiry; window resolution uses it too.
SELECT now() AS now;
