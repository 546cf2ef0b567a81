-- Alerts, webhook deliveries, history and retention (tenure_server/db/monitoring.py). Each
-- statement runs alone, as an autocommit transaction at READ COMMITTED.
--
-- Writes of the monitor loop are fenced like claim_window: the `holding` CTE share-locks the
-- monitor's lease row while tenure_holds_v1 finds the monitor's holding current by
-- clock_timestamp() (its principal is the lease's own: the monitor names none), until the
-- statement commits. Taking the lease over needs a conflicting lock, so a monitor that lost its
-- lease (paused, partitioned) writes nothing, and the new holder cannot have started in between.

-- name: open_new_alerts
-- $1 monitor lease, $2 monitor holder, $3 monitor generation; the alerts wanted, one array
-- element each: $4 kinds, $5 subjects, $6 windows, $7 leases, $8 holders, $9 generations,
-- $10 summaries, $11 payloads (jsonb[]); $12 webhook targets (text[]). One statement a pass,
-- however many alerts are wanted. The primary key (kind, subject, window) makes each alert exist
-- once however many monitors evaluate it, or however many passes want it: ON CONFLICT DO
-- NOTHING; only the rows this statement inserted get their deliveries (the outbox) and job
-- event, in the same transaction. Answers the positions (from 1) of the alerts it opened.
WITH holding AS (
    SELECT 1 FROM leases AS l
     WHERE l.name = $1 AND tenure_holds_v1(l, $2, $3, l.principal, clock_timestamp())
       FOR SHARE
), wanted AS (
    SELECT * FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                         $9::bigint[], $10::text[], $11::jsonb[])
           WITH ORDINALITY AS w(kind, subject, window_key, lease, holder, generation, summary,
                                payload, position)
), opened AS (
    INSERT INTO alerts (kind, subject, window_key, lease, holder, generation, summary, opened_at,
                        opened_by)
    SELECT kind, subject, window_key, lease, holder, generation, summary, now(), $3
      FROM wanted WHERE EXISTS (SELECT 1 FROM holding)
    ON CONFLICT (kind, subject, window_key) DO NOTHING
    RETURNING kind, subject, window_key
), new AS (
    SELECT w.* FROM opened AS o JOIN wanted AS w USING (kind, subject, window_key)
), outbox AS (
    INSERT INTO webhook_deliveries (kind, subject, window_key, transition, target, payload)
    SELECT n.kind, n.subject, n.window_key, 'opened', t.target, n.payload
      FROM new AS n CROSS JOIN unnest($12::text[]) AS t(target)
), event AS (
    INSERT INTO job_events (job, kind, window_key, lease, holder, generation, detail)
    SELECT subject, 'alert_opened', window_key, lease, holder, generation, kind || ': ' || summary
      FROM new WHERE kind <> 'stuck'
)
SELECT (SELECT count(*) FROM holding) > 0 AS held,
       ARRAY(SELECT position FROM new ORDER BY position) AS opened;

-- name: resolve_alert
-- $1 monitor lease, $2 monitor holder, $3 monitor generation, $4 kind, $5 subject, $6 window,
-- $7 reason, $8 payload (jsonb), $9 webhook targets (text[]). Fenced like open_new_alerts; only the
-- first resolution matches (resolved_at IS NULL, re-checked on the latest row after a lock wait),
-- so the "resolved" deliveries are written once.
WITH holding AS (
    SELECT 1 FROM leases AS l
     WHERE l.name = $1 AND tenure_holds_v1(l, $2, $3, l.principal, clock_timestamp())
       FOR SHARE
), resolved AS (
    UPDATE alerts SET resolved_at = now(), resolved_by = $3
     WHERE kind = $4 AND subject = $5 AND window_key = $6 AND resolved_at IS NULL
       AND EXISTS (SELECT 1 FROM holding)
    RETURNING kind, subject, window_key, lease, holder, generation
), outbox AS (
    INSERT INTO webhook_deliveries (kind, subject, window_key, transition, target, payload)
    SELECT r.kind, r.subject, r.window_key, 'resolved', t.target, $8
      FROM resolved AS r CROSS JOIN unnest($9::text[]) AS t(target)
), event AS (
    INSERT INTO job_events (job, kind, window_key, lease, holder, generation, detail)
    SELECT subject, 'alert_resolved', window_key, lease, holder, generation, kind || ': ' || $7
      FROM resolved WHERE kind <> 'stuck'
)
SELECT (SELECT count(*) FROM holding) > 0 AS held,
       (SELECT count(*) FROM resolved) > 0 AS resolved;

