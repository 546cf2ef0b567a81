-- The live event stream's channel (tenure_server/db/notifications.py).

-- name: publish_events
-- $1 one batch of events as JSON text (under PostgreSQL's 8000-byte payload limit). Sent by each
-- process's publisher every few tenths of a second, never by an operation: NOTIFY takes a lock
-- that serialises the commits of every notifying transaction, so one per batch instead of one per
-- event keeps it off the hot path. Touches no table; listeners receive batches in commit order.
SELECT pg_notify('tenure_events', $1);
