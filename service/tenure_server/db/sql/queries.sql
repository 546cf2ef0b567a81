-- Every statement the service runs. Each runs alone, as an autocommit transaction at READ
-- COMMITTED (the pool pins that level): inside one statement now() is the statement's start.
-- A statement that answers leases selects the fields of domain/leases.py's Lease in their order:
-- the repository reads those rows by position.

-- name: acquire_lease
-- $1 name, $2 holder, $3 ttl_seconds, $4 principal (NULL without authentication).
-- One statement decides. INSERT … ON CONFLICT takes the row lock and, at READ COMMITTED,
-- evaluates the DO UPDATE on the latest committed row, so of many racing acquirers exactly one
-- sees the lease expired and gets generation + 1; the others get no row. The same holder acquiring
-- a lease it still holds gets its generation back with a new expiry (a retried request never makes
-- a second generation) — only if it is the same principal too, so a holder string cannot be
-- borrowed across principals. The DO UPDATE decides by clock_timestamp(), read after the row lock:
-- now() is the statement's start, and a statement that waited on the lock (a fenced transaction
-- holds the row FOR SHARE) would otherwise extend a holding that lapsed while it waited. The
-- clock is read once for the whole row (the sub-select), so every column agrees on "still held";
-- the WHERE reads it earlier, and a holding found expired then is expired at every later instant.
-- An expiry already granted is never moved earlier (greatest()). A new row starts one above the
-- generation floor (migration 0007), which a restore's bump raises past every lost generation.
-- The event is written by the same statement, only when a new holding began (this transaction
-- stamped acquired_xact). granted_xact names this very grant (every acquire and renew stamps it),
-- so that a grant can be withdrawn without touching a later one.
-- new_holding, took_over and previous_holder tell the caller what to log and count.
WITH acquired AS (
    INSERT INTO leases AS l (name, holder, generation, ttl_seconds, acquired_at, renewed_at,
                             expires_at, acquired_xact, granted_xact, principal)
    VALUES ($1, $2, (SELECT generation + 1 FROM tenure_generation_floor), $3, now(), now(),
            now() + make_interval(secs => $3), pg_current_xact_id(), pg_current_xact_id(), $4)
    ON CONFLICT (name) DO UPDATE SET
        (holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
         previous_holder, took_over, acquired_xact, granted_xact, principal, forced) =
        (SELECT EXCLUDED.holder,
                CASE WHEN kept THEN l.generation ELSE l.generation + 1 END,
                EXCLUDED.ttl_seconds,
                CASE WHEN kept THEN l.acquired_at ELSE at END,
                at,
                CASE WHEN kept THEN greatest(l.expires_at, at + make_interval(secs => EXCLUDED.ttl_seconds))
                     ELSE at + make_interval(secs => EXCLUDED.ttl_seconds) END,
                NULL::timestamptz,
                CASE WHEN kept THEN l.previous_holder ELSE l.holder END,
                CASE WHEN kept THEN l.took_over ELSE l.released_at IS NULL END,
                CASE WHEN kept THEN l.acquired_xact ELSE pg_current_xact_id() END,
                pg_current_xact_id(),
                EXCLUDED.principal,
                false
           FROM (SELECT at, l.expires_at > at AS kept
                   FROM (SELECT clock_timestamp() AS at) AS decided) AS state)
     WHERE l.expires_at <= clock_timestamp()
        OR (l.holder = EXCLUDED.holder AND l.principal IS NOT DISTINCT FROM EXCLUDED.principal)
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.previous_holder, l.took_over,
              l.acquired_xact = pg_current_xact_id() AS new_holding,
              l.granted_xact::text AS grant_id
), event AS (
    INSERT INTO lease_events (lease, kind, holder, generation, previous_holder,
                              previous_generation)
    SELECT name, CASE WHEN took_over THEN 'taken_over' ELSE 'acquired' END, holder, generation,
           previous_holder, CASE WHEN previous_holder IS NOT NULL THEN generation - 1 END
      FROM acquired
     WHERE new_holding
)
-- Answered by the clock after the decision, for the same reason.
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, grant_id, expires_at > answered.at AS held,
       greatest(0, extract(epoch FROM expires_at - answered.at))::float8 AS expires_in_seconds,
       new_holding, took_over, previous_holder
  FROM acquired CROSS JOIN (SELECT clock_timestamp() AS at) AS answered;

