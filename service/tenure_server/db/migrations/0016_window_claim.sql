-- The lease a window's claim names, looked up by primary key, and whether the holding that
-- claimed the window (its holder and generation) still holds it at `at` (tenure_holds_v1 with the
-- lease's own principal: a window does not record one). NULL `held` when the lease has no row.
-- Every statement that shows windows (window_facts, get_window, list_windows, explain_window)
-- spelled this lookup out (issue 29); now each calls this one. `lease` is the row itself, for
-- explain_window, which judges the holding a request named by the same row rather than looking it
-- up again.
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
RETURNS TABLE (lease leases, held boolean)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT l, tenure_holds_v1(l, claimed_holder, claimed_generation, l.principal, at)
      FROM leases AS l
     WHERE l.name = claimed_lease
     LIMIT 1;
END;
