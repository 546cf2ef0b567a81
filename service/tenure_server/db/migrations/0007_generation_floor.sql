-- Generations that survive a restore, and force-released generations that no holder ever held.
--
-- A point-in-time restore forgets every lease first acquired after the restore point: its row is
-- gone, so without a floor its next acquire would start again at generation 1 while holders and
-- external fences from before the restore still carry 1, 2, … A new lease row therefore starts
-- one above this database-wide floor, which only `tenure admin bump-generations` raises.
CREATE TABLE tenure_generation_floor (
    only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    generation bigint NOT NULL DEFAULT 0 CHECK (generation >= 0)
);
INSERT INTO tenure_generation_floor DEFAULT VALUES;

-- The floor only rises, and its one row stays: a trigger, so that no role that may write rows
-- (the runtime role has UPDATE through default privileges) can lower it, only the table's owner
-- by dropping the trigger.
CREATE FUNCTION tenure_generation_floor_only_rises() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP <> 'UPDATE' OR NEW.generation < OLD.generation OR NEW.only_row <> OLD.only_row THEN
        RAISE EXCEPTION 'the generation floor only rises'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER tenure_generation_floor_only_rises
    BEFORE UPDATE OR DELETE ON tenure_generation_floor
    FOR EACH ROW EXECUTE FUNCTION tenure_generation_floor_only_rises();
CREATE TRIGGER tenure_generation_floor_stays
    BEFORE TRUNCATE ON tenure_generation_floor
    FOR EACH STATEMENT EXECUTE FUNCTION tenure_generation_floor_only_rises();

-- force-release moves the generation one past the holding it ends and hands that generation to
-- nobody: a fence must not accept it as a holding's token.
ALTER TABLE leases ADD COLUMN forced boolean NOT NULL DEFAULT false;
