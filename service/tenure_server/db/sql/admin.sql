-- Statements of operator commands (tenure_server/db/admin.py); never run by the API.

-- name: bump_generations
-- $1 amount. After a restore that may have lost writes, every lease jumps ahead by $1 and
-- expires, and every fence is raised to its lease's new generation, so nothing handed out before
-- (or lost after) the restore point is accepted again. One statement: all of it or none.
WITH bumped AS (
    UPDATE leases
       SET generation = generation + $1, expires_at = least(expires_at, now())
    RETURNING name, generation
), fenced AS (
    UPDATE fences AS f
       SET highest_generation = b.generation, updated_at = now()
      FROM bumped AS b
     WHERE f.lease = b.name AND f.highest_generation < b.generation
    RETURNING f.resource
)
SELECT (SELECT count(*) FROM bumped) AS leases, (SELECT count(*) FROM fenced) AS fences;
