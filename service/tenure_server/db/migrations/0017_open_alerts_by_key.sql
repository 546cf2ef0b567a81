-- tenure: no-transaction
-- The open alerts in key order, so that the monitor judges them a page per pass in turn
-- (open_alerts_after, monitoring.sql): a read of the oldest N left every alert beyond them
-- unseen, never resolved. Partial: resolved alerts, kept until retention, are not read through.
-- Built CONCURRENTLY (alerts are written while it builds), dropped first after a failed run, as
-- 0013 explains.
DROP INDEX CONCURRENTLY IF EXISTS alerts_open_by_key;
CREATE INDEX CONCURRENTLY IF NOT EXISTS alerts_open_by_key ON alerts (kind, subject, window_key)
    WHERE resolved_at IS NULL;