-- name: acquire_leases
-- $1 names (distinct), $2 holders, $3 ttl_seconds, $4 principals: parallel arrays, one element
-- per acquire. Acquires that arrived together (operations.py coalesces them), each decided as
-- acquire_lease decides it, in one statement and one commit. A lease row locked by another
-- transaction is skipped, not waited for, so one busy lease (a fenced transaction holds it FOR
-- SHARE) never delays the others; so is a new name another transaction inserted after this
-- statement's snapshot (ON CONFLICT DO NOTHING). Skipped and refused names return no row, and
-- the caller decides each of them with acquire_lease. Existing rows are locked in name order and
-- new ones inserted in name order, so two batches cannot deadlock. The rows it writes are locked
-- by this statement, so the UPDATE's CASEs see the latest row, as acquire_lease's do; it waits on
-- no row lock, so now() is the time it decides at. New rows start above the generation floor.
-- The arrays are read through sub-selects, so no plan depends on their length and PostgreSQL
-- keeps its generic plan instead of planning each execution: 0.53-0.6 ms instead of 0.95-1.25
-- for a batch of one (PostgreSQL 16; 0.66-0.71 instead of 1.2-1.4 on 15). Not done for
-- renew_leases: its batches are long, and there it measured no faster.
WITH wanted AS (
    SELECT * FROM unnest((SELECT $1::text[]), (SELECT $2::text[]), (SELECT $3::float8[]),
                           (SELECT $4::text[]))
        AS w(name, holder, ttl_seconds, principal)
), locked AS MATERIALIZED (
    SELECT l.name
      FROM leases AS l
      JOIN wanted AS w ON l.name = w.name
     ORDER BY l.name
       FOR NO KEY UPDATE OF l SKIP LOCKED
), taken AS (
    UPDATE leases AS l SET
        holder          = w.holder,
        generation      = CASE WHEN l.expires_at > now() THEN l.generation
                               ELSE l.generation + 1 END,
        ttl_seconds     = w.ttl_seconds,
        acquired_at     = CASE WHEN l.expires_at > now() THEN l.acquired_at ELSE now() END,
        renewed_at      = now(),
        expires_at      = CASE WHEN l.expires_at > now()
                               THEN greatest(l.expires_at,
                                             now() + make_interval(secs => w.ttl_seconds))
                               ELSE now() + make_interval(secs => w.ttl_seconds) END,
        released_at     = NULL,
        previous_holder = CASE WHEN l.expires_at > now() THEN l.previous_holder
                               ELSE l.holder END,
        took_over       = CASE WHEN l.expires_at > now() THEN l.took_over
                               ELSE l.released_at IS NULL END,
        acquired_xact   = CASE WHEN l.expires_at > now() THEN l.acquired_xact
                               ELSE pg_current_xact_id() END,
        granted_xact    = pg_current_xact_id(),
        principal       = w.principal,
        forced          = false
      FROM wanted AS w
     WHERE l.name = w.name AND l.name IN (SELECT name FROM locked)
       AND (l.expires_at <= now()
            OR (l.holder = w.holder AND l.principal IS NOT DISTINCT FROM w.principal))
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.previous_holder, l.took_over,
              l.acquired_xact = pg_current_xact_id() AS new_holding,
              l.granted_xact::text AS grant_id
), inserted AS (
    INSERT INTO leases AS l (name, holder, generation, ttl_seconds, acquired_at, renewed_at,
                             expires_at, acquired_xact, granted_xact, principal)
    SELECT w.name, w.holder, (SELECT generation + 1 FROM tenure_generation_floor),
           w.ttl_seconds, now(), now(),
           now() + make_interval(secs => w.ttl_seconds), pg_current_xact_id(),
           pg_current_xact_id(), w.principal
      FROM wanted AS w
     WHERE NOT EXISTS (SELECT 1 FROM leases AS e WHERE e.name = w.name)
     ORDER BY w.name
    ON CONFLICT (name) DO NOTHING
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.previous_holder, l.took_over,
              true AS new_holding, l.granted_xact::text AS grant_id
), acquired AS (
    SELECT * FROM taken UNION ALL SELECT * FROM inserted
), event AS (
    INSERT INTO lease_events (lease, kind, holder, generation, previous_holder,
                              previous_generation)
    SELECT name, CASE WHEN took_over THEN 'taken_over' ELSE 'acquired' END, holder, generation,
           previous_holder, CASE WHEN previous_holder IS NOT NULL THEN generation - 1 END
      FROM acquired
     WHERE new_holding
)
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, grant_id, expires_at > answered.at AS held,
       greatest(0, extract(epoch FROM expires_at - answered.at))::float8 AS expires_in_seconds,
       new_holding, took_over, previous_holder
  FROM acquired CROSS JOIN (SELECT clock_timestamp() AS at) AS answered;

