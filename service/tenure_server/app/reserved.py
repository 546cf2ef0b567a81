"""The names under `tenure.` are the service's own (domain/principals.py): no caller acts under
them. What the service does about anything else found there: it takes back a name it needs from
whoever holds it, and at start-up it warns of the deployment's own leases and jobs under them."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from tenure_server.app.ports import ReservedNames
from tenure_server.domain.principals import SERVICE_NAMESPACE, SERVICE_PRINCIPAL

# Without an `event` field, so that a JSON log line keeps the message (server/logs.py).
_log = logging.getLogger("tenure.server")

# Names listed by the start-up warning, of leases and of jobs each.
WARNED_NAMES = 20


async def take_back(monitoring: ReservedNames, lease: str) -> bool:
    """End a holding of the service's `lease` by anything but the service, so that the service's
    next acquire takes it over (generation + 1) at once instead of after the holder's TTL. True
    when there was one."""
    foreign = await monitoring.end_foreign_holding(lease, SERVICE_PRINCIPAL)
    if foreign is None:
        return False
    _log.warning(
        "%s was held by %r (principal %s, generation %d), not by this service (a client, or a "
        "replica of an earlier version): names under %r are the service's own, so that holding "
        "is not honoured and the service takes %s over",
        lease,
        foreign.holder,
        foreign.principal or "anonymous",
        foreign.generation,
        SERVICE_NAMESPACE,
        lease,
        extra={"lease": lease, "holder": foreign.holder},
    )
    return True


async def warn_of_reserved_names(
    monitoring: ReservedNames, own: Sequence[str], recent_seconds: float
) -> None:
    """One warning naming the deployment's leases (used within `recent_seconds`) and jobs under
    the service's names, which its callers can no longer acquire, renew, release, claim or
    verify under."""
    found = await monitoring.reserved_names(SERVICE_NAMESPACE, own, recent_seconds, WARNED_NAMES)
    if not found:
        return
    leases = [use.name for use in found if use.kind == "lease"]
    jobs = [
        use.name if use.lease == use.name else f"{use.name} (lease {use.lease})"
        for use in found
        if use.kind == "job"
    ]
    _log.warning(
        "names under %r are reserved to the service: no caller may acquire, renew, release, "
        "claim or verify under them any more (403 reserved-name). Rename these, and delete the "
        "jobs: leases %s; jobs %s",
        SERVICE_NAMESPACE,
        ", ".join(leases) or "none",
        ", ".join(jobs) or "none",
        extra={"leases": leases, "jobs": jobs},
    )
