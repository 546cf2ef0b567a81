-- Whether the holding that claimed a window (its lease, holder and generation) still holds the
-- lease at `at`: tenure_holds_v1 with the lease's own principal (a window records none), of the
-- lease looked up by primary key; no row when the lease has none (a LEFT JOIN's NULL, which
-- tenure_window_interrupted_v3 counts as not held). Every statement that shows windows
-- (window_facts, get_window, list_windows, explain_window) spelled this lookup out (issue 29);
-- now each calls this one.
--
-- A set-returning SQL function of one SELECT, STABLE and not STRICT: PostgreSQL inlines it in
-- FROM as a subquery (tests/integration/test_decisions.py checks every plan). LIMIT 1 keeps that
-- subquery a lookup per window: PostgreSQL cannot flatten it into a join, which it could plan as
-- a scan of every lease name ever used (230 ms of 1M names for the overview's 1,000 jobs, when
-- the lookup was an EXISTS).
--
-- Creating a function rewrites and locks no table: safe while replicas serve, and the previous
-- release's statements do not call it.
CREATE FUNCTION tenure_window_claim_v1(claimed_lease text, claimed_holder text,
                                       claimed_generation bigint, at timestamptz)
RETURNS TABLE (held boolean)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT tenure_holds_v1(l, claimed_holder, claimed_generation, l.principal, at)
      FROM leases AS l
     WHERE l.name = claimed_lease
     LIMIT 1;
END;