-- name: renew_lease
-- $1 name, $2 holder, $3 generation, $4 ttl_seconds, $5 principal.
-- The row lock comes first and decides nothing; the holding is then judged by clock_timestamp()
-- read after it (decided), not by now(), the statement's start: a renew that waited on the lock
-- (a fenced transaction holds the row FOR SHARE) must not extend a holding that lapsed while it
-- waited, which its holder already counts as lost and which would block everyone for a TTL. The
-- UPDATE's WHERE is re-checked on the latest row, so a holder that was taken over (other holder
-- or generation) or whose lease expired changes nothing. A refusal of an existing lease is
-- recorded by the same statement; successful renewals record no event.
-- greatest(): a renewal never moves an expiry earlier: one answered first may have granted more.
WITH locked AS MATERIALIZED (
    SELECT name FROM leases WHERE name = $1 FOR NO KEY UPDATE
), decided AS MATERIALIZED (
    SELECT clock_timestamp() AS at FROM locked
), renewed AS (
    UPDATE leases AS l
       SET renewed_at = d.at, ttl_seconds = $4, granted_xact = pg_current_xact_id(),
           expires_at = greatest(l.expires_at, d.at + make_interval(secs => $4))
      FROM decided AS d
     WHERE l.name = $1 AND l.holder = $2 AND l.generation = $3 AND l.expires_at > d.at
       AND l.principal IS NOT DISTINCT FROM $5
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.granted_xact::text AS grant_id
), refused AS (
    INSERT INTO lease_events (lease, kind, holder, generation)
    SELECT name, 'renew_refused', $2, $3
      FROM leases
     WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM renewed)
)
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, grant_id, expires_at > answered.at AS held,
       greatest(0, extract(epoch FROM expires_at - answered.at))::float8 AS expires_in_seconds
  FROM renewed CROSS JOIN (SELECT clock_timestamp() AS at) AS answered;

