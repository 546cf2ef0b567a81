-- Whether a job window's run died, judged from whether its claiming holding still holds its
-- lease (issue 29). tenure_window_interrupted_v2 (migration 0014) looks the lease up itself: its
-- body holds a sub-select, so PostgreSQL cannot inline it and runs it as a function call for every
-- window a statement shows, beside the lookup the statement makes anyway for `lease_held` (18 of
-- the 46 ms window_facts took for the overview's 1,000 jobs). This one takes that lookup's answer,
-- `claim_held`: tenure_holds_v1 of the lease row for the window's holder and generation, NULL
-- when there is no such row (a LEFT JOIN that found none), which counts as not held. One
-- expression with no sub-select, IMMUTABLE since it reads nothing: PostgreSQL inlines it.
--
-- v2 stays as it is: replicas of the previous release keep calling it during a rolling deploy.
-- Creating a function rewrites and locks no table: safe while replicas serve.
CREATE FUNCTION tenure_window_interrupted_v3(window_completed_at timestamptz, claim_held boolean)
RETURNS boolean
LANGUAGE sql IMMUTABLE
RETURN window_completed_at IS NULL AND NOT coalesce(claim_held, false);
