-- The lease and fence rules, each written once: whether an acquire, renew, release or verify may
-- change a row, and what the row becomes. The single and batch statements of leases.sql and
-- fences.sql both call these functions, so they cannot decide differently; what stays in each
-- statement is only how it meets other transactions (waiting for a row lock, or skipping it) and
-- which clock it decides by, and each statement's comment says why that is safe.
--
-- They are SQL functions of one expression, STABLE, without SET or SECURITY DEFINER, so that
-- PostgreSQL inlines them when it plans a statement: a cached plan holds the expressions
-- themselves and runs no function call (tests/integration/test_decisions.py checks the plans).
-- Not PL/pgSQL functions deciding a single request as a batch of one: measured against these
-- statements, every single request then paid for a batch's arrays and for a function call.
-- They run with the caller's rights and EXECUTE stays granted to PUBLIC, so the runtime role needs
-- nothing more. A later change of a rule creates a _v2 beside the _v1, so that replicas still
-- running the older statements during a rolling deploy keep the functions they call.

-- What an acquire writes: the columns of a lease that a holding sets.
CREATE TYPE tenure_holding_v1 AS (
    holder          text,
    generation      bigint,
    ttl_seconds     double precision,
    acquired_at     timestamptz,
    renewed_at      timestamptz,
    expires_at      timestamptz,
    released_at     timestamptz,
    previous_holder text,
    took_over       boolean,
    acquired_xact   xid8,
    granted_xact    xid8,
    principal       text,
    forced          boolean
);