-- name: renew_coalesced
-- $1 names (distinct), $2 holders, $3 generations, $4 ttl_seconds, $5 principals: parallel
-- arrays, one element per renew. Renews that arrived together (operations.py coalesces them),
-- each decided as renew_lease decides it, in one statement and one commit. The locking CTE
-- re-checks holder, generation, principal and expiry on each latest row and takes the rows in
-- name order, so two batches cannot deadlock; a row locked by another transaction is skipped,
-- not waited for, so one busy lease never delays the others. The UPDATE touches only rows this
-- statement holds. Skipped and refused renews return no row: the caller decides each with
-- renew_lease, which also records a refusal. Arrays through sub-selects: as acquire_leases.
WITH wanted AS (
    SELECT * FROM unnest((SELECT $1::text[]), (SELECT $2::text[]), (SELECT $3::bigint[]),
                         (SELECT $4::float8[]), (SELECT $5::text[]))
        AS w(name, holder, generation, ttl_seconds, principal)
), locked AS MATERIALIZED (
    SELECT l.name
      FROM leases AS l
      JOIN wanted AS w ON l.name = w.name
     WHERE l.holder = w.holder AND l.generation = w.generation AND l.expires_at > now()
       AND l.principal IS NOT DISTINCT FROM w.principal
     ORDER BY l.name
       FOR NO KEY UPDATE OF l SKIP LOCKED
), renewed AS (
    UPDATE leases AS l
       SET renewed_at = now(), ttl_seconds = w.ttl_seconds, granted_xact = pg_current_xact_id(),
           expires_at = greatest(l.expires_at, now() + make_interval(secs => w.ttl_seconds))
      FROM wanted AS w
     WHERE l.name = w.name AND l.name IN (SELECT name FROM locked)
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.granted_xact::text AS grant_id
)
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, grant_id, expires_at > answered.at AS held,
       greatest(0, extract(epoch FROM expires_at - answered.at))::float8 AS expires_in_seconds
  FROM renewed CROSS JOIN (SELECT clock_timestamp() AS at) AS answered;

-- name: renew_leases
-- $1 names, $2 generations (parallel arrays), $3 holder, $4 ttl_seconds, $5 principal.
-- Many holdings of one holder in one statement, each renewed exactly as renew_lease would. The
-- locking CTE re-checks holder, generation and expiry on each latest row and takes the rows in
-- name order, so two batches of one holder cannot deadlock; the UPDATE then touches only rows
-- this statement holds. A row locked by another transaction (a fenced one holds it FOR SHARE) is
-- skipped, not waited for, so one busy lease never fails the batch: it returns no row, and the
-- caller decides it with renew_lease. Waiting on no lock, the statement decides by now().
-- A holding already gone in this statement's snapshot (expired, taken over, released, another
-- principal's) is refused: answered with the lease as it is and no grant (grant_id NULL, the
-- caller holds none), and recorded like a single refusal. At worst a renewal of it by another
-- request that committed after the snapshot is reported lost: the safe way round.
-- The principal test is spelled out rather than IS NOT DISTINCT FROM, which PostgreSQL estimates
-- at one row: on a table of identical leases the first executions (planned with the parameters'
-- values) then joined the batch to a sequential scan in a nested loop, every lease against every
-- lease of the batch (tests/integration/test_plans.py).
WITH wanted AS (
    SELECT name, generation FROM unnest($1::text[], $2::bigint[]) AS w(name, generation)
), locked AS (
    SELECT l.name
      FROM leases AS l
      JOIN wanted AS w ON l.name = w.name AND l.generation = w.generation
     WHERE l.holder = $3 AND l.expires_at > now()
       AND (l.principal = $5 OR l.principal IS NULL AND $5::text IS NULL)
     ORDER BY l.name
       FOR NO KEY UPDATE OF l SKIP LOCKED
), renewed AS (
    UPDATE leases
       SET renewed_at = now(), ttl_seconds = $4, granted_xact = pg_current_xact_id(),
           expires_at = greatest(expires_at, now() + make_interval(secs => $4))
     WHERE name IN (SELECT name FROM locked)
    RETURNING name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at,
              released_at, principal, granted_xact::text AS grant_id
), refused AS (
    SELECT l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
           l.expires_at, l.released_at, l.principal, NULL::text AS grant_id,
           w.generation AS wanted_generation
      FROM leases AS l
      JOIN wanted AS w ON l.name = w.name
     WHERE NOT (l.generation = w.generation AND l.holder = $3 AND l.expires_at > now()
                AND (l.principal = $5 OR l.principal IS NULL AND $5::text IS NULL))
), refusal AS (
    INSERT INTO lease_events (lease, kind, holder, generation)
    SELECT name, 'renew_refused', $3, wanted_generation FROM refused
), answer AS (
    SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at,
           released_at, principal, grant_id
      FROM renewed
     UNION ALL
    SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at,
           released_at, principal, grant_id
      FROM refused
)
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, grant_id, expires_at > answered.at AS held,
       greatest(0, extract(epoch FROM expires_at - answered.at))::float8 AS expires_in_seconds
  FROM answer CROSS JOIN (SELECT clock_timestamp() AS at) AS answered;

