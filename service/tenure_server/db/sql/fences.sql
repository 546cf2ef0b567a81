-- The statements of fences (tenure_server/db/fences.py). Each runs alone, as an autocommit
-- transaction at READ COMMITTED (the pool pins that level).
--
-- Whether a verify passes is decided by the functions of migration 0008: tenure_may_verify_v1
-- (only the lease's current generation, never a forced one) and tenure_fence_accepts_v1 (the
-- fence's lease, its highest generation only growing), which the single and the batch statement
-- call alike.

-- name: verify_fence
-- $1 resource, $2 lease, $3 generation.
-- ON CONFLICT locks the fence row and re-checks the WHERE on its latest version, so concurrent
-- verifies serialise and the highest generation only grows. No row: refused.
WITH lease AS (
    SELECT l.generation FROM leases AS l WHERE l.name = $2 AND tenure_may_verify_v1(l, $3)
)
INSERT INTO fences AS f (resource, lease, highest_generation, updated_at)
SELECT $1, $2, $3, now() FROM lease
ON CONFLICT (resource) DO UPDATE SET
    highest_generation = EXCLUDED.highest_generation,
    updated_at         = now()
 WHERE tenure_fence_accepts_v1(f, EXCLUDED.lease, EXCLUDED.highest_generation)
RETURNING resource, lease, highest_generation, updated_at;

-- name: verify_fences
-- $1 resources (distinct), $2 leases, $3 generations: parallel arrays, one element per verify,
-- each decided as verify_fence decides it, in one statement and one commit. Rows are inserted in
-- resource order, so two batches sharing fences lock them in the same order and cannot deadlock
-- (force_release_lease and bump_generations lock fences in that order too); ON CONFLICT
-- re-checks each fence's latest version as in verify_fence. Fence rows are locked only by such
-- one-statement transactions, never by a client's, so a batch waits on none for long. Refused
-- verifies return no row. The columns are in Fence's field order (db/fences.py makes rows Fences).
INSERT INTO fences AS f (resource, lease, highest_generation, updated_at)
SELECT w.resource, w.lease, w.generation, now()
  FROM unnest($1::text[], $2::text[], $3::bigint[]) AS w(resource, lease, generation)
  JOIN leases AS l ON l.name = w.lease
 WHERE tenure_may_verify_v1(l, w.generation)
 ORDER BY w.resource
ON CONFLICT (resource) DO UPDATE SET
    highest_generation = EXCLUDED.highest_generation,
    updated_at         = now()
 WHERE tenure_fence_accepts_v1(f, EXCLUDED.lease, EXCLUDED.highest_generation)
RETURNING resource, lease, highest_generation, updated_at;

-- name: explain_fences
-- $1 resources, $2 leases, $3 generations (parallel arrays). A read taken after verifies were
-- refused, to say why: one row per element, the fence (NULLs when none), and the facts the
-- deciding statements decided by, by the same migration functions: accepted, the whole decision
-- (tenure_may_verify_v1 and tenure_fence_accepts_v1; when it holds the state moved in between,
-- decide again); bound_elsewhere (the fence is another lease's); unknown (no such lease, or a
-- generation above its current one: never handed out); stale (below the lease's current
-- generation or the fence's highest, `highest`); forced (the lease's current generation is one
-- an operator moved it to, handed to nobody); lease_generation, the lease's current one.
SELECT w.resource AS wanted, f.resource, f.lease, f.highest_generation, f.updated_at,
       l.generation AS lease_generation,
       coalesce(tenure_may_verify_v1(l, w.generation), false)
           AND (f.resource IS NULL
                OR coalesce(tenure_fence_accepts_v1(f, w.lease, w.generation), false))
           AS accepted,
       coalesce(f.lease <> w.lease, false) AS bound_elsewhere,
       l.name IS NULL OR w.generation > l.generation AS unknown,
       greatest(l.generation, f.highest_generation) AS highest,
       coalesce(w.generation < greatest(l.generation, f.highest_generation), false) AS stale,
       coalesce(l.forced, false) AS forced
  FROM unnest($1::text[], $2::text[], $3::bigint[]) AS w(resource, lease, generation)
  LEFT JOIN fences AS f ON f.resource = w.resource
  LEFT JOIN leases AS l ON l.name = w.lease;

-- name: record_fence_rejections
-- $1 resources, $2 leases, $3 generations refused, $4 kinds (stale_generation,
-- unknown_generation, lease_mismatch), $5 highest generations seen or NULL: parallel arrays, in
-- FenceEvent's field order. History only: written after the refusals were decided (by
-- statements that wrote nothing), deciding nothing.
INSERT INTO fence_events (resource, lease, generation, kind, highest)
SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[]);
