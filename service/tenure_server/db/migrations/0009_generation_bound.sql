-- Generations stop at 2^53 − 1, and only the owner of tenure_generation_floor writes it.
--
-- JSON readers in other languages hold numbers as IEEE doubles (JavaScript): above 2^53 − 1 two
-- generations can read as one, and a holder's token could pass for its successor's. No
-- generation the service hands out (a holding's, the floor, a bump's) passes the bound; a lease
-- that reached it can begin no other holding, and the service says so (generation-exhausted)
-- instead of failing. Rule changes follow migration 0008's convention: the _v2 functions sit
-- beside the _v1 ones, which replicas still running the older statements keep calling.

-- Installs that granted the runtime role its rights before migration 0007 gave it INSERT and
-- UPDATE on the floor through default privileges: it could raise the floor to the bigint maximum,
-- and every new lease (the monitor's own included) then failed. Only the owner writes the floor
-- (`tenure admin bump-generations` runs as the migration role). The runtime role's name is the
-- operator's choice, so every other grantee (PUBLIC too) is read from the catalogue; CASCADE
-- also takes what a grantee passed on WITH GRANT OPTION.
DO $$
DECLARE
    grantee text;
BEGIN
    FOR grantee IN
        SELECT DISTINCT CASE WHEN acl.grantee = 0 THEN 'PUBLIC'
                             ELSE quote_ident(pg_get_userbyid(acl.grantee)) END
          FROM pg_class AS c
         CROSS JOIN LATERAL aclexplode(c.relacl) AS acl
         WHERE c.oid = 'tenure_generation_floor'::regclass
           AND acl.grantee <> c.relowner
           AND acl.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
    LOOP
        EXECUTE format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON tenure_generation_floor '
                       'FROM %s CASCADE', grantee);
    END LOOP;
END
$$;

-- The largest generation Tenure hands out: 2^53 − 1, the largest integer every JSON reader
-- holds exactly (tenure.MAX_GENERATION, and the `maximum` of each generation in the OpenAPI
-- document).
CREATE FUNCTION tenure_max_generation_v1() RETURNS bigint
LANGUAGE sql IMMUTABLE
RETURN 9007199254740991;

-- Whether a generation may follow `generation` (a lease's, or the floor for a lease without a
-- row): the next one stays within the bound.
CREATE FUNCTION tenure_has_next_generation_v1(generation bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE
RETURN generation < tenure_max_generation_v1();

-- The floor only rises, its one row stays, and it never passes the bound: a bump that would
-- raise it further is refused as a whole (check_violation), as is any other statement.
CREATE FUNCTION tenure_generation_floor_only_rises_v2() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP <> 'UPDATE' OR NEW.generation < OLD.generation OR NEW.only_row <> OLD.only_row THEN
        RAISE EXCEPTION 'the generation floor only rises'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.generation > tenure_max_generation_v1() THEN
        RAISE EXCEPTION 'the generation floor may not pass %', tenure_max_generation_v1()
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
-- No statement calls a trigger function, so the triggers move to v2 at once; the old function
-- stays until a later release removes it, as migrations here only add.
DROP TRIGGER tenure_generation_floor_only_rises ON tenure_generation_floor;
CREATE TRIGGER tenure_generation_floor_only_rises
    BEFORE UPDATE OR DELETE ON tenure_generation_floor
    FOR EACH ROW EXECUTE FUNCTION tenure_generation_floor_only_rises_v2();
DROP TRIGGER tenure_generation_floor_stays ON tenure_generation_floor;
CREATE TRIGGER tenure_generation_floor_stays
    BEFORE TRUNCATE ON tenure_generation_floor
    FOR EACH STATEMENT EXECUTE FUNCTION tenure_generation_floor_only_rises_v2();

-- As tenure_may_acquire_v1, and a new holding only while a generation is left for it: a lease at
-- the bound is still extended by its own holder, never handed on. `at` is written once, so that
-- PostgreSQL inlines the function even where it is clock_timestamp() (acquire_lease).
CREATE FUNCTION tenure_may_acquire_v2(l leases, holder text, principal text, at timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
RETURN CASE WHEN l.expires_at <= at THEN tenure_has_next_generation_v1(l.generation)
            ELSE l.holder = tenure_may_acquire_v2.holder
                 AND l.principal IS NOT DISTINCT FROM tenure_may_acquire_v2.principal END;

-- As tenure_acquired_v1, except that a lease at the bound is extended, never moved on.
-- acquire_lease decides whether (tenure_may_acquire_v2) a moment before it decides what: a lease
-- at the bound passes only while its own holder holds it, and that holding may expire in
-- between, when v1 would begin a new holding past the bound. It is decided instead as at the last
-- instant the holding was held, which the allowing decision preceded (timestamps are counted in
-- microseconds). Every other acquire is decided by `at`, as by v1.
CREATE FUNCTION tenure_acquired_v2(l leases, holder text, ttl_seconds double precision,
                                   principal text, at timestamptz)
RETURNS tenure_holding_v1
LANGUAGE sql STABLE
RETURN tenure_acquired_v1(l, holder, ttl_seconds, principal,
                          CASE WHEN tenure_has_next_generation_v1(l.generation) THEN at
                               ELSE least(at, l.expires_at - interval '1 microsecond') END);
