-- Job definitions, the job and fence history, alert state and webhook deliveries (issue 6).
-- Like leases, job definitions are never deleted: DELETE /v1/jobs/{job} stamps deleted_at, so the
-- runtime role keeps "rows only, never DELETE". History is pruned by one SECURITY DEFINER
-- function that can only remove rows older than its retention (at least an hour).

CREATE TABLE jobs (
    name                text COLLATE "C" PRIMARY KEY,
    schedule            text NOT NULL,
    timezone            text NOT NULL,
    key_format          text NOT NULL CHECK (key_format IN ('occurrence', 'date', 'previous_day')),
    -- The lease the job runs under (the SDK's default: the job's name).
    lease               text COLLATE "C" NOT NULL,
    deadline_seconds    double precision NOT NULL CHECK (deadline_seconds > 0),
    max_runtime_seconds double precision CHECK (max_runtime_seconds > 0),
    labels              jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    -- Since when this schedule is in force: earlier occurrences are never reported missed.
    active_since        timestamptz NOT NULL,
    deleted_at          timestamptz
);
CREATE INDEX jobs_by_lease ON jobs (lease) WHERE deleted_at IS NULL;

-- Status reads: the latest completed and the latest started window of a job, without a scan.
-- Accepted when written: a plain CREATE INDEX blocks writes to job_windows while it builds. A new
-- index on an existing table is now built CONCURRENTLY, in a no-transaction migration.
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX job_windows_by_completion ON job_windows (job, completed_at DESC)
    WHERE completed_at IS NOT NULL;
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX job_windows_by_start ON job_windows (job, started_at DESC);

CREATE TABLE job_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job         text COLLATE "C" NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('registered', 'updated', 'deleted', 'claimed',
                                              'completed', 'alert_opened', 'alert_resolved')),
    window_key  text COLLATE "C",
    lease       text COLLATE "C",
    holder      text,
    generation  bigint,
    -- A count of tries: never near 2^31.
    -- squawk-ignore prefer-bigint-over-int
    attempt     integer,
    detail      text,
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX job_events_by_job ON job_events (job, id DESC);
CREATE INDEX job_events_by_time ON job_events (at);

CREATE TABLE fence_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource    text COLLATE "C" NOT NULL,
    lease       text COLLATE "C" NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('stale_generation', 'unknown_generation',
                                              'lease_mismatch')),
    generation  bigint NOT NULL,
    highest     bigint,
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX fence_events_by_time ON fence_events (at);

-- Accepted when written, as job_windows_by_completion above.
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX lease_events_by_time ON lease_events (at);

-- One row per job (or lease), window and kind: whoever evaluates, an alert is opened once.
CREATE TABLE alerts (
    kind          text NOT NULL CHECK (kind IN ('missed', 'overrunning', 'stuck')),
    -- The job (missed, overrunning) or the lease (stuck).
    subject       text COLLATE "C" NOT NULL,
    -- The window key; for a stuck lease, the generation that is stuck.
    window_key    text COLLATE "C" NOT NULL,
    lease         text COLLATE "C",
    holder        text,
    generation    bigint,
    summary       text NOT NULL,
    opened_at     timestamptz NOT NULL,
    -- The monitor lease generations that opened and resolved it (the fence of those writes).
    opened_by     bigint NOT NULL,
    resolved_at   timestamptz,
    resolved_by   bigint,
    PRIMARY KEY (kind, subject, window_key)
);
CREATE INDEX alerts_open ON alerts (opened_at) WHERE resolved_at IS NULL;

-- The outbox: one row per alert transition and webhook, written with the transition.
CREATE TABLE webhook_deliveries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind            text NOT NULL,
    subject         text COLLATE "C" NOT NULL,
    window_key      text COLLATE "C" NOT NULL,
    transition      text NOT NULL CHECK (transition IN ('opened', 'resolved')),
    -- "<format>:<hash of the URL>": webhook URLs are secrets and stay in the settings.
    target          text NOT NULL,
    payload         jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    -- A count of tries (at most TENURE_WEBHOOK_MAX_ATTEMPTS): never near 2^31.
    -- squawk-ignore prefer-bigint-over-int
    attempts        integer NOT NULL DEFAULT 0,
    delivered_at    timestamptz,
    gave_up_at      timestamptz,
    last_error      text,
    UNIQUE (kind, subject, window_key, transition, target),
    FOREIGN KEY (kind, subject, window_key) REFERENCES alerts ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE delivered_at IS NULL AND gave_up_at IS NULL;

CREATE TABLE webhook_attempts (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery         bigint NOT NULL REFERENCES webhook_deliveries ON DELETE CASCADE,
    -- The delivery's try number: never near 2^31.
    -- squawk-ignore prefer-bigint-over-int
    attempt          integer NOT NULL,
    ok               boolean NOT NULL,
    -- An HTTP status code.
    -- squawk-ignore prefer-bigint-over-int
    status_code      integer,
    error            text,
    duration_seconds double precision NOT NULL,
    at               timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX webhook_attempts_by_delivery ON webhook_attempts (delivery, id);

-- Removes up to `batch` rows of each history table older than the retention (never less than an
-- hour), and resolved alerts (with their deliveries) older than it. SECURITY DEFINER: the runtime
-- role has no DELETE privilege, and this is the only deletion it can cause.
CREATE FUNCTION tenure_prune_events(retention_seconds double precision, batch integer)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
AS $$
DECLARE
    cutoff  timestamptz := clock_timestamp() - make_interval(secs => greatest(retention_seconds, 3600));
    removed bigint := 0;
    counted bigint;
BEGIN
    IF batch IS NULL OR batch < 1 OR batch > 100000 THEN
        RAISE EXCEPTION 'batch must be between 1 and 100000';
    END IF;
    DELETE FROM lease_events WHERE id IN
        (SELECT id FROM lease_events WHERE at < cutoff ORDER BY at LIMIT batch);
    GET DIAGNOSTICS counted = ROW_COUNT;
    removed := removed + counted;
    DELETE FROM job_events WHERE id IN
        (SELECT id FROM job_events WHERE at < cutoff ORDER BY at LIMIT batch);
    GET DIAGNOSTICS counted = ROW_COUNT;
    removed := removed + counted;
    DELETE FROM fence_events WHERE id IN
        (SELECT id FROM fence_events WHERE at < cutoff ORDER BY at LIMIT batch);
    GET DIAGNOSTICS counted = ROW_COUNT;
    removed := removed + counted;
    DELETE FROM alerts WHERE (kind, subject, window_key) IN
        (SELECT kind, subject, window_key FROM alerts
          WHERE resolved_at < cutoff ORDER BY resolved_at LIMIT batch);
    GET DIAGNOSTICS counted = ROW_COUNT;
    RETURN removed + counted;
END
$$;

-- A SECURITY DEFINER function must not resolve table names through a schema its caller controls:
-- pin the schema these tables live in, temporary schema last.
DO $$
BEGIN
    EXECUTE format(
        'ALTER FUNCTION tenure_prune_events(double precision, integer) SET search_path = %I, pg_temp',
        current_schema()
    );
END
$$;