-- name: release_lease
-- $1 name, $2 holder, $3 generation, $4 principal, $5 grant.
-- Expires the holding at once without deleting the row, so the generation never restarts at 1.
-- least() keeps an already-expired lease's expiry where it was. Only the first release of a
-- holding matches (released_at IS NULL), so it alone records the event and wakes waiters: the
-- notification is delivered at commit, when the lease is free for them to take, and sent only
-- while a waiting acquire has marked the lease awaited (await_lease): a notifying commit takes a
-- database-wide lock. The mark and the release both write the row, so whichever comes second
-- sees the first: a release after the mark notifies; one before it left the lease free for the
-- acquire the waiter retries after marking. Only while $5 (the grant_id of the caller's latest
-- acquire or renew) is the holding's latest grant: a release that arrives late must not end a
-- holding the same holder was granted again after sending it (a re-acquire answered 200), nor
-- may a waiting acquire whose caller went away. Holder and generation alone cannot tell those
-- apart, so the grant is required.
WITH released AS (
    UPDATE leases
       SET expires_at = least(expires_at, now()), released_at = now()
     WHERE name = $1 AND holder = $2 AND generation = $3 AND released_at IS NULL
       AND principal IS NOT DISTINCT FROM $4
       AND granted_xact = $5::text::xid8
    RETURNING name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at,
              released_at, principal, granted_xact::text AS grant_id, awaited_until
), event AS (
    INSERT INTO lease_events (lease, kind, holder, generation)
    SELECT name, 'released', holder, generation FROM released
)
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, grant_id, expires_at > now() AS held,
       greatest(0, extract(epoch FROM expires_at - now()))::float8 AS expires_in_seconds
  FROM released
  LEFT JOIN LATERAL (SELECT pg_notify('tenure_lease_released', released.name)
                      WHERE released.awaited_until > now()) AS wake ON true;

-- name: release_coalesced
-- $1 names (distinct), $2 holders, $3 generations, $4 principals, $5 grants:
-- parallel arrays, one element per release. Releases that arrived together (operations.py
-- coalesces them), each decided as release_lease decides it, in one statement and one commit:
-- the event, and the notification of an awaited lease, as there. The locking CTE re-checks every
-- condition on each latest row and takes the rows in name order, so two batches cannot deadlock;
-- a row locked by another transaction is skipped, not waited for. The UPDATE touches only rows
-- this statement holds. Skipped and refused releases return no row: the caller decides each with
-- release_lease, which explains a refusal. Arrays through sub-selects: as acquire_leases.
WITH wanted AS (
    SELECT * FROM unnest((SELECT $1::text[]), (SELECT $2::text[]), (SELECT $3::bigint[]),
                         (SELECT $4::text[]), (SELECT $5::text[]))
        AS w(name, holder, generation, principal, grant_id)
), locked AS MATERIALIZED (
    SELECT l.name
      FROM leases AS l
      JOIN wanted AS w ON l.name = w.name
     WHERE l.holder = w.holder AND l.generation = w.generation AND l.released_at IS NULL
       AND l.principal IS NOT DISTINCT FROM w.principal
       AND l.granted_xact = w.grant_id::xid8
     ORDER BY l.name
       FOR NO KEY UPDATE OF l SKIP LOCKED
), released AS (
    UPDATE leases
       SET expires_at = least(expires_at, now()), released_at = now()
     WHERE name IN (SELECT name FROM locked)
    RETURNING name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at,
              released_at, principal, granted_xact::text AS grant_id, awaited_until
), event AS (
    INSERT INTO lease_events (lease, kind, holder, generation)
    SELECT name, 'released', holder, generation FROM released
)
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, grant_id, expires_at > now() AS held,
       greatest(0, extract(epoch FROM expires_at - now()))::float8 AS expires_in_seconds
  FROM released
  LEFT JOIN LATERAL (SELECT pg_notify('tenure_lease_released', released.name)
                      WHERE released.awaited_until > now()) AS wake ON true;

