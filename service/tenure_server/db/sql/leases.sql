-- The statements of leases (tenure_server/db/leases.py). Each runs alone, as an autocommit
-- transaction at READ COMMITTED (the pool pins that level): inside one statement now() is the
-- statement's start; save a hand-off (release_handing_over in db/leases.py): release_lease and
-- then a waiter's acquire_lease in one transaction, one commit, the released row locked until it.
-- There now() is the transaction's start, which the release stamps, and the acquire, deciding by
-- clock_timestamp(), finds the holding ended. A statement that answers leases selects a column
-- for each field of domain/leases.py's Lease, named as the field: the repository reads those rows
-- by column name.
--
-- Whether an acquire, renew or release may change a lease, and what the lease becomes, is decided
-- by the functions of migrations 0008, 0009 and 0014 (tenure_may_acquire_v2, tenure_acquired_v3,
-- tenure_holds_v1, tenure_renewed_v2, …), which the single statement and the batch statements of
-- each call alike: they differ only in how they meet
-- another transaction's lock on the row (a single one waits for it and decides by the clock after
-- the wait; a batch skips it and decides by now()) and in what they answer. A batch holds
-- requests that arrived together (app/coalescing.py), decided in one statement and one commit; a
-- name it left out (refused, or its row locked) is decided again alone by the single statement.

