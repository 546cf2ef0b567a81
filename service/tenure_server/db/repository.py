"""The service's repository: the statements of leases, windows, fences, health, jobs and
monitoring, each run by the module of its aggregate beside its SQL file (`leases.py`,
`windows.py`, `fences.py`, `health.py`, `jobs.py`, `monitoring.py`), on the pooled connections
of `connections.py`, where driver errors are translated. One class, so that the use cases hold
one repository, and each port of `app/ports.py` is a part of it."""

from __future__ import annotations

from tenure_server.db.connections import Record
from tenure_server.db.fences import Fences
from tenure_server.db.health import Health
from tenure_server.db.jobs import Jobs
from tenure_server.db.leases import Leases
from tenure_server.db.monitoring import Monitoring
from tenure_server.db.windows import Windows

__all__ = ["Record", "Repository"]


class Repository(Leases, Windows, Fences, Health, Jobs, Monitoring):
    """Every statement of leases.sql, lease_batches.sql, windows.sql, fences.sql, health.sql,
    jobs.sql and monitoring.sql, one method each, named after it."""
