"""The service's repository: the statements of leases, windows, fences and health, each run by
the module of its aggregate beside its SQL file (`leases.py`, `windows.py`, `fences.py`,
`health.py`), on the pooled connections of `connections.py`, where driver errors are translated.
One class, so that the use cases hold one repository."""

from __future__ import annotations

from tenure_server.db.connections import Record
from tenure_server.db.fences import Fences, Verify
from tenure_server.db.health import Health
from tenure_server.db.leases import Acquire, Acquired, Leases, Release, Renew
from tenure_server.db.windows import Windows

__all__ = ["Acquire", "Acquired", "Record", "Release", "Renew", "Repository", "Verify"]


class Repository(Leases, Windows, Fences, Health):
    """Every statement of leases.sql, windows.sql, fences.sql and health.sql, one method each,
    named after it."""
