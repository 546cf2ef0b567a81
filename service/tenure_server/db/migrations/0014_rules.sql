-- Each concept of a holding written once (issue 28): whether a holding is current, how far a
-- grant extends one, whether a window may be claimed or completed, and how fences follow a
-- generation that moved. Every statement that checks or extends a holding calls these, the
-- client's check_lease and the monitor's fenced writes too, so that a new rule (a renewal cap, a
-- margin) is one _v2 function here and cannot miss a copy or leave a bypass
-- (tests/integration/test_decisions.py finds the statements that call none).
--
-- Like migration 0008's: SQL functions of one expression, STABLE, without SET or SECURITY
-- DEFINER, so that PostgreSQL inlines them into the plans of the statements; EXECUTE stays
-- granted to PUBLIC. Parameters are named apart from the columns of the tables they read (in an
-- SQL function a column of the same name would take precedence). The functions of 0008 to 0010
-- stay as they are: replicas of the previous release keep calling them during a rolling deploy.
-- Creating a function rewrites and locks no table: safe while replicas serve.

-- Whether the holding named (its holder and generation) is lease `l`'s latest, current or not.
CREATE FUNCTION tenure_holding_named_v1(l leases, holding_holder text, holding_generation bigint)
RETURNS boolean
LANGUAGE sql STABLE
RETURN l.holder = holding_holder AND l.generation = holding_generation;

-- Whether lease `l`'s holding is bound to `holding_principal` (both NULL without
-- authentication): a holder string cannot be borrowed across principals. An equality, not IS NOT
-- DISTINCT FROM, which PostgreSQL estimates at one row (migration 0008, tenure_may_renew_v1);
-- never NULL.
CREATE FUNCTION tenure_bound_to_v1(l leases, holding_principal text)
RETURNS boolean
LANGUAGE sql STABLE
RETURN coalesce(l.principal = holding_principal,
                l.principal IS NULL AND holding_principal IS NULL);