-- name: await_lease
-- $1 name, $2 seconds the caller will wait at most.
-- Marks the lease awaited so that releases notify (see release_lease); greatest() keeps the
-- longest wait of every waiter, on every replica. A mark outliving its waiter (gone, crashed)
-- only costs notifications until it passes.
UPDATE leases SET awaited_until = greatest(awaited_until, now() + make_interval(secs => $2))
 WHERE name = $1;

-- name: force_release_lease
-- $1 name, $2 actor (the admin principal).
-- Ends whatever holding there is and moves the generation one past it, in one statement; that
-- generation is handed to nobody (forced: no fence accepts it), and the next acquire takes the one
-- after. Every fence refuses the old holder's token from now on: verifies accept only a lease's
-- current generation, and the fences of this lease are raised to the new one too. They are locked
-- in resource order first, as verify_fences locks them, so a concurrent batch cannot deadlock
-- with this statement. The row stays expired and released.
WITH forced AS (
    UPDATE leases
       SET generation = generation + 1, previous_holder = holder, holder = '(force-released)',
           principal = NULL, acquired_at = now(), renewed_at = now(),
           expires_at = least(expires_at, now()), released_at = now(), took_over = false,
           acquired_xact = pg_current_xact_id(), forced = true
     WHERE name = $1
    RETURNING name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at,
              released_at, principal, previous_holder, granted_xact::text AS grant_id
), locked AS MATERIALIZED (
    -- Reads forced, so it runs after the lease row is locked: always lease, then fences.
    SELECT f.resource, forced.generation
      FROM fences AS f
      JOIN forced ON f.lease = forced.name
     ORDER BY f.resource
       FOR NO KEY UPDATE OF f
), fenced AS (
    UPDATE fences AS f
       SET highest_generation = locked.generation, updated_at = now()
      FROM locked
     WHERE f.resource = locked.resource AND f.highest_generation < locked.generation
), event AS (
    INSERT INTO lease_events (lease, kind, holder, generation, previous_holder,
                              previous_generation, actor)
    SELECT name, 'force_released', holder, generation, previous_holder, generation - 1, $2
      FROM forced
)
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, grant_id, expires_at > now() AS held,
       greatest(0, extract(epoch FROM expires_at - now()))::float8 AS expires_in_seconds
  FROM forced
 CROSS JOIN LATERAL (SELECT pg_notify('tenure_lease_released', forced.name)) AS wake;

-- name: get_lease
-- $1 name. A plain read; it decides nothing, it only reports or explains a refusal.
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, granted_xact::text AS grant_id, expires_at > now() AS held,
       greatest(0, extract(epoch FROM expires_at - now()))::float8 AS expires_in_seconds
  FROM leases
 WHERE name = $1;

-- name: list_leases
-- $1 after (cursor, '' for the start), $2 prefix ('' for all), $3 prefix upper bound or NULL,
-- $4 limit. Keyset pagination on the "C"-collated primary key: stable under concurrent writes.
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, granted_xact::text AS grant_id, expires_at > now() AS held,
       greatest(0, extract(epoch FROM expires_at - now()))::float8 AS expires_in_seconds
  FROM leases
 WHERE name > $1 AND name >= $2 AND ($3::text IS NULL OR name < $3)
 ORDER BY name
 LIMIT $4;