-- Whether `holder` (of `principal`) may acquire lease `l` at `at`: when it has expired, or when
-- the same holder of the same principal holds it (a retried request gets its own holding back
-- instead of a second generation; a holder string cannot be borrowed across principals).
CREATE FUNCTION tenure_may_acquire_v1(l leases, holder text, principal text, at timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
RETURN l.expires_at <= at
    OR (l.holder = tenure_may_acquire_v1.holder
        AND l.principal IS NOT DISTINCT FROM tenure_may_acquire_v1.principal);

-- Lease `l` acquired at `at`. Still held (by the same holder): the holding is kept (generation,
-- start, previous holder) and extended, and an expiry already granted never moves earlier
-- (greatest()). Expired: a new holding, generation + 1, taken over when the last one was not
-- released. acquired_xact names the transaction that began the holding (the caller logs an event
-- only then); granted_xact names this very grant, so a grant can be withdrawn without touching a
-- later one. Generations only grow.
CREATE FUNCTION tenure_acquired_v1(l leases, holder text, ttl_seconds double precision,
                                   principal text, at timestamptz)
RETURNS tenure_holding_v1
LANGUAGE sql STABLE
RETURN ROW(holder,
           CASE WHEN l.expires_at > at THEN l.generation ELSE l.generation + 1 END,
           ttl_seconds,
           CASE WHEN l.expires_at > at THEN l.acquired_at ELSE at END,
           at,
           CASE WHEN l.expires_at > at
                THEN greatest(l.expires_at, at + make_interval(secs => ttl_seconds))
                ELSE at + make_interval(secs => ttl_seconds) END,
           NULL::timestamptz,
           CASE WHEN l.expires_at > at THEN l.previous_holder ELSE l.holder END,
           CASE WHEN l.expires_at > at THEN l.took_over ELSE l.released_at IS NULL END,
           CASE WHEN l.expires_at > at THEN l.acquired_xact ELSE pg_current_xact_id() END,
           pg_current_xact_id(),
           principal,
           false)::tenure_holding_v1;

-- The first holding of a lease without a row: one above the generation floor (migration 0007),
-- which a restore's bump raises past every generation the restore lost.
CREATE FUNCTION tenure_first_acquired_v1(holder text, ttl_seconds double precision,
                                         principal text, generation_floor bigint,
                                         at timestamptz)
RETURNS tenure_holding_v1
LANGUAGE sql STABLE
RETURN ROW(holder, generation_floor + 1, ttl_seconds, at, at,
           at + make_interval(secs => ttl_seconds), NULL::timestamptz, NULL::text, false,
           pg_current_xact_id(), pg_current_xact_id(), principal, false)::tenure_holding_v1;

-- Whether the holding named (holder, generation, principal) may renew lease `l` at `at`: only
-- while it is the lease's holding and has not expired; a holder that was taken over, or whose
-- lease expired, changes nothing. The principal test is spelled out rather than IS NOT DISTINCT
-- FROM, which PostgreSQL estimates at one row: on a table of identical leases a batch renew then
-- joined its leases to a sequential scan in a nested loop (tests/integration/test_plans.py).
CREATE FUNCTION tenure_may_renew_v1(l leases, holder text, generation bigint, principal text,
                                    at timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
RETURN l.holder = tenure_may_renew_v1.holder AND l.generation = tenure_may_renew_v1.generation
   AND l.expires_at > at
   AND (l.principal = tenure_may_renew_v1.principal
        OR l.principal IS NULL AND tenure_may_renew_v1.principal IS NULL);

-- What a renewal writes.
CREATE TYPE tenure_renewal_v1 AS (
    ttl_seconds  double precision,
    renewed_at   timestamptz,
    expires_at   timestamptz,
    granted_xact xid8
);

-- Lease `l` renewed at `at` for `ttl_seconds`: a renewal never moves an expiry earlier
-- (greatest()), since one answered first may have granted more; granted_xact names this grant.
CREATE FUNCTION tenure_renewed_v1(l leases, ttl_seconds double precision, at timestamptz)
RETURNS tenure_renewal_v1
LANGUAGE sql STABLE
RETURN ROW(ttl_seconds, at, greatest(l.expires_at, at + make_interval(secs => ttl_seconds)),
           pg_current_xact_id())::tenure_renewal_v1;

-- Whether the holding named may release lease `l`: only its first release (released_at IS
-- NULL), so that alone records the event and wakes waiters, and only while `grant_id` (that of
-- the caller's latest acquire or renew) is the holding's latest grant: a release that arrives
-- late must not end a holding the same holder was granted again after sending it (a re-acquire
-- answered 200), nor may a waiting acquire whose caller went away. Holder and generation alone
-- cannot tell those apart, so the grant is required.
CREATE FUNCTION tenure_may_release_v1(l leases, holder text, generation bigint, principal text,
                                      grant_id text)
RETURNS boolean
LANGUAGE sql STABLE
RETURN l.holder = tenure_may_release_v1.holder
   AND l.generation = tenure_may_release_v1.generation AND l.released_at IS NULL
   AND l.principal IS NOT DISTINCT FROM tenure_may_release_v1.principal
   AND l.granted_xact = grant_id::xid8;

-- What a release writes.
CREATE TYPE tenure_release_v1 AS (expires_at timestamptz, released_at timestamptz);

-- Lease `l` released at `at`: it expires at once and keeps its row, so the generation never
-- restarts at 1; least() keeps an already-expired lease's expiry where it was.
CREATE FUNCTION tenure_released_v1(l leases, at timestamptz)
RETURNS tenure_release_v1
LANGUAGE sql STABLE
RETURN ROW(least(l.expires_at, at), at)::tenure_release_v1;

-- Whether lease `l` vouches for `generation` on a fence: only its current generation, on every
-- resource, known or fresh. A lower one was superseded by a later holding (or by force-release
-- or a restore's bump), so its holder lost its turn even where it never wrote; a higher one was
-- never handed out (the statement's snapshot includes every acquire answered before the request
-- was sent), and neither is the generation a force-release moved to (forced). A verify that read
-- the lease just before a new grant committed is ordered before that grant, as if it had
-- arrived first.
CREATE FUNCTION tenure_may_verify_v1(l leases, generation bigint)
RETURNS boolean
LANGUAGE sql STABLE
RETURN l.generation = tenure_may_verify_v1.generation AND NOT l.forced;

-- Whether fence `f`, locked, accepts `generation` of `lease`: the fence is bound to the lease
-- that first verified on it, and its highest generation only grows; an equal one is accepted
-- (several writes by one holding).
CREATE FUNCTION tenure_fence_accepts_v1(f fences, lease text, generation bigint)
RETURNS boolean
LANGUAGE sql STABLE
RETURN f.lease = tenure_fence_accepts_v1.lease
   AND f.highest_generation <= tenure_fence_accepts_v1.generation;

-- How a lease is answered, `remaining` before its expiry by the clock the statement answers by:
-- held while time remains, and the seconds left, never negative.
CREATE TYPE tenure_lease_answer_v1 AS (held boolean, expires_in_seconds double precision);

CREATE FUNCTION tenure_answer_v1(remaining interval)
RETURNS tenure_lease_answer_v1
LANGUAGE sql IMMUTABLE
RETURN ROW(remaining > interval '0',
           greatest(0, extract(epoch FROM remaining))::double precision)::tenure_lease_answer_v1;