-- name: acquire_lease
-- $1 name, $2 holder, $3 ttl_seconds, $4 principal (NULL without authentication).
-- One statement decides. INSERT … ON CONFLICT takes the row lock and, at READ COMMITTED,
-- evaluates the DO UPDATE on the latest committed row, so of many racing acquirers exactly one
-- finds the lease expired and gets generation + 1; the others get no row. The DO UPDATE decides
-- by clock_timestamp(), read after the row lock: now() is the statement's start, and a statement
-- that waited on the lock (a fenced transaction holds the row FOR SHARE) would otherwise extend a
-- holding that lapsed while it waited. The clock is read once for the whole row (the sub-select),
-- so every column agrees on "still held"; the WHERE reads it earlier, and a holding found expired
-- then is expired at every later instant. The event is written by the same statement, only when
-- a new holding began (this transaction stamped acquired_xact); new_holding, took_over and
-- previous_holder tell the caller what to log and count. Answered by the clock read for each row
-- after it was decided (a lateral sub-select), for the same reason. A name without a row is
-- inserted only while the floor leaves a generation to begin it with; the row is proposed all
-- the same when the name has one (in the snapshot: one inserted since is missed, the acquire
-- refused and explained, and the explanation, seeing the row, has it decided again).
WITH acquired AS (
    INSERT INTO leases AS l (name, holder, generation, ttl_seconds, acquired_at, renewed_at,
                             expires_at, released_at, previous_holder, took_over, acquired_xact,
                             granted_xact, principal, forced)
    SELECT $1, (tenure_first_acquired_v1($2, $3, $4, floor.generation, now())).*
      FROM tenure_generation_floor AS floor
     WHERE tenure_has_next_generation_v1(floor.generation)
        OR EXISTS (SELECT FROM leases WHERE name = $1)
    ON CONFLICT (name) DO UPDATE SET
        (holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
         previous_holder, took_over, acquired_xact, granted_xact, principal, forced) =
        (SELECT (tenure_acquired_v3(l, EXCLUDED.holder, EXCLUDED.ttl_seconds, EXCLUDED.principal,
                                    decided.at)).*
           FROM (SELECT clock_timestamp() AS at) AS decided)
     WHERE tenure_may_acquire_v2(l, EXCLUDED.holder, EXCLUDED.principal, clock_timestamp())
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
SELECT acquired.*, (tenure_answer_v1(answered.remaining)).*
  FROM acquired
 CROSS JOIN LATERAL (SELECT acquired.expires_at - clock_timestamp() AS remaining) AS answered;

-- name: acquire_leases
-- $1 names (distinct), $2 holders, $3 ttl_seconds, $4 principals: parallel arrays, one element
-- per acquire, each decided as acquire_lease decides it. A lease row locked by another
-- transaction is skipped, not waited for, so one busy lease (a fenced transaction holds it FOR
-- SHARE) never delays the others; so is a new name another transaction inserted after this
-- statement's snapshot (ON CONFLICT DO NOTHING). Skipped and refused names return no row.
-- New names are inserted first, in name order, and only then are existing rows locked (in name
-- order, skipping locked ones) and updated: `acquired` reads `inserted` before `taken`, and
-- PostgreSQL runs a WITH query's writes as its rows are read. So a batch waits only while it
-- inserts (on a transaction inserting or updating a name its snapshot did not see), having
-- written only new names ordered before that one: two batches cannot deadlock. Updating first
-- did: a name committed between two batches' snapshots was updated by the later batch, which then
-- waited to insert a name the earlier one had inserted, while the earlier one, inserting the
-- committed name, waited on that update (tests/integration/test_coalescing.py). The rows it
-- updates are locked by this statement, so the UPDATE sees the latest row, as acquire_lease's DO
-- UPDATE does; it waits on no row lock, so now() is the time it decides at. The arrays are read
-- through sub-selects, so no plan depends on their length and PostgreSQL keeps its generic plan
-- instead of planning each execution (bench/README.md, step 7).
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
    UPDATE leases AS l
       SET (holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
           previous_holder, took_over, acquired_xact, granted_xact, principal, forced) =
           ROW((tenure_acquired_v3(l, w.holder, w.ttl_seconds, w.principal, now())).*)
      FROM wanted AS w
     WHERE l.name = w.name AND l.name IN (SELECT name FROM locked)
       AND tenure_may_acquire_v2(l, w.holder, w.principal, now())
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.previous_holder, l.took_over,
              l.acquired_xact = pg_current_xact_id() AS new_holding,
              l.granted_xact::text AS grant_id
), inserted AS (
    INSERT INTO leases AS l (name, holder, generation, ttl_seconds, acquired_at, renewed_at,
                             expires_at, released_at, previous_holder, took_over, acquired_xact,
                             granted_xact, principal, forced)
    SELECT w.name,
           (tenure_first_acquired_v1(w.holder, w.ttl_seconds, w.principal, floor.generation,
                                     now())).*
      FROM wanted AS w, tenure_generation_floor AS floor
     WHERE NOT EXISTS (SELECT 1 FROM leases AS e WHERE e.name = w.name)
       AND tenure_has_next_generation_v1(floor.generation)
     ORDER BY w.name
    ON CONFLICT (name) DO NOTHING
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.previous_holder, l.took_over,
              true AS new_holding, l.granted_xact::text AS grant_id
), acquired AS (
    SELECT * FROM inserted UNION ALL SELECT * FROM taken
), event AS (
    INSERT INTO lease_events (lease, kind, holder, generation, previous_holder,
                              previous_generation)
    SELECT name, CASE WHEN took_over THEN 'taken_over' ELSE 'acquired' END, holder, generation,
           previous_holder, CASE WHEN previous_holder IS NOT NULL THEN generation - 1 END
      FROM acquired
     WHERE new_holding
)
SELECT acquired.*, (tenure_answer_v1(answered.remaining)).*
  FROM acquired
 CROSS JOIN LATERAL (SELECT acquired.expires_at - clock_timestamp() AS remaining) AS answered;

-- name: renew_lease
-- $1 name, $2 holder, $3 generation, $4 ttl_seconds, $5 principal.
-- The row lock comes first and decides nothing; the holding is then judged by clock_timestamp()
-- read after it (decided), not by now(), the statement's start: a renew that waited on the lock
-- (a fenced transaction holds the row FOR SHARE) must not extend a holding that lapsed while it
-- waited, which its holder already counts as lost and which would block everyone for a TTL. The
-- UPDATE's WHERE is re-checked on the latest row (tenure_holds_v1). A refusal of an existing
-- lease is recorded by the same statement; successful renewals record no event. It is sent only
-- for a row renew_leases found locked, and by a few requests at once (app/lock_waits.py): each
-- waits on a pooled connection.
WITH locked AS MATERIALIZED (
    SELECT name FROM leases WHERE name = $1 FOR NO KEY UPDATE
), decided AS MATERIALIZED (
    SELECT clock_timestamp() AS at FROM locked
), renewed AS (
    UPDATE leases AS l
       SET (ttl_seconds, renewed_at, expires_at, granted_xact) =
           ROW((tenure_renewed_v2(l, $4, d.at)).*)
      FROM decided AS d
     WHERE l.name = $1 AND tenure_holds_v1(l, $2, $3, $5, d.at)
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.granted_xact::text AS grant_id
), refused AS (
    INSERT INTO lease_events (lease, kind, holder, generation)
    SELECT name, 'renew_refused', $2, $3
      FROM leases
     WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM renewed)
)
SELECT renewed.*, (tenure_answer_v1(answered.remaining)).*
  FROM renewed
 CROSS JOIN LATERAL (SELECT renewed.expires_at - clock_timestamp() AS remaining) AS answered;