-- name: claim_window
-- $1 job, $2 window, $3 lease, $4 holder, $5 generation, $6 principal.
-- The lease check and the window write are one statement and one transaction: FOR SHARE holds
-- the lease row until commit, and every acquire, renew or release of it needs a conflicting lock,
-- so the holding cannot change between check and write. clock_timestamp(), not now(): the lock
-- may have been waited for. A completed window, one bound to another lease, or one claimed by a
-- higher generation is left alone (ON CONFLICT re-checks the latest row).
-- The job event is written by the same statement, only when the claim went through.
WITH holding AS (
    SELECT 1
      FROM leases
     WHERE name = $3 AND holder = $4 AND generation = $5 AND expires_at > clock_timestamp()
       AND principal IS NOT DISTINCT FROM $6
       FOR SHARE
), claimed AS (
INSERT INTO job_windows AS w (job, window_key, lease, holder, generation, attempts, started_at)
SELECT $1, $2, $3, $4, $5, 1, now() FROM holding
ON CONFLICT (job, window_key) DO UPDATE SET
    holder     = EXCLUDED.holder,
    generation = EXCLUDED.generation,
    attempts   = w.attempts + 1,
    started_at = now()
 WHERE w.completed_at IS NULL AND w.lease = EXCLUDED.lease
   AND w.generation <= EXCLUDED.generation
RETURNING job, window_key, lease, holder, generation, attempts, started_at, completed_at
), event AS (
    INSERT INTO job_events (job, kind, window_key, lease, holder, generation, attempt)
    SELECT job, 'claimed', window_key, lease, holder, generation, attempts FROM claimed
)
SELECT job, window_key, lease, holder, generation, attempts, started_at, completed_at
  FROM claimed;

-- name: complete_window
-- $1 job, $2 window, $3 lease, $4 holder, $5 generation, $6 principal.
-- Same fence as claim_window: the lease row is share-locked for the statement, so only the
-- current holding can complete the window it claimed, and only once (completed_at IS NULL).
-- Only that first completion writes the job event.
WITH holding AS (
    SELECT 1
      FROM leases
     WHERE name = $3 AND holder = $4 AND generation = $5 AND expires_at > clock_timestamp()
       AND principal IS NOT DISTINCT FROM $6
       FOR SHARE
), completed AS (
UPDATE job_windows
   SET completed_at = now()
 WHERE job = $1 AND window_key = $2 AND lease = $3 AND holder = $4 AND generation = $5
   AND completed_at IS NULL AND EXISTS (SELECT 1 FROM holding)
RETURNING job, window_key, lease, holder, generation, attempts, started_at, completed_at
), event AS (
    INSERT INTO job_events (job, kind, window_key, lease, holder, generation, attempt, detail)
    SELECT job, 'completed', window_key, lease, holder, generation, attempts,
           round(extract(epoch FROM completed_at - started_at)::numeric, 3) || ' s'
      FROM completed
)
SELECT job, window_key, lease, holder, generation, attempts, started_at, completed_at
  FROM completed;

-- name: explain_window
-- $1 job, $2 window, $3 lease, $4 holder, $5 generation, $6 principal.
-- A read taken after a claim or completion wrote nothing, to say why. It decides nothing.
-- lease_principal is the principal bound to the holding named, if that holding exists.
SELECT w.job, w.window_key, w.lease, w.holder, w.generation, w.attempts, w.started_at,
       w.completed_at,
       EXISTS (SELECT 1 FROM leases
                WHERE name = $3 AND holder = $4 AND generation = $5 AND expires_at > now()
                  AND principal IS NOT DISTINCT FROM $6)
           AS lease_held,
       EXISTS (SELECT 1 FROM leases
                WHERE name = $3 AND holder = $4 AND generation = $5
                  AND principal IS DISTINCT FROM $6)
           AS lease_foreign
  FROM (SELECT 1) AS one
  LEFT JOIN job_windows AS w ON w.job = $1 AND w.window_key = $2;

-- name: get_window
-- $1 job, $2 window. A plain read.
SELECT job, window_key, lease, holder, generation, attempts, started_at, completed_at
  FROM job_windows
 WHERE job = $1 AND window_key = $2;

-- name: list_windows
-- $1 job, $2 before (cursor) or NULL, $3 limit. Newest window key first; keyset pagination.
SELECT job, window_key, lease, holder, generation, attempts, started_at, completed_at
  FROM job_windows
 WHERE job = $1 AND ($2::text IS NULL OR window_key < $2)
 ORDER BY window_key DESC
 LIMIT $3;

