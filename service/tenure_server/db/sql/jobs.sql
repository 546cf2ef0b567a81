-- Job definitions and what status computation reads (tenure_server/db/jobs.py). Each statement runs
-- alone, as an autocommit transaction at READ COMMITTED.

-- name: put_job
-- $1 name, $2 schedule, $3 timezone, $4 key_format, $5 lease, $6 deadline_seconds,
-- $7 max_runtime_seconds or NULL, $8 labels (jsonb).
-- INSERT … ON CONFLICT serialises concurrent PUTs of one name on its row lock and re-checks the
-- WHERE on the latest row: a PUT that changes nothing writes nothing and returns no row (the
-- caller reads the job instead), so replicas registering the same job at start-up add no history.
-- A new schedule (or a job revived after DELETE) takes effect now: active_since moves, and no
-- occurrence before it is reported missed. The event is written by the same statement.
WITH put AS (
    INSERT INTO jobs AS j (name, schedule, timezone, key_format, lease, deadline_seconds,
                           max_runtime_seconds, labels, created_at, updated_at, active_since)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now(), now(), now())
    ON CONFLICT (name) DO UPDATE SET
        schedule            = EXCLUDED.schedule,
        timezone            = EXCLUDED.timezone,
        key_format          = EXCLUDED.key_format,
        lease               = EXCLUDED.lease,
        deadline_seconds    = EXCLUDED.deadline_seconds,
        max_runtime_seconds = EXCLUDED.max_runtime_seconds,
        labels              = EXCLUDED.labels,
        updated_at          = now(),
        created_at          = CASE WHEN j.deleted_at IS NULL THEN j.created_at ELSE now() END,
        active_since        = CASE
            WHEN j.deleted_at IS NULL
             AND (j.schedule, j.timezone, j.key_format)
                 = (EXCLUDED.schedule, EXCLUDED.timezone, EXCLUDED.key_format)
            THEN j.active_since ELSE now() END,
        deleted_at          = NULL
     WHERE j.deleted_at IS NOT NULL
        OR (j.schedule, j.timezone, j.key_format, j.lease, j.deadline_seconds, j.labels)
           IS DISTINCT FROM (EXCLUDED.schedule, EXCLUDED.timezone, EXCLUDED.key_format,
                             EXCLUDED.lease, EXCLUDED.deadline_seconds, EXCLUDED.labels)
        OR j.max_runtime_seconds IS DISTINCT FROM EXCLUDED.max_runtime_seconds
    RETURNING j.name, j.schedule, j.timezone, j.key_format, j.lease, j.deadline_seconds,
              j.max_runtime_seconds, j.labels, j.created_at, j.updated_at, j.active_since
), event AS (
    INSERT INTO job_events (job, kind, lease, detail)
    SELECT name, CASE WHEN created_at = now() THEN 'registered' ELSE 'updated' END, lease,
           schedule || ' ' || timezone
      FROM put
)
SELECT name, schedule, timezone, key_format, lease, deadline_seconds, max_runtime_seconds,
       labels, created_at, updated_at, active_since
  FROM put;

-- name: get_job
-- $1 name. A plain read.
SELECT name, schedule, timezone, key_format, lease, deadline_seconds, max_runtime_seconds,
       labels, created_at, updated_at, active_since
  FROM jobs
 WHERE name = $1 AND deleted_at IS NULL;

-- name: delete_job
-- $1 name. Stamps deleted_at (the runtime role has no DELETE); only the first DELETE of a live
-- job matches, so it alone records the event.
WITH deleted AS (
    UPDATE jobs SET deleted_at = now(), updated_at = now()
     WHERE name = $1 AND deleted_at IS NULL
    RETURNING name, lease
), event AS (
    INSERT INTO job_events (job, kind, lease) SELECT name, 'deleted', lease FROM deleted
)
SELECT name FROM deleted;

-- name: list_jobs
-- $1 after (cursor, '' for the start), $2 prefix ('' for all), $3 prefix upper bound or NULL,
-- $4 limit. Keyset pagination on the "C"-collated primary key: stable under concurrent writes.
-- coalesce($3, '~'), not `$3 IS NULL OR …`: '~' sorts after every character a name may
-- hold, and the bound stays an index condition in the generic plan asyncpg reuses
-- (tests/integration/test_plans.py).
SELECT name, schedule, timezone, key_format, lease, deadline_seconds, max_runtime_seconds,
       labels, created_at, updated_at, active_since
  FROM jobs
 WHERE deleted_at IS NULL AND name > $1 AND name >= $2 AND name < coalesce($3, '~')
 ORDER BY name
 LIMIT $4;

-- name: jobs_named
-- $1 names (text[]). A plain read of those that are live jobs, in name order, by primary key: the
-- monitor reads the jobs of its open alerts beyond its page of jobs, so that it resolves an
-- alert as deleted only on seeing its job gone.
SELECT name, schedule, timezone, key_format, lease, deadline_seconds, max_runtime_seconds,
       labels, created_at, updated_at, active_since
  FROM jobs
 WHERE name = ANY($1::text[]) AND deleted_at IS NULL
 ORDER BY name;

