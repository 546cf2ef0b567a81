-- tenure: no-transaction
-- The notable history found through indexes of its own, not by reading the whole history
-- (issue 29). recent_events (monitoring.sql), which the overview, GET /ui and `tenure status`
-- run on every refresh, lists the latest takeovers, lost renewals and force-releases: with
-- ORDER BY id DESC over lease_events, a history in which few events are notable was read whole
-- (810 ms at 5 million rows, one in 50,000 notable; 0.09 ms through this index).
-- The partial index holds only the notable rows, so the statement reads as many as it lists and
-- an acquire or a release (neither notable) writes no entry in it. The alerts' two orders (newest
-- opened, newest resolved) get an index each, the resolved one partial like the statement; alerts
-- are written once per transition, so their upkeep is nothing beside the requests.
--
-- Built CONCURRENTLY, so that acquires and renewals keep writing lease_events while it builds;
-- the runner runs this file outside a transaction, statement by statement (db/migrate.py), and
-- after a failed run repeats it whole: each index is dropped first, as a build that failed
-- half-way leaves an invalid one behind. A build waits for the transactions older than itself
-- (a fenced transaction too): that wait is bounded by the runner's lock timeout, and retried.
DROP INDEX CONCURRENTLY IF EXISTS lease_events_notable;
CREATE INDEX CONCURRENTLY IF NOT EXISTS lease_events_notable ON lease_events (id)
    WHERE kind IN ('taken_over', 'renew_refused', 'force_released');
DROP INDEX CONCURRENTLY IF EXISTS alerts_by_opening;
CREATE INDEX CONCURRENTLY IF NOT EXISTS alerts_by_opening ON alerts (opened_at);
DROP INDEX CONCURRENTLY IF EXISTS alerts_by_resolution;
CREATE INDEX CONCURRENTLY IF NOT EXISTS alerts_by_resolution ON alerts (resolved_at)
    WHERE resolved_at IS NOT NULL;