-- name: renew_coalesced
-- $1 names (distinct), $2 holders, $3 generations, $4 ttl_seconds, $5 principals: parallel
-- arrays, one element per renew, each decided as renew_lease decides it. The locking CTE checks
-- each holding on the latest row and takes the rows in name order, so two batches cannot
-- deadlock; a row locked by another transaction is skipped, not waited for, so one busy lease
-- never delays the others, and waiting on no lock the statement decides by now(). The UPDATE
-- touches only rows this statement holds. Skipped and refused renews return no row: the caller
-- decides each with renew_lease, which also records a refusal. Arrays through sub-selects: as
-- acquire_leases.
WITH wanted AS (
    SELECT * FROM unnest((SELECT $1::text[]), (SELECT $2::text[]), (SELECT $3::bigint[]),
                         (SELECT $4::float8[]), (SELECT $5::text[]))
        AS w(name, holder, generation, ttl_seconds, principal)
), locked AS MATERIALIZED (
    SELECT l.name
      FROM leases AS l
      JOIN wanted AS w ON l.name = w.name
     WHERE tenure_holds_v1(l, w.holder, w.generation, w.principal, now())
     ORDER BY l.name
       FOR NO KEY UPDATE OF l SKIP LOCKED
), renewed AS (
    UPDATE leases AS l
       SET (ttl_seconds, renewed_at, expires_at, granted_xact) =
           ROW((tenure_renewed_v2(l, w.ttl_seconds, now())).*)
      FROM wanted AS w
     WHERE l.name = w.name AND l.name IN (SELECT name FROM locked)
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.granted_xact::text AS grant_id
)
SELECT renewed.*, (tenure_answer_v1(answered.remaining)).*
  FROM renewed
 CROSS JOIN LATERAL (SELECT renewed.expires_at - clock_timestamp() AS remaining) AS answered;