-- name: end_foreign_holding
-- $1 a lease name reserved to the service (tenure.monitor), $2 the service's principal.
-- The service does not honour a holding of its own names by anything else (a client's, taken
-- before the names were reserved or through a replica of an earlier version): it ends now, as if
-- it had expired, neither released nor deleted, so that the service's next acquire takes it over
-- at generation + 1 (a `taken_over` event naming that holder) instead of waiting out its TTL. The
-- UPDATE locks the row only when it matches, and after a lock wait re-checks the latest row
-- (READ COMMITTED), by clock_timestamp() read after it, as acquire_lease does: a holding the
-- service took meanwhile is left alone. Answers the holding it ended, or no row.
UPDATE leases
   SET expires_at = clock_timestamp()
 WHERE name = $1 AND principal IS DISTINCT FROM $2 AND expires_at > clock_timestamp()
RETURNING holder, principal, generation;

-- name: reserved_names
-- $1 the reserved prefix, $2 the least string above every name under it, $3 the service's own
-- lease names (text[]), $4 how recent a holding counts (seconds), $5 limit. For the warning at
-- start-up: leases under the prefix other than the service's own, acquired or renewed within $4
-- seconds (a row stays long after its last use), and live jobs whose name or lease is under it.
-- A read; names are "C"-collated, so the leases' range is one of the primary key.
(SELECT 'lease' AS kind, name, NULL AS lease
   FROM leases
  WHERE name >= $1 AND name < $2 AND name <> ALL($3::text[])
    AND renewed_at > now() - make_interval(secs => $4)
  ORDER BY name
  LIMIT $5)
UNION ALL
(SELECT 'job', name, lease
   FROM jobs
  WHERE deleted_at IS NULL AND (name >= $1 AND name < $2 OR lease >= $1 AND lease < $2)
  ORDER BY name
  LIMIT $5);

-- name: open_alerts
-- $1 limit. A plain read of the alerts not yet resolved, oldest first.
SELECT kind, subject, window_key, lease, holder, generation, summary, opened_at
  FROM alerts
 WHERE resolved_at IS NULL
 ORDER BY opened_at
 LIMIT $1;

-- name: open_alerts_after
-- $1 kind, $2 subject, $3 window (the last key of the previous page; '' from the start), $4
-- limit. A plain read of the alerts not yet resolved, in key order after the given one: the
-- monitor judges a page per pass and takes the next one at the next pass, so every open alert is
-- judged in turn, however many are open. alerts_open_by_key (migration 0017) reads only the page.
SELECT kind, subject, window_key, lease, holder, generation, summary, opened_at
  FROM alerts
 WHERE resolved_at IS NULL AND (kind, subject, window_key) > ($1, $2, $3)
 ORDER BY kind, subject, window_key
 LIMIT $4;

-- name: claim_deliveries
-- $1 monitor lease, $2 monitor holder, $3 monitor generation, $4 limit, $5 seconds a claim lasts.
-- Fenced: only the monitor holds deliveries. FOR UPDATE SKIP LOCKED lets two claims never take
-- one row; moving next_attempt_at past the send timeout keeps a claimed delivery from being taken
-- again while it is being sent. attempts counts claims, so a late record_attempt of an older
-- claim is ignored.
WITH holding AS (
    SELECT 1 FROM leases AS l
     WHERE l.name = $1 AND tenure_holds_v1(l, $2, $3, l.principal, clock_timestamp())
       FOR SHARE
), due AS (
    SELECT id FROM webhook_deliveries
     WHERE delivered_at IS NULL AND gave_up_at IS NULL AND next_attempt_at <= now()
       AND EXISTS (SELECT 1 FROM holding)
     ORDER BY next_attempt_at
     LIMIT $4
       FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries AS d
   SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => $5)
  FROM due
 WHERE d.id = due.id
RETURNING d.id, d.target, d.payload::text AS payload, d.attempts;

-- name: record_attempt
-- $1 delivery id, $2 attempt (as claimed), $3 ok, $4 status code or NULL, $5 error or NULL,
-- $6 duration seconds, $7 retry in seconds or NULL (give up). Records the attempt and moves the
-- delivery on in one statement; a delivery claimed again since (attempts moved) is left alone,
-- and one already delivered stays delivered.
WITH delivery AS (
    UPDATE webhook_deliveries
       SET delivered_at    = CASE WHEN $3 THEN now() END,
           gave_up_at      = CASE WHEN NOT $3 AND $7::float8 IS NULL THEN now() END,
           next_attempt_at = CASE WHEN NOT $3 AND $7::float8 IS NOT NULL
                                  THEN now() + make_interval(secs => $7::float8)
                                  ELSE next_attempt_at END,
           last_error      = $5
     WHERE id = $1 AND attempts = $2 AND delivered_at IS NULL AND gave_up_at IS NULL
    RETURNING id
)
INSERT INTO webhook_attempts (delivery, attempt, ok, status_code, error, duration_seconds)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING (SELECT count(*) FROM delivery) > 0 AS current;

-- name: delivery_backlog
-- A plain read for /metrics: deliveries still to send, and open alerts by kind.
SELECT 'pending' AS what, count(*) AS n
  FROM webhook_deliveries WHERE delivered_at IS NULL AND gave_up_at IS NULL
