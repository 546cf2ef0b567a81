-- The statements of tenure.pg: the fence table a protected service keeps in its own database,
-- and the same-database fence on Tenure's `leases` table. tenure.pg runs each inside a
-- transaction it opened at READ COMMITTED; none is safe to run on its own.

-- name: ensure_schema
-- No parameters; two statements sent as one simple query, in one transaction.
-- The advisory lock serialises replicas that start at the same moment: CREATE TABLE IF NOT EXISTS
-- alone can still fail with a unique violation in the catalog when two sessions race on it.
-- Rows are never deleted: a deleted row would let the generations of its resource start again.
SELECT pg_advisory_xact_lock(hashtext('tenure_fences'));
CREATE TABLE IF NOT EXISTS tenure_fences (
    resource           text COLLATE "C" PRIMARY KEY,
    lease              text NOT NULL,
    highest_generation bigint NOT NULL CHECK (highest_generation >= 1),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- name: set_timeouts
-- $1 lock_timeout, $2 statement_timeout, $3 idle_in_transaction_session_timeout: milliseconds as
-- text, or NULL to keep the session's value. is_local = true, like SET LOCAL: the settings end
-- with the transaction, so a pooled connection goes back to the pool as it came. Concurrency:
-- touches no table.
SELECT set_config('lock_timeout', coalesce($1::text, current_setting('lock_timeout')), true),
       set_config('statement_timeout',
                  coalesce($2::text, current_setting('statement_timeout')), true),
       set_config('idle_in_transaction_session_timeout',
                  coalesce($3::text, current_setting('idle_in_transaction_session_timeout')),
                  true);

-- name: insert_fence
-- $1 resource, $2 lease, $3 generation.
-- Makes sure the row exists, so that lock_fence has a row to lock. When another transaction is
-- inserting the same resource, the unique index makes this wait for its outcome; then it does
-- nothing if that one committed. Exactly one row per resource ever exists.
INSERT INTO tenure_fences (resource, lease, highest_generation, updated_at)
VALUES ($1, $2, $3, now())
ON CONFLICT (resource) DO NOTHING;

-- name: lock_fence
-- $1 resource.
-- FOR UPDATE keeps the row locked until this transaction ends: every other check of the resource
-- (any replica, any connection) waits here, and after the wait READ COMMITTED hands it the
-- version this transaction committed. Check, advance and the caller's writes are one step.
SELECT lease, highest_generation
  FROM tenure_fences
 WHERE resource = $1
   FOR UPDATE;

-- name: raise_fence
-- $1 resource, $2 generation.
-- Runs only under lock_fence's lock and only with a generation above the one it read there, so
-- highest_generation only grows.
UPDATE tenure_fences
   SET highest_generation = $2, updated_at = now()
 WHERE resource = $1;

-- name: check_lease
-- $1 lease, $2 holder, $3 generation. The same-database fence, on Tenure's `leases` table.
-- FOR SHARE holds the lease row until this transaction ends. Every acquire, renew and release
-- updates that row and so needs FOR NO KEY UPDATE on it, which conflicts with FOR SHARE: no
-- takeover can commit between this check and this transaction's commit. FOR KEY SHARE would not
-- do — it does not conflict with FOR NO KEY UPDATE (an update that keeps the key), so a takeover
-- could commit while the write goes on. clock_timestamp(), not now(): now() is frozen at the
-- transaction's start, and this may run after waiting for the row lock.
-- Whether the holding is current is decided by tenure_holds_v1 (migration 0014 of the service),
-- its principal the lease's own: the client names none.
SELECT 1
  FROM leases AS l
 WHERE l.name = $1 AND tenure_holds_v1(l, $2, $3, l.principal, clock_timestamp())
   FOR SHARE;
