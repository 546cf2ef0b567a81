-- Waiting acquires mark until when a lease is awaited, so that a release notifies only then: a
-- notifying commit takes a database-wide lock held through its WAL flush, which capped releases
-- at a quarter of their rate without it (bench/README.md).
ALTER TABLE leases ADD COLUMN awaited_until timestamptz;

-- Statistics now, not at autovacuum's next pass: on a table it has not analyzed yet the batch
-- renew joins by a sequential scan (hundreds of times slower).
ANALYZE leases;
