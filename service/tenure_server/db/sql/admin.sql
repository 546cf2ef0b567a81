-- Statements of operator commands (tenure_server/db/admin.py); never run by the API.

-- name: bump_generations
-- $1 amount. After a restore that may have lost writes, every lease jumps ahead by $1 and
-- expires, and every fence is raised to its lease's new generation, so nothing handed out before
-- (or lost after) the restore point is accepted again. The generation a lease jumps to is handed
-- to nobody (forced, as by force-release: no fence accepts it), so $1 equal to the acquires lost
-- since the restore point suffices: the lost ones reached at most that generation, and the next
-- acquire takes the one after it. The generation floor, where a lease the restore forgot entirely
-- starts again, rises above every generation still known and by $1 more: its lost generations
-- were at most the old floor plus the acquires since the restore point. The floor's trigger
-- refuses a floor past the largest generation (migration 0009), and with it the whole bump.
-- Fences are raised by tenure_fences_raised_v1 (migration 0014), as force_release_lease raises
-- them, locked in resource order, as verify_fences locks them, so a verify batch running
-- meanwhile cannot deadlock with the bump. One statement: all of it or none.
WITH bumped AS (
    UPDATE leases
       SET generation = generation + $1, expires_at = least(expires_at, now()), forced = true
    RETURNING name, generation
), fenced AS (
    SELECT tenure_fences_raised_v1(array_agg(name), array_agg(generation)) AS raised FROM bumped
), floor AS (
    UPDATE tenure_generation_floor
       SET generation = greatest(generation,
                                 (SELECT max(generation) - $1 FROM bumped),
                                 (SELECT max(highest_generation) FROM fences)) + $1
    RETURNING generation
)
SELECT (SELECT count(*) FROM bumped) AS leases, (SELECT raised FROM fenced) AS fences,
       (SELECT generation FROM floor) AS floor;

-- name: highest_generation
-- The highest generation known: the floor's, any lease's or any fence's. A plain read for the
-- message of a refused bump (how far generations may still be moved).
SELECT greatest((SELECT generation FROM tenure_generation_floor),
                (SELECT max(generation) FROM leases),
                (SELECT max(highest_generation) FROM fences)) AS generation;
