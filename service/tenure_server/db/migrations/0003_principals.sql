-- Authentication: a holding is bound to the principal that acquired it, and operator actions
-- (force-release) record who did them.

ALTER TABLE leases ADD COLUMN principal text;

ALTER TABLE lease_events ADD COLUMN actor text;
-- The kind check is replaced by a wider one in the same transaction: no guarantee is lost.
-- Validating it scans lease_events under the ALTER's lock; accepted when written (the history
-- was small). Today: ADD ... NOT VALID, then VALIDATE CONSTRAINT in a later migration.
-- squawk-ignore ban-drop-constraint
ALTER TABLE lease_events DROP CONSTRAINT lease_events_kind_check;
-- squawk-ignore constraint-missing-not-valid
ALTER TABLE lease_events ADD CONSTRAINT lease_events_kind_check
    CHECK (kind IN ('acquired', 'taken_over', 'released', 'renew_refused', 'force_released'));
