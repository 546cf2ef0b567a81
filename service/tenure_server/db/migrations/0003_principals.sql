-- Authentication: a holding is bound to the principal that acquired it, and operator actions
-- (force-release) record who did them.

ALTER TABLE leases ADD COLUMN principal text;

ALTER TABLE lease_events ADD COLUMN actor text;
ALTER TABLE lease_events DROP CONSTRAINT lease_events_kind_check;
ALTER TABLE lease_events ADD CONSTRAINT lease_events_kind_check
    CHECK (kind IN ('acquired', 'taken_over', 'released', 'renew_refused', 'force_released'));
