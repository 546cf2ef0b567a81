-- Leases, job windows, fences and the lease event history.
-- Names and window keys use the "C" collation: bytewise order makes prefix ranges and keyset
-- cursors exact whatever the database's default collation is.

CREATE TABLE leases (
    name            text COLLATE "C" PRIMARY KEY,
    holder          text NOT NULL,
    -- Grows by one at every new holding and never goes back: rows are expired, never deleted.
    generation      bigint NOT NULL CHECK (generation >= 1),
    ttl_seconds     double precision NOT NULL CHECK (ttl_seconds > 0),
    acquired_at     timestamptz NOT NULL,
    renewed_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    -- Set when the holder released this generation; NULL while held or after a plain expiry.
    released_at     timestamptz,
    -- Facts about how this holding began, kept so one statement can record its event.
    previous_holder text,
    took_over       boolean NOT NULL DEFAULT false,
    acquired_xact   xid8 NOT NULL
);

CREATE TABLE lease_events (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lease               text COLLATE "C" NOT NULL,
    kind                text NOT NULL
                        CHECK (kind IN ('acquired', 'taken_over', 'released', 'renew_refused')),
    holder              text NOT NULL,
    generation          bigint NOT NULL,
    previous_holder     text,
    previous_generation bigint,
    at                  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX lease_events_by_lease ON lease_events (lease, id DESC);

CREATE TABLE job_windows (
    job          text COLLATE "C" NOT NULL,
    window_key   text COLLATE "C" NOT NULL,
    -- A window is bound to the lease that first claimed it.
    lease        text COLLATE "C" NOT NULL,
    holder       text NOT NULL,
    generation   bigint NOT NULL CHECK (generation >= 1),
    -- A count of tries of one window: never near 2^31.
    -- squawk-ignore prefer-bigint-over-int
    attempts     integer NOT NULL DEFAULT 1 CHECK (attempts >= 1),
    started_at   timestamptz NOT NULL,
    completed_at timestamptz,
    PRIMARY KEY (job, window_key)
);

CREATE TABLE fences (
    resource           text COLLATE "C" PRIMARY KEY,
    lease              text COLLATE "C" NOT NULL,
    highest_generation bigint NOT NULL CHECK (highest_generation >= 1),
    updated_at         timestamptz NOT NULL
);
