"""Sending one webhook delivery: render the payload for its target's format, POST it with a
timeout, and decide from the answer whether (and when) to try again."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from tenure_server.domain.alerts import Delivery, WebhookFormat, render, retry_delay, target_id

_log = logging.getLogger("tenure.webhooks")


@dataclass(frozen=True, slots=True)
class WebhookTarget:
    format: WebhookFormat
    url: str

    @property
    def id(self) -> str:
        return target_id(self.format, self.url)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    timeout_seconds: float
    max_attempts: int
    base_seconds: float
    max_seconds: float


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt gave: `retry_in` None after a success or when giving up."""

    ok: bool
    status_code: int | None
    error: str | None
    duration: float
    retry_in: float | None
    format: str

    @property
    def result(self) -> str:
        if self.ok:
            return "delivered"
        return "failed" if self.retry_in is not None else "gave_up"


async def send(
    client: httpx.AsyncClient,
    targets: Mapping[str, WebhookTarget],
    delivery: Delivery,
    policy: RetryPolicy,
) -> Outcome:
    """POST one delivery; never raises for a network or HTTP failure."""
    target = targets.get(delivery.target)
    if target is None:
        return Outcome(False, None, "webhook no longer configured", 0.0, None, "unknown")
    started = time.monotonic()
    status: int | None = None
    error: str | None = None
    try:
        response = await client.post(
            target.url, json=render(target.format, delivery.payload), timeout=policy.timeout_seconds
        )
        status = response.status_code
        if not 200 <= status < 300:
            error = f"HTTP {status}"
    except httpx.HTTPError as failure:
        # Never the URL: webhook URLs carry secrets.
        error = type(failure).__name__
    duration = time.monotonic() - started
    if error is None:
        return Outcome(True, status, None, duration, None, target.format)
    retry_in = (
        None
        if delivery.attempt >= policy.max_attempts
        else retry_delay(delivery.attempt, policy.base_seconds, policy.max_seconds)
    )
    _log.warning(
        "webhook delivery failed",
        extra={
            "event": "webhook.failed",
            "delivery": delivery.id,
            "target": delivery.target,
            "attempt": delivery.attempt,
            "error": error,
            "retry_in_seconds": retry_in,
        },
    )
    return Outcome(False, status, error, duration, retry_in, target.format)
