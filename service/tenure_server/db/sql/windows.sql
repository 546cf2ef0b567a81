-- The statements of job windows (tenure_server/db/windows.py). Each runs alone, as an autocommit
-- transaction at READ COMMITTED (the pool pins that level).
--
-- Whether the holding named is current, whether a window is due, and whether it may be claimed
-- again or completed by that holding are decided by the functions of migration 0014
-- (tenure_holds_v1, tenure_window_due_v1, tenure_may_reclaim_window_v1, tenure_claimed_by_v1),
-- which the deciding statements and explain_window call alike.

-- name: window_schedule
-- $1 job. A plain read: the schedule of the job registered under that name, if any, by which
-- claim_window judges whether a window is due. A PUT of the job racing a claim leaves the claim
-- judged by the schedule in force just before it.
SELECT schedule, timezone, key_format
  FROM jobs
 WHERE name = $1 AND deleted_at IS NULL;

-- name: claim_window
-- $1 job, $2 window, $3 lease, $4 holder, $5 generation, $6 principal,
-- $7 the occurrence the window stands for (NULL: due at any time), $8 the early tolerance (s).
-- The lease check and the window write are one statement and one transaction: FOR SHARE holds
-- the lease row until commit, and every acquire, renew or release of it needs a conflicting lock,
-- so the holding cannot change between check and write. clock_timestamp(), not now(): the lock
-- may have been waited for. A completed window, one bound to another lease, or one claimed by a
-- higher generation is left alone (ON CONFLICT re-checks the latest row). A window whose
-- occurrence is more than the tolerance ahead of the database clock is not claimed: a caller
-- whose own clock runs ahead cannot start tomorrow's window today.
-- The job event is written by the same statement, only when the claim went through.
WITH holding AS (
    SELECT 1
      FROM leases AS l
     WHERE l.name = $3 AND tenure_holds_v1(l, $4, $5, $6, clock_timestamp())
       AND tenure_window_due_v1($7, $8, now())
       FOR SHARE
), claimed AS (
INSERT INTO job_windows AS w (job, window_key, lease, holder, generation, attempts, started_at)
SELECT $1, $2, $3, $4, $5, 1, now() FROM holding
ON CONFLICT (job, window_key) DO UPDATE SET
    holder     = EXCLUDED.holder,
    generation = EXCLUDED.generation,
    attempts   = w.attempts + 1,
    started_at = now()
 WHERE tenure_may_reclaim_window_v1(w, EXCLUDED.lease, EXCLUDED.generation)
RETURNING job, window_key, lease, holder, generation, attempts, started_at, completed_at
), event AS (
    INSERT INTO job_events (job, kind, window_key, lease, holder, generation, attempt)
    SELECT job, 'claimed', window_key, lease, holder, generation, attempts FROM claimed
)
-- Not interrupted: the holding that claimed it holds its lease (share-locked above).
SELECT job, window_key, lease, holder, generation, attempts, started_at, completed_at,
       false AS interrupted
  FROM claimed;

-- name: complete_window
-- $1 job, $2 window, $3 lease, $4 holder, $5 generation, $6 principal.
-- Same fence as claim_window: the lease row is share-locked for the statement, so only the
-- current holding can complete the window it claimed, and only once (completed_at IS NULL).
-- Only that first completion writes the job event.
WITH holding AS (
    SELECT 1
      FROM leases AS l
     WHERE l.name = $3 AND tenure_holds_v1(l, $4, $5, $6, clock_timestamp())
       FOR SHARE
), completed AS (
UPDATE job_windows AS w
   SET completed_at = now()
 WHERE w.job = $1 AND w.window_key = $2 AND tenure_claimed_by_v1(w, $3, $4, $5)
   AND w.completed_at IS NULL AND EXISTS (SELECT 1 FROM holding)
RETURNING job, window_key, lease, holder, generation, attempts, started_at, completed_at
), event AS (
    INSERT INTO job_events (job, kind, window_key, lease, holder, generation, attempt, detail)
    SELECT job, 'completed', window_key, lease, holder, generation, attempts,
           round(extract(epoch FROM completed_at - started_at)::numeric, 3) || ' s'
      FROM completed
)
SELECT job, window_key, lease, holder, generation, attempts, started_at, completed_at,
       false AS interrupted
  FROM completed;

