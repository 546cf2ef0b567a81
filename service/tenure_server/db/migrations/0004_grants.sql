-- Each acquire and renew stamps the lease with its transaction id, so that a grant whose caller
-- went away can be withdrawn only while no later grant of the same holding exists.
ALTER TABLE leases ADD COLUMN granted_xact xid8;
