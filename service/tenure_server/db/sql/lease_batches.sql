-- The statements of leases that decide requests that arrived together (app/coalescing.py), each
-- request in one statement and one commit, as the single statement of leases.sql decides it
-- alone (tenure_server/db/leases.py runs both files; that file's header says what they share).
-- A name a batch leaves out (refused, or its row locked) is decided again by the single
-- statement.

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
