-- Whether a job window's run died (issue 26): not completed, and the holding that claimed it
-- (lease, holder, generation) no longer holds its lease at `at`: expired, released, or taken by a
-- newer generation. Written once for every statement that shows a window (windows.sql, jobs.sql).
-- It decides nothing: a claim by a live holding makes the window running again.
--
-- Creating a function rewrites and locks no table: safe while replicas serve. An SQL function of
-- one expression, STABLE, without SET or SECURITY DEFINER, like migration 0008's: PostgreSQL
-- inlines it, and EXECUTE stays granted to PUBLIC. A later change of the rule creates a _v2.
-- The parameters are named apart from the columns of leases: in an SQL function a column of the
-- same name would take precedence.
CREATE FUNCTION tenure_window_interrupted_v1(
    claimed_lease text, claimed_holder text, claimed_generation bigint,
    window_completed_at timestamptz, at timestamptz
)
RETURNS boolean
LANGUAGE sql STABLE
RETURN window_completed_at IS NULL AND NOT EXISTS (
    SELECT 1 FROM leases AS l
     WHERE l.name = claimed_lease AND l.holder = claimed_holder
       AND l.generation = claimed_generation AND l.expires_at > at);
