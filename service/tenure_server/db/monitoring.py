"""Runs the statements of `sql/monitoring.sql`: alert state, the webhook outbox, the lease and
notable history, and retention. One method per statement, named after it.

Methods taking a `Holding` are fenced by the monitor's own lease (see the file's header)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tenure_server.db.connections import Connections
from tenure_server.db.sql import load
from tenure_server.domain.alerts import Alert, Delivery, OpenAlert
from tenure_server.domain.history import LeaseRecord, NotableEvent
from tenure_server.domain.names import prefix_upper_bound
from tenure_server.domain.principals import ForeignHolding, ReservedUse
from tenure_server.domain.status import LeaseView
from tenure_server.domain.windows import Holding

QUERIES = load("monitoring.sql")
# The Alert fields open_new_alerts takes, one array each, in its parameters' order.
_ALERT_COLUMNS = ("kind", "subject", "window", "lease", "holder", "generation", "summary")


class Fenced(Exception):
    """The monitor's lease is no longer held by this holding: nothing was written."""


class Monitoring(Connections):
    async def open_new_alerts(
        self,
        monitor: Holding,
        alerts: Sequence[tuple[Alert, Mapping[str, Any]]],
        targets: Sequence[str],
    ) -> list[Alert]:
        """Open each alert, with its payload, that is not in the table yet, in one statement: the
        ones this call opened (the others were open, or resolved, already)."""
        columns = [[getattr(alert, name) for alert, _ in alerts] for name in _ALERT_COLUMNS]
        payloads = [json.dumps(payload) for _, payload in alerts]
        row = await self._fetchrow(
            QUERIES["open_new_alerts"], *_fence(monitor), *columns, payloads, list(targets)
        )
        _fenced(row, "held")
        positions: list[int] = [] if row is None else row["opened"]
        return [alerts[position - 1][0] for position in positions]

    async def resolve_alert(
        self,
        monitor: Holding,
        alert: Alert,
        reason: str,
        payload: Mapping[str, Any],
        targets: Sequence[str],
    ) -> bool:
        """True when this call resolved the alert; False when it was resolved already."""
        row = await self._fetchrow(
            QUERIES["resolve_alert"],
            *_fence(monitor),
            alert.kind,
            alert.subject,
            alert.window,
            reason,
            json.dumps(payload),
            list(targets),
        )
        return _fenced(row, "resolved")

    async def end_foreign_holding(self, lease: str, service: str) -> ForeignHolding | None:
        """End a holding of the service's lease `lease` by any principal but `service`: the one
        ended, or None (free, or the service's)."""
        row = await self._fetchrow(QUERIES["end_foreign_holding"], lease, service)
        return None if row is None else ForeignHolding(lease, **dict(row))

    async def reserved_names(
        self, prefix: str, own: Sequence[str], recent_seconds: float, limit: int
    ) -> list[ReservedUse]:
        """Leases (used within `recent_seconds`) and live jobs under the reserved `prefix`, but
        the service's `own` leases; at most `limit` of each."""
        upper = prefix_upper_bound(prefix)
        rows = await self._fetch(
            QUERIES["reserved_names"], prefix, upper, list(own), recent_seconds, limit
        )
        return [ReservedUse(row["kind"], row["name"], row["lease"]) for row in rows]

    async def open_alerts(self, limit: int) -> list[OpenAlert]:
        """The oldest `limit` open alerts, oldest first."""
        return [_open_alert(row) for row in await self._fetch(QUERIES["open_alerts"], limit)]

    async def open_alerts_after(self, key: tuple[str, str, str], limit: int) -> list[OpenAlert]:
        """Up to `limit` open alerts in key order after `key` (("", "", "") from the start)."""
        rows = await self._fetch(QUERIES["open_alerts_after"], *key, limit)
        return [_open_alert(row) for row in rows]

    async def claim_deliveries(
        self, monitor: Holding, limit: int, claim_seconds: float
    ) -> list[Delivery]:
        rows = await self._fetch(
            QUERIES["claim_deliveries"], *_fence(monitor), limit, claim_seconds
        )
        return [
            Delivery(row["id"], row["target"], json.loads(row["payload"]), row["attempts"])
            for row in rows
        ]

    async def record_attempt(
        self,
        delivery: Delivery,
        *,
        ok: bool,
        status_code: int | None,
        error: str | None,
        duration: float,
        retry_in: float | None,
    ) -> bool:
        """Record an attempt; False when the delivery was claimed again meanwhile."""
        row = await self._fetchrow(
            QUERIES["record_attempt"],
            delivery.id,
            delivery.attempt,
            ok,
            status_code,
            error,
            duration,
            retry_in,
        )
        return row is not None and bool(row["current"])

    async def delivery_backlog(self) -> dict[str, int]:
        return {
            row["what"]: int(row["n"]) for row in await self._fetch(QUERIES["delivery_backlog"])
        }

    async def monitored_leases(
        self, limit: int, named: Sequence[str] = ()
    ) -> list[tuple[LeaseView, float | None]]:
        """Up to `limit` leases, held ones first, oldest holding first; and the `named` ones
        besides."""
        rows = await self._fetch(QUERIES["monitored_leases"], limit, list(named))
        return [_monitored(row) for row in rows]

    async def lease_events(self, lease: str, before: int | None, limit: int) -> list[LeaseRecord]:
        rows = await self._fetch(QUERIES["lease_events"], lease, before, limit)
        return [
            LeaseRecord(
                id=row["id"],
                lease=row["lease"],
                kind=row["kind"],
                holder=row["holder"],
                generation=row["generation"],
                previous_holder=row["previous_holder"],
                previous_generation=row["previous_generation"],
                at=row["at"],
            )
            for row in rows
        ]

    async def recent_events(self, limit: int) -> list[NotableEvent]:
        return [
            NotableEvent(**dict(row)) for row in await self._fetch(QUERIES["recent_events"], limit)
        ]

    async def prune_events(self, retention_seconds: float, batch: int) -> int:
        row = await self._fetchrow(QUERIES["prune_events"], retention_seconds, batch)
        return 0 if row is None else int(row["removed"])


def _fence(monitor: Holding) -> tuple[str, str, int]:
    return monitor.lease, monitor.holder, monitor.generation


def _fenced(row: Any, flag: str) -> bool:
    if row is None or not row["held"]:
        raise Fenced("the monitor lease is no longer held by this holding")
    return bool(row[flag])


def _open_alert(row: Any) -> OpenAlert:
    alert = Alert(
        kind=row["kind"],
        subject=row["subject"],
        window=row["window_key"],
        summary=row["summary"],
        lease=row["lease"],
        holder=row["holder"],
        generation=row["generation"],
    )
    return OpenAlert(alert, row["opened_at"])


def _monitored(row: Any) -> tuple[LeaseView, float | None]:
    """A lease as the monitor reads it, with the least max runtime of the jobs running under it."""
    view = LeaseView(
        name=row["name"],
        holder=row["holder"],
        generation=row["generation"],
        acquired_at=row["acquired_at"],
        expires_at=row["expires_at"],
        held=row["held"],
        expires_in_seconds=row["expires_in_seconds"],
    )
    return view, row["max_runtime_seconds"]