UNION ALL
SELECT 'open:' || kind, count(*) FROM alerts WHERE resolved_at IS NULL GROUP BY kind;

-- name: monitored_leases
-- $1 limit, $2 names (text[]). Leases, held ones first and oldest holding first (stuck candidates
-- lead), then the rest by name; with the smallest max_runtime_seconds of the live jobs running
-- under each. Besides, whatever the limit, the leases named by $2 (by primary key): the monitor's
-- open stuck alerts' beyond those listed, so that it sees whether their generation is still
-- held. A read. Held leases come through leases_by_expiry_bin (migration 0006), the rest through
-- the primary key, read only as far as the limit leaves room: never the whole table, which keeps
-- every name ever used. now() is the statement's, so all parts split the leases at one instant.
WITH held AS (
    SELECT name, holder, generation, acquired_at, expires_at
      FROM leases
     WHERE expiry_bin >= tenure_expiry_bin(now()) AND expires_at > now()
     ORDER BY acquired_at, name
     LIMIT $1
), listed AS (
    SELECT * FROM held
    UNION ALL
    (SELECT name, holder, generation, acquired_at, expires_at
       FROM leases
      WHERE expires_at <= now()
      ORDER BY name
      LIMIT greatest(0, $1 - (SELECT count(*) FROM held)))
), chosen AS (
    SELECT * FROM listed
    UNION ALL
    SELECT name, holder, generation, acquired_at, expires_at
      FROM leases
     WHERE name = ANY($2::text[]) AND name NOT IN (SELECT name FROM listed)
)
SELECT l.name, l.holder, l.generation, l.acquired_at, l.expires_at,
       l.expires_at > now() AS held,
       greatest(0, extract(epoch FROM l.expires_at - now()))::float8 AS expires_in_seconds,
       (SELECT min(j.max_runtime_seconds) FROM jobs AS j
         WHERE j.lease = l.name AND j.deleted_at IS NULL) AS max_runtime_seconds
  FROM chosen AS l
 ORDER BY l.expires_at > now() DESC,
          CASE WHEN l.expires_at > now() THEN l.acquired_at END,
          l.name;

-- name: lease_events
-- $1 lease, $2 before (an event id) or NULL, $3 limit. Newest first; keyset pagination on the
-- identity (lease_events_by_lease).
-- coalesce($2, max bigint), not `$2 IS NULL OR …`: the cursor stays an index condition in the
-- generic plan asyncpg reuses, so a deep page does not read every newer event.
SELECT id, lease, kind, holder, generation, previous_holder, previous_generation, at
  FROM lease_events
 WHERE lease = $1 AND id < coalesce($2, 9223372036854775807)
 ORDER BY id DESC
 LIMIT $3;

-- name: recent_events
-- $1 limit. The notable history across leases, jobs, fences and alerts, newest first: takeovers,
-- lost leases, force-releases, fence rejections, alerts opened and resolved. A read. `lease` is
-- the second name a reader must own to see the row (a fence rejection's lease), else NULL.
-- Each part reads at most $1 rows from the end of an index, whatever the history holds: the
-- notable lease events through lease_events_notable (its predicate is this kind list, written
-- alike so that the planner matches them), fence events (all notable) through their identity,
-- alerts through alerts_by_opening and alerts_by_resolution (migration 0013).
(SELECT at, 'lease' AS scope, lease AS subject, kind, holder, generation,
        CASE WHEN previous_holder IS NULL THEN NULL
             ELSE 'from ' || previous_holder || ' (generation ' || previous_generation || ')'
        END AS detail, NULL::text AS lease
   FROM lease_events
  WHERE kind IN ('taken_over', 'renew_refused', 'force_released')
  ORDER BY id DESC LIMIT $1)
UNION ALL
(SELECT at, 'fence', resource, kind, NULL, generation,
        'lease ' || lease || coalesce(', highest ' || highest, ''), lease
   FROM fence_events
  ORDER BY id DESC LIMIT $1)
UNION ALL
(SELECT opened_at, 'alert', subject, 'alert_opened', holder, generation, kind || ': ' || summary,
        NULL
   FROM alerts
  ORDER BY opened_at DESC LIMIT $1)
UNION ALL
(SELECT resolved_at, 'alert', subject, 'alert_resolved', holder, generation, kind, NULL
   FROM alerts
  WHERE resolved_at IS NOT NULL
  ORDER BY resolved_at DESC LIMIT $1)
ORDER BY at DESC
LIMIT $1;

-- name: prune_events
-- $1 retention seconds, $2 batch size. Runs tenure_prune_events (migration 0002): at most $2 rows
-- of each history table older than the retention go, oldest first; the caller repeats while a
-- full batch went. Concurrent prunes delete disjoint or already-deleted rows: harmless.
SELECT tenure_prune_events($1, $2) AS removed;
