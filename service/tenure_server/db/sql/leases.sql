-- The statements of leases that decide one request each, and the reads of leases
-- (tenure_server/db/leases.py; the statements that decide requests that arrived together are in
-- lease_batches.sql). Each runs alone, as an autocommit transaction at READ COMMITTED (the pool
-- pins that level): inside one statement now() is the statement's start. A statement that
-- answers leases selects a column for each field of domain/leases.py's Lease, named as the field:
-- the repository reads those rows by column name.
--
-- Whether an acquire, renew or release may change a lease, and what the lease becomes, is decided
-- by the functions of migrations 0008, 0009 and 0014 (tenure_may_acquire_v2, tenure_acquired_v3,
-- tenure_holds_v1, tenure_renewed_v2, …), which the single statement and the batch statements of
-- each call alike: they differ only in how they meet another transaction's lock on the row (a
-- single one waits for it and decides by the clock after the wait; a batch skips it and decides
-- by now()) and in what they answer. A name a batch left out (refused, or its row locked) is
-- decided again alone by the single statement.

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

-- name: hand_over_lease
-- $1 name, $2 holder, $3 generation, $4 principal, $5 grant: a release, as release_lease's;
-- $6 holder, $7 ttl_seconds, $8 principal: a waiter of this process, acquiring as acquire_lease.
-- The release and the waiter's new holding in one statement, so a hand-off is one round trip and
-- one commit (a transaction of the two statements took two more round trips: BEGIN and COMMIT).
-- The UPDATE waits for the row lock and decides on the latest row as release_lease does
-- (tenure_may_release_v1); the new holding is tenure_acquired_v3 of the row as the release leaves
-- it (tenure_released_v1 applied, once: OFFSET 0 keeps the sub-select from being inlined into
-- every use), by the clock read after the lock, as acquire_lease decides an expired lease. A
-- lease at the generation bound is not handed over: nothing changes, and the release is decided
-- again alone. The released holding's own columns are those of `before` (the statement's
-- snapshot), required equal to the locked row's, so the release is answered as release_lease
-- answers it; a row changed between the two changes nothing either. Nothing is notified: the
-- lease is held again at commit, so a waiter elsewhere would only be refused. The two events,
-- the release's then the holding's, are those the two statements write.
WITH handed AS (
    UPDATE leases AS l
       SET (holder, generation, ttl_seconds, acquired_at, renewed_at, expires_at, released_at,
            previous_holder, took_over, acquired_xact, granted_xact, principal, forced) =
           (SELECT (tenure_acquired_v3(released.lease, $6, $7, $8, decided.at)).*
              FROM (SELECT clock_timestamp() AS at) AS decided,
                   (SELECT jsonb_populate_record(l, to_jsonb(tenure_released_v1(l, now())))
                               AS lease
                    OFFSET 0) AS released)
      FROM leases AS before
     WHERE l.name = $1 AND before.name = $1
       AND tenure_may_release_v1(l, $2, $3, $4, $5)
       AND tenure_has_next_generation_v1(l.generation)
       AND (before.holder, before.generation, before.ttl_seconds, before.acquired_at,
            before.renewed_at, before.expires_at, before.principal, before.granted_xact)
           IS NOT DISTINCT FROM
           (l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at, l.expires_at,
            l.principal, l.granted_xact)
    RETURNING l.name, l.holder, l.generation, l.ttl_seconds, l.acquired_at, l.renewed_at,
              l.expires_at, l.released_at, l.principal, l.previous_holder, l.took_over,
              l.acquired_xact = pg_current_xact_id() AS new_holding,
              l.granted_xact::text AS grant_id,
              before.holder AS released_holder, before.generation AS released_generation,
              before.ttl_seconds AS released_ttl_seconds,
              before.acquired_at AS released_acquired_at,
              before.renewed_at AS released_renewed_at,
              (tenure_released_v1(before, now())).expires_at AS released_expires_at,
              (tenure_released_v1(before, now())).released_at AS released_released_at,
              before.principal AS released_principal,
              before.granted_xact::text AS released_grant_id
), event AS (
    INSERT INTO lease_events (lease, kind, holder, generation, previous_holder,
                              previous_generation)
    SELECT handed.name, e.kind, e.holder, e.generation, e.previous_holder, e.previous_generation
      FROM handed
     CROSS JOIN LATERAL (VALUES
        (1, 'released', handed.released_holder, handed.released_generation, NULL, NULL::bigint),
        (2, CASE WHEN handed.took_over THEN 'taken_over' ELSE 'acquired' END, handed.holder,
            handed.generation, handed.previous_holder, handed.generation - 1)
     ) AS e (rank, kind, holder, generation, previous_holder, previous_generation)
     ORDER BY e.rank
)
SELECT handed.*, (tenure_answer_v1(answered.remaining)).*,
       (tenure_answer_v1(handed.released_expires_at - now())).held AS released_held,
       (tenure_answer_v1(handed.released_expires_at - now())).expires_in_seconds
           AS released_expires_in_seconds
  FROM handed
 CROSS JOIN LATERAL (SELECT handed.expires_at - clock_timestamp() AS remaining) AS answered;

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