-- name: unregistered_jobs
-- $1 after (cursor, '' for the start), $2 prefix ('' for all), $3 upper bound (exclusive) or NULL:
-- the prefix's, or where a full page of registered jobs ends; $4 limit. Names of jobs that
-- claimed windows but have no live registration (never registered, or deleted), in name order: a
-- loose index scan of job_windows on its primary key (job leading), one index descent per
-- distinct job name, so a table of millions of windows is never read through. The walk stops once
-- $4 such names are found, or at $3: a page reads about as many jobs as it lists. A read; names
-- are "C"-collated, so the order and the prefix range are those of list_jobs, and pages of both
-- merge by name. The bound: as in list_jobs.
WITH RECURSIVE walk (job, unregistered, found) AS (
    SELECT $1::text COLLATE "C", false, 0
    UNION ALL
    SELECT next.job, next.unregistered, walk.found + next.unregistered::int
      FROM walk
     CROSS JOIN LATERAL (
        SELECT w.job,
               NOT EXISTS (SELECT 1 FROM jobs AS j
                            WHERE j.name = w.job AND j.deleted_at IS NULL) AS unregistered
          FROM job_windows AS w
         WHERE w.job > walk.job AND w.job >= $2 AND w.job < coalesce($3, '~')
         ORDER BY w.job
         LIMIT 1) AS next
     WHERE walk.found < $4
)
SELECT job FROM walk WHERE unregistered ORDER BY job;

-- name: window_facts
-- $1 jobs (text[]), $2 and $3 (job, window key) pairs as two text[] of one length.
-- A read, one snapshot: for each job its latest completed and latest started window (index
-- scans, LIMIT 1), and the windows named by the pairs (a named window that is its job's latest
-- started is that row, not looked up again: the current window usually is); each window once,
-- with the roles it was picked for, as a job's latest started window is commonly its latest
-- completed and the one named too. In one snapshot the rows picked for one window are equal in
-- every column, so grouping by all of them makes one group per window. For a window not
-- completed, whether the holding that claimed it still holds its lease by the database clock
-- (lease_held: tenure_window_claim_v1, migration 0016, inlined as one primary-key lookup per
-- window whatever the table holds); a completed window is neither running nor interrupted
-- whoever holds its lease, so its lease is not looked up (lease_held false). And whether it is
-- interrupted (tenure_window_interrupted_v3 of lease_held, migration 0015: inlined). Computed
-- in the grouping query, which PostgreSQL does not flatten: one lookup per window.
-- Each lookup a job makes descends an index of every window (and of every lease name) to a
-- page of its own: what a grown database pays per job, so they are as few as the answer allows.
WITH started AS (
    SELECT w.*
      FROM unnest($1::text[]) AS j(job)
     CROSS JOIN LATERAL (
        SELECT * FROM job_windows WHERE job = j.job ORDER BY started_at DESC LIMIT 1) AS w
), named AS (
    SELECT k.job, k.window_key, s.job IS NOT NULL AS started
      FROM unnest($2::text[], $3::text[]) AS k(job, window_key)
      LEFT JOIN started AS s ON s.job = k.job AND s.window_key = k.window_key
), picked AS (
    SELECT 'completed' AS role, w.*
      FROM unnest($1::text[]) AS j(job)
     CROSS JOIN LATERAL (
        SELECT * FROM job_windows
         WHERE job = j.job AND completed_at IS NOT NULL
         ORDER BY completed_at DESC LIMIT 1) AS w
    UNION ALL
    SELECT 'started', * FROM started
    UNION ALL
    SELECT 'named', s.*
      FROM named AS n
      JOIN started AS s ON s.job = n.job AND s.window_key = n.window_key
    UNION ALL
    SELECT 'named', w.*
      FROM named AS n
      JOIN job_windows AS w ON w.job = n.job AND w.window_key = n.window_key
     WHERE NOT n.started
), shown AS (
    SELECT job, window_key, lease, holder, generation, attempts, started_at, completed_at,
           bool_or(role = 'completed') AS last_completed,
           bool_or(role = 'started') AS last_started,
           bool_or(role = 'named') AS named,
           CASE WHEN completed_at IS NULL THEN
               (SELECT claim.held
                  FROM tenure_window_claim_v1(lease, holder, generation, now()) AS claim)
           END AS held
      FROM picked
     GROUP BY job, window_key, lease, holder, generation, attempts, started_at, completed_at
)
SELECT job, window_key, lease, holder, generation, attempts, started_at, completed_at,
       last_completed, last_started, named,
       coalesce(held, false) AS lease_held,
       tenure_window_interrupted_v3(completed_at, held) AS interrupted
  FROM shown;

-- name: job_events
-- $1 job, $2 before (an event id) or NULL, $3 limit. Newest first; keyset pagination on the
-- identity, so events written meanwhile never shift a page.
-- coalesce($2, max bigint), not `$2 IS NULL OR …`: the cursor stays an index condition in the
-- generic plan asyncpg reuses, so a deep page does not read every newer event.
SELECT id, job, kind, window_key, lease, holder, generation, attempt, detail, at
  FROM job_events
 WHERE job = $1 AND id < coalesce($2, 9223372036854775807)
 ORDER BY id DESC
 LIMIT $3;
