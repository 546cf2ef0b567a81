-- The live event stream's channel (tenure_server/db/notifications.py).

-- name: publish_events
-- $1 the batches of events to send, text[] (each under PostgreSQL's 8000-byte payload limit).
-- Sent by each process's publisher every few tenths of a second, never by an operation: NOTIFY
-- takes a lock that serialises the commits of every notifying transaction, so one statement per
-- interval instead of one per event keeps it off the hot path. Touches no table. The batches are
-- sent in array order (unnest yields its elements in order) and all at this statement's commit;
-- every listener receives them in commit order, and no two are equal (each carries its own ids),
-- so PostgreSQL's folding of identical notifications of one transaction never drops one.
SELECT pg_notify('tenure_events', payload) FROM unnest($1::text[]) AS payload;