-- name: verify_fence
-- $1 resource, $2 lease, $3 generation.
-- Only the lease's current generation is accepted, on every resource, known or fresh: a lower one
-- was superseded by a later holding (or by force-release or a restore's bump), so its holder lost
-- its turn even where it never wrote; a higher one was never handed out (the snapshot includes
-- every acquire answered before this request was sent), and neither is the generation a
-- force-release moved to (forced). A verify that read the lease just before a new grant committed
-- is ordered before that grant, as if it had arrived first. ON CONFLICT locks the fence row and
-- re-checks the WHERE on its latest version, so concurrent verifies serialise and the highest
-- generation only grows; an equal one is accepted (several writes by one holding).
WITH lease AS (
    SELECT generation FROM leases WHERE name = $2 AND generation = $3 AND NOT forced
)
INSERT INTO fences AS f (resource, lease, highest_generation, updated_at)
SELECT $1, $2, $3, now() FROM lease
ON CONFLICT (resource) DO UPDATE SET
    highest_generation = EXCLUDED.highest_generation,
    updated_at         = now()
 WHERE f.lease = EXCLUDED.lease AND f.highest_generation <= EXCLUDED.highest_generation
RETURNING resource, lease, highest_generation, updated_at;

-- name: verify_fences
-- $1 resources (distinct), $2 leases, $3 generations: parallel arrays, one element per verify.
-- Each decided as verify_fence decides it, in one statement and one commit. Rows are inserted
-- in resource order, so two batches sharing fences lock them in the same order and cannot
-- deadlock (force_release_lease and bump_generations lock fences in that order too); ON CONFLICT
-- re-checks each fence's latest version as in verify_fence. Fence rows are locked only by such
-- one-statement transactions, never by a client's, so a batch waits on none for long.
INSERT INTO fences AS f (resource, lease, highest_generation, updated_at)
SELECT w.resource, w.lease, w.generation, now()
  FROM unnest($1::text[], $2::text[], $3::bigint[]) AS w(resource, lease, generation)
  JOIN leases AS l ON l.name = w.lease
 WHERE l.generation = w.generation AND NOT l.forced
 ORDER BY w.resource
ON CONFLICT (resource) DO UPDATE SET
    highest_generation = EXCLUDED.highest_generation,
    updated_at         = now()
 WHERE f.lease = EXCLUDED.lease AND f.highest_generation <= EXCLUDED.highest_generation
RETURNING resource, lease, highest_generation, updated_at;

-- name: explain_fences
-- $1 resources, $2 leases (parallel arrays). A read taken after verifies were refused, to say
-- why: one row per element, the fence (NULLs when none), the lease's current generation and
-- whether a force-release moved it there.
SELECT w.resource AS wanted, f.resource, f.lease, f.highest_generation, f.updated_at,
       l.generation AS lease_generation, l.forced AS lease_forced
  FROM unnest($1::text[], $2::text[]) AS w(resource, lease)
  LEFT JOIN fences AS f ON f.resource = w.resource
  LEFT JOIN leases AS l ON l.name = w.lease;

-- name: record_fence_rejections
-- $1 resources, $2 leases, $3 generations refused, $4 kinds (stale_generation,
-- unknown_generation, lease_mismatch), $5 highest generations seen or NULL: parallel arrays, in
-- FenceEvent's field order. History only: written after the refusals were decided (by
-- statements that wrote nothing), deciding nothing.
INSERT INTO fence_events (resource, lease, generation, kind, highest)
SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[]);

-- name: applied_migrations
-- A plain read of the versions recorded by migrate.py.
SELECT version FROM tenure_migrations ORDER BY version;

-- name: synchronous_commit
-- The setting that makes an acknowledged generation survive a crash.
SELECT current_setting('synchronous_commit');

-- name: database_now
-- The database clock, which decides every expiry; window resolution uses it too.
SELECT now() AS now;