-- Whether the holding named (its holder, generation and principal) is lease `l`'s current one
-- at `at`: named, bound to that principal, and not expired. Never NULL, so that
-- NOT tenure_holds_v1(…) is the refusal. A caller that does not bind holdings to principals
-- (the monitor, the client's check_lease) passes the lease's own principal.
CREATE FUNCTION tenure_holds_v1(l leases, holding_holder text, holding_generation bigint,
                                holding_principal text, at timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
RETURN tenure_holding_named_v1(l, holding_holder, holding_generation)
   AND tenure_bound_to_v1(l, holding_principal)
   AND l.expires_at > at;

-- The expiry a grant of `ttl_seconds` at `at` gives a holding that expires at `expires_at`: the
-- TTL from `at`, and never earlier than already granted (greatest()), since a grant answered
-- first may have given more. Every grant that extends a holding (a renewal, the same holder's
-- re-acquire) calls it, so a cap on extensions is one tenure_extended_until_v2.
CREATE FUNCTION tenure_extended_until_v1(expires_at timestamptz, at timestamptz,
                                         ttl_seconds double precision)
RETURNS timestamptz
LANGUAGE sql STABLE
RETURN greatest(expires_at, at + make_interval(secs => ttl_seconds));

-- As tenure_acquired_v1, the extension of a held lease by tenure_extended_until_v1.
CREATE FUNCTION tenure_holding_at_v1(l leases, holder text, ttl_seconds double precision,
                                     principal text, at timestamptz)
RETURNS tenure_holding_v1
LANGUAGE sql STABLE
RETURN ROW(holder,
           CASE WHEN l.expires_at > at THEN l.generation ELSE l.generation + 1 END,
           ttl_seconds,
           CASE WHEN l.expires_at > at THEN l.acquired_at ELSE at END,
           at,
           CASE WHEN l.expires_at > at
                THEN tenure_extended_until_v1(l.expires_at, at, ttl_seconds)
                ELSE at + make_interval(secs => ttl_seconds) END,
           NULL::timestamptz,
           CASE WHEN l.expires_at > at THEN l.previous_holder ELSE l.holder END,
           CASE WHEN l.expires_at > at THEN l.took_over ELSE l.released_at IS NULL END,
           CASE WHEN l.expires_at > at THEN l.acquired_xact ELSE pg_current_xact_id() END,
           pg_current_xact_id(),
           principal,
           false)::tenure_holding_v1;

-- As tenure_acquired_v2 (a lease at the generation bound is extended, never moved on), by
-- tenure_holding_at_v1.
CREATE FUNCTION tenure_acquired_v3(l leases, holder text, ttl_seconds double precision,
                                   principal text, at timestamptz)
RETURNS tenure_holding_v1
LANGUAGE sql STABLE
RETURN tenure_holding_at_v1(l, holder, ttl_seconds, principal,
                            CASE WHEN tenure_has_next_generation_v1(l.generation) THEN at
                                 ELSE least(at, l.expires_at - interval '1 microsecond') END);

-- As tenure_renewed_v1, the new expiry by tenure_extended_until_v1.
CREATE FUNCTION tenure_renewed_v2(l leases, ttl_seconds double precision, at timestamptz)
RETURNS tenure_renewal_v1
LANGUAGE sql STABLE
RETURN ROW(ttl_seconds, at, tenure_extended_until_v1(l.expires_at, at, ttl_seconds),
           pg_current_xact_id())::tenure_renewal_v1;

-- As tenure_window_interrupted_v1, the holding judged by tenure_holds_v1 (its principal is the
-- lease's own: a window records none).
CREATE FUNCTION tenure_window_interrupted_v2(
    claimed_lease text, claimed_holder text, claimed_generation bigint,
    window_completed_at timestamptz, at timestamptz
)
RETURNS boolean
LANGUAGE sql STABLE
RETURN window_completed_at IS NULL AND NOT EXISTS (
    SELECT 1 FROM leases AS l
     WHERE l.name = claimed_lease
       AND tenure_holds_v1(l, claimed_holder, claimed_generation, l.principal, at));

-- Whether a window whose occurrence is `occurrence` (NULL: due at any time) may start at `at`,
-- `tolerance_seconds` early at most: a caller whose clock runs ahead cannot start tomorrow's
-- window today.
CREATE FUNCTION tenure_window_due_v1(occurrence timestamptz, tolerance_seconds double precision,
                                     at timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
RETURN occurrence IS NULL OR occurrence <= at + make_interval(secs => tolerance_seconds);

-- Whether window `w`, already claimed, may be claimed again by generation `claiming_generation`
-- of `claiming_lease` (a current holding, checked by the caller): not completed, bound to that
-- lease, and not claimed by a higher generation.
CREATE FUNCTION tenure_may_reclaim_window_v1(w job_windows, claiming_lease text,
                                             claiming_generation bigint)
RETURNS boolean
LANGUAGE sql STABLE
RETURN w.completed_at IS NULL AND w.lease = claiming_lease
   AND w.generation <= claiming_generation;

-- Whether window `w` is the one the holding named claimed: that holding (a current one, checked
-- by the caller) may complete it, and answered with it when it completed it already.
CREATE FUNCTION tenure_claimed_by_v1(w job_windows, claiming_lease text, claiming_holder text,
                                     claiming_generation bigint)
RETURNS boolean
LANGUAGE sql STABLE
RETURN w.lease = claiming_lease AND w.holder = claiming_holder
   AND w.generation = claiming_generation;

-- Raises the fences of `moved_leases` to their new `moved_generations` (parallel arrays), after
-- a force-release or a restore's bump moved them: no fence accepts a generation older than its
-- lease's from then on. The fences are locked in resource order, as verify_fences locks them, so
-- a verify batch running meanwhile cannot deadlock with it; a caller locks the leases first.
-- Answers how many fences it raised. A write, so VOLATILE: it is called, not inlined.
CREATE FUNCTION tenure_fences_raised_v1(moved_leases text[], moved_generations bigint[])
RETURNS bigint
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    WITH locked AS MATERIALIZED (
        SELECT f.resource, m.generation
          FROM fences AS f
          JOIN unnest(moved_leases, moved_generations) AS m(lease, generation)
            ON f.lease = m.lease
         ORDER BY f.resource
           FOR NO KEY UPDATE OF f
    ), raised AS (
        UPDATE fences AS f
           SET highest_generation = locked.generation, updated_at = now()
          FROM locked
         WHERE f.resource = locked.resource AND f.highest_generation < locked.generation
        RETURNING f.resource
    )
    SELECT count(*) FROM raised;
END;