-- name: renew_leases
-- $1 names, $2 generations (parallel arrays), $3 holder, $4 ttl_seconds, $5 principal.
-- Many holdings of one holder in one statement, each renewed as renew_lease would, locked as
-- renew_coalesced locks them: one busy lease never fails the batch, it returns no row and the
-- caller decides it with renew_lease. A single renew that no shared statement (renew_coalesced)
-- renewed is this statement with one holding, so that only a locked row waits. A holding already gone in this statement's snapshot
-- (expired, taken over, released, another principal's) is refused: answered with the lease as it
-- is and no grant (grant_id NULL, the caller holds none), and recorded like a single refusal. At
-- worst a renewal of it by another request that committed after the snapshot is reported lost:
-- the safe way round.
WITH wanted AS (
    SELECT name, generation FROM unnest($1::text[], $2::bigint[]) AS w(name, generation)
), locked AS MATERIALIZED (
    SELECT l.name
      FROM leases AS l
      JOIN wanted AS w ON l.name = w.name
     WHERE tenure_holds_v1(l, $3, w.generation, $5, now())
     ORDER BY l.name
       FOR NO KEY UPDATE OF l SKIP LOCKED
), renewed AS (
    UPDATE leases AS l
       SET (ttl_seconds, renewed_at, expires_at, granted_xact) =
           ROW((tenure_renewed_v2(l, $4, now())).*)
     WHERE l.name IN (SELECT name FROM locked)
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.granted_xact::text AS grant_id
), refused AS (
    SELECT l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
           l.expires_at, l.released_at, l.principal, NULL::text AS grant_id,
           w.generation AS wanted_generation
      FROM leases AS l
      JOIN wanted AS w ON l.name = w.name
     WHERE NOT tenure_holds_v1(l, $3, w.generation, $5, now())
), refusal AS (
    INSERT INTO lease_events (lease, kind, holder, generation)
    SELECT name, 'renew_refused', $3, wanted_generation FROM refused
), answer AS (
    SELECT * FROM renewed
     UNION ALL
    SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at,
           released_at, principal, grant_id
      FROM refused
)
SELECT answer.*, (tenure_answer_v1(answered.remaining)).*
  FROM answer
 CROSS JOIN LATERAL (SELECT answer.expires_at - clock_timestamp() AS remaining) AS answered;

-- name: release_lease
-- $1 name, $2 holder, $3 generation, $4 principal, $5 grant (the grant_id of the caller's latest
-- acquire or renew). The UPDATE waits for the row lock and re-checks tenure_may_release_v1 on the
-- latest row; it decides by no clock. Only the first release of a holding matches, so it alone
-- records the event and wakes waiters: the notification is delivered at commit, when the lease is
-- free for them to take, and sent only while a waiting acquire has marked the lease awaited
-- (await_lease): a notifying commit takes a database-wide lock. The mark and the release both
-- write the row, so whichever comes second sees the first: a release after the mark notifies; one
-- before it left the lease free for the acquire the waiter retries after marking.
WITH released AS (
    UPDATE leases AS l
       SET (expires_at, released_at) = ROW((tenure_released_v1(l, now())).*)
     WHERE l.name = $1 AND tenure_may_release_v1(l, $2, $3, $4, $5)
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.granted_xact::text AS grant_id,
              l.awaited_until
), event AS (
    INSERT INTO lease_events (lease, kind, holder, generation)
    SELECT name, 'released', holder, generation FROM released
)
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, grant_id, (tenure_answer_v1(expires_at - now())).*
  FROM released
  LEFT JOIN LATERAL (SELECT pg_notify('tenure_lease_released', released.name)
                      WHERE released.awaited_until > now()) AS wake ON true;

-- name: release_coalesced
-- $1 names (distinct), $2 holders, $3 generations, $4 principals, $5 grants: parallel arrays,
-- one element per release, each decided as release_lease decides it, with its event and
-- notification. The locking CTE checks each holding on the latest row and takes the rows in name
-- order, so two batches cannot deadlock; a row locked by another transaction is skipped, not
-- waited for. The UPDATE touches only rows this statement holds. Skipped and refused releases
-- return no row: the caller decides each with release_lease, which explains a refusal. Arrays
-- through sub-selects: as acquire_leases.
WITH wanted AS (
    SELECT * FROM unnest((SELECT $1::text[]), (SELECT $2::text[]), (SELECT $3::bigint[]),
                         (SELECT $4::text[]), (SELECT $5::text[]))
        AS w(name, holder, generation, principal, grant_id)
), locked AS MATERIALIZED (
    SELECT l.name
      FROM leases AS l
      JOIN wanted AS w ON l.name = w.name
     WHERE tenure_may_release_v1(l, w.holder, w.generation, w.principal, w.grant_id)
     ORDER BY l.name
       FOR NO KEY UPDATE OF l SKIP LOCKED
), released AS (
    UPDATE leases AS l
       SET (expires_at, released_at) = ROW((tenure_released_v1(l, now())).*)
     WHERE l.name IN (SELECT name FROM locked)
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.granted_xact::text AS grant_id,
              l.awaited_until
), event AS (
    INSERT INTO lease_events (lease, kind, holder, generation)
    SELECT name, 'released', holder, generation FROM released
)
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, grant_id, (tenure_answer_v1(expires_at - now())).*
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
-- $1 name, $2 actor (the admin principal). Answers the lease and, last, the previous_holder
-- whose generation was superseded (for the event).
-- Ends whatever holding there is and moves the generation one past it, in one statement; that
-- generation is handed to nobody (forced: no fence accepts it), and the next acquire takes the one
-- after. Every fence refuses the old holder's token from now on: verifies accept only a lease's
-- current generation, and the fences of this lease are raised to the new one too
-- (tenure_fences_raised_v1, which locks them in resource order, as verify_fences does, so a
-- concurrent batch cannot deadlock with this statement). The row stays expired and released. A
-- lease at the largest generation has none left to move to: no row, explained by explain_holding.
WITH forced AS (
    UPDATE leases
       SET generation = generation + 1, previous_holder = holder, holder = '(force-released)',
           principal = NULL, acquired_at = now(), renewed_at = now(),
           expires_at = least(expires_at, now()), released_at = now(), took_over = false,
           acquired_xact = pg_current_xact_id(), forced = true
     WHERE name = $1 AND tenure_has_next_generation_v1(generation)
    RETURNING name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at,
              released_at, principal, previous_holder, granted_xact::text AS grant_id
), fenced AS (
    -- Reads forced, so it runs after the lease row is locked: always lease, then fences.
    SELECT tenure_fences_raised_v1(array_agg(name), array_agg(generation)) AS raised FROM forced
), event AS (
    INSERT INTO lease_events (lease, kind, holder, generation, previous_holder,
                              previous_generation, actor)
    SELECT name, 'force_released', holder, generation, previous_holder, generation - 1, $2
      FROM forced
)
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, grant_id, (tenure_answer_v1(expires_at - now())).*, previous_holder
  FROM forced
 CROSS JOIN fenced
 CROSS JOIN LATERAL (SELECT pg_notify('tenure_lease_released', forced.name)) AS wake;

-- name: explain_holding
-- $1 name, $2 holder (NULL for a force-release), $3 generation (NULL for an acquire), $4 principal,
-- $5 grant (NULL but for a release). Why an acquire, renew, release or force-release changed
-- nothing: a plain read,
-- it decides nothing. The lease as get_lease reads it (NULLs without a row), and the facts the
-- deciding statements decided by, each from the same migration function, by now():
-- exhausted_at, the generation no holding can follow (NULL while one can: the lease's own
-- generation, or the floor's for a name without a row); may_acquire (tenure_may_acquire_v2, or for a name without
-- a row whether the floor leaves a generation); holds (tenure_holds_v1); named, the holding
-- named is the lease's latest, current or not (tenure_holding_named_v1); foreign, named but
-- bound to another principal (tenure_bound_to_v1); may_release (tenure_may_release_v1). A fact
-- that holds says the decision would now pass: the state moved in between, decide again.
SELECT l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at, l.expires_at,
       l.released_at, l.principal, l.granted_xact::text AS grant_id,
       (tenure_answer_v1(l.expires_at - now())).*,
       CASE WHEN NOT tenure_has_next_generation_v1(last.generation) THEN last.generation END
           AS exhausted_at,
       CASE WHEN l.name IS NULL THEN tenure_has_next_generation_v1(floor.generation)
            ELSE coalesce(tenure_may_acquire_v2(l, $2, $4, now()), false) END AS may_acquire,
       coalesce(tenure_holds_v1(l, $2, $3, $4, now()), false) AS holds,
       coalesce(tenure_holding_named_v1(l, $2, $3), false) AS named,
       coalesce(tenure_holding_named_v1(l, $2, $3) AND NOT tenure_bound_to_v1(l, $4), false)
           AS foreign,
       coalesce(tenure_may_release_v1(l, $2, $3, $4, $5), false) AS may_release
  FROM tenure_generation_floor AS floor
  LEFT JOIN leases AS l ON l.name = $1
 CROSS JOIN LATERAL (SELECT coalesce(l.generation, floor.generation) AS generation) AS last;

-- name: get_lease
-- $1 name. A plain read; it decides nothing, it only reports or explains a refusal.
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, granted_xact::text AS grant_id, (tenure_answer_v1(expires_at - now())).*
  FROM leases
 WHERE name = $1;

-- name: list_leases
-- $1 after (cursor, '' for the start), $2 prefix ('' for all), $3 prefix upper bound or NULL,
-- $4 limit. Keyset pagination on the "C"-collated primary key: stable under concurrent writes.
-- coalesce($3, '~'), not `$3 IS NULL OR …`: '~' sorts after every character a name may
-- hold, and the bound stays an index condition in the generic plan asyncpg reuses
-- (tests/integration/test_plans.py).
SELECT name, holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
       principal, granted_xact::text AS grant_id, (tenure_answer_v1(expires_at - now())).*
  FROM leases
 WHERE name > $1 AND name >= $2 AND name < coalesce($3, '~')
 ORDER BY name
 LIMIT $4;