-- name: explain_window
-- $1 job, $2 window, $3 lease, $4 holder, $5 generation, $6 principal, $7 and $8 as for
-- claim_window (NULL and 0 after a completion).
-- A read taken after a claim or completion wrote nothing, to say why. It decides nothing: it
-- answers the window as it is and the facts the deciding statements decided by, each from the
-- same migration function, by now(): lease_held (tenure_holds_v1), lease_foreign (the holding
-- named exists but is bound to another principal: tenure_holding_named_v1, tenure_bound_to_v1),
-- due (tenure_window_due_v1, and now the clock it was judged by), bound_elsewhere (the window is
-- another lease's), claimed_by_holding (tenure_claimed_by_v1), and may_claim and may_complete,
-- the whole decisions: when one holds, the state moved in between, decide again. interrupted as
-- for get_window. The requested lease ($3) is looked up apart from the window's, even when they
-- are one: judging the request by the row the window's lookup found cost more than a second
-- primary-key probe (73 against 62 µs of backend CPU a call; bench/README.md, "The window-claim
-- lookup written once").
SELECT w.job, w.window_key, w.lease, w.holder, w.generation, w.attempts, w.started_at,
       w.completed_at, now() AS now,
       tenure_window_interrupted_v3(w.completed_at, claim.held) AS interrupted,
       tenure_window_due_v1($7, $8, now()) AS due,
       coalesce(held.holds, false) AS lease_held,
       coalesce(held.foreign, false) AS lease_foreign,
       coalesce(w.lease <> $3, false) AS bound_elsewhere,
       coalesce(tenure_claimed_by_v1(w, $3, $4, $5), false) AS claimed_by_holding,
       coalesce(held.holds, false) AND tenure_window_due_v1($7, $8, now())
           AND (w.job IS NULL OR tenure_may_reclaim_window_v1(w, $3, $5)) AS may_claim,
       coalesce(held.holds AND tenure_claimed_by_v1(w, $3, $4, $5) AND w.completed_at IS NULL,
                false) AS may_complete
  FROM (SELECT 1) AS one
  LEFT JOIN job_windows AS w ON w.job = $1 AND w.window_key = $2
  LEFT JOIN LATERAL (
      SELECT tenure_holds_v1(l, $4, $5, $6, now()) AS holds,
             tenure_holding_named_v1(l, $4, $5) AND NOT tenure_bound_to_v1(l, $6) AS foreign
        FROM leases AS l
       WHERE l.name = $3) AS held ON true
  LEFT JOIN LATERAL tenure_window_claim_v1(w.lease, w.holder, w.generation, now()) AS claim
         ON true;

-- name: get_window
-- $1 job, $2 window. A plain read. interrupted: the run that claimed the window died without
-- completing it, by the database clock: tenure_window_interrupted_v3 (migration 0015) of whether
-- the claiming holding still holds its lease (tenure_window_claim_v1, migration 0016: inlined as
-- one primary-key lookup per window, never a join PostgreSQL could turn into a scan of every
-- lease name). It decides nothing; a claim by a live holding (claim_window) makes the window
-- running again.
SELECT w.job, w.window_key, w.lease, w.holder, w.generation, w.attempts, w.started_at,
       w.completed_at, tenure_window_interrupted_v3(w.completed_at, claim.held) AS interrupted
  FROM job_windows AS w
  LEFT JOIN LATERAL tenure_window_claim_v1(w.lease, w.holder, w.generation, now()) AS claim
         ON true
 WHERE w.job = $1 AND w.window_key = $2;

-- name: list_windows
-- $1 job, $2 before (cursor) or NULL, $3 limit. Newest window key first; keyset pagination.
-- A read; interrupted as for get_window, one lease lookup (primary key) per window listed.
-- coalesce($2, '~'), not `$2 IS NULL OR …`: '~' sorts after every character a name may
-- hold, and the bound stays an index condition in the generic plan asyncpg reuses
-- (tests/integration/test_plans.py).
SELECT w.job, w.window_key, w.lease, w.holder, w.generation, w.attempts, w.started_at,
       w.completed_at, tenure_window_interrupted_v3(w.completed_at, claim.held) AS interrupted
  FROM job_windows AS w
  LEFT JOIN LATERAL tenure_window_claim_v1(w.lease, w.holder, w.generation, now()) AS claim
         ON true
 WHERE w.job = $1 AND w.window_key < coalesce($2, '~')
 ORDER BY w.window_key DESC
 LIMIT $3;
