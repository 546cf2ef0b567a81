"""The database clock watch (adapters/database_clock.py): a step of the database's clock, measured
against the replica's monotonic clock, is exported, counted by direction and logged; the round
trips of the readings and a move under the threshold are not a jump."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from tenure_server.adapters.database_clock import DatabaseClockMetrics, DatabaseClockWatch

START = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


class FakeClocks:
    """A monotonic clock, and a database clock that follows it plus a settable offset; each
    reading takes `round_trip` seconds."""

    def __init__(self) -> None:
        self.monotonic = 100.0
        self.offset = 0.0
        self.round_trip = 0.002

    def now(self) -> float:
        return self.monotonic

    async def database_now(self) -> datetime:
        self.monotonic += self.round_trip / 2
        moment = START + timedelta(seconds=self.monotonic - 100.0 + self.offset)
        self.monotonic += self.round_trip / 2
        return moment


def _watch(clocks: FakeClocks) -> tuple[DatabaseClockWatch, CollectorRegistry]:
    registry = CollectorRegistry()
    metrics = DatabaseClockMetrics(registry)
    return DatabaseClockWatch(clocks, metrics, jump_seconds=0.25, monotonic=clocks.now), registry


def _sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def _read(watch: DatabaseClockWatch, clocks: FakeClocks, seconds: float) -> None:
    clocks.monotonic += seconds
    asyncio.run(watch.read())


def test_a_forward_step_is_measured_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    """A 1.5 s forward step shows as a 1.5 s offset, one forward jump, and a warning."""
    clocks = FakeClocks()
    watch, registry = _watch(clocks)
    _read(watch, clocks, 0)
    _read(watch, clocks, 5)
    clocks.offset = 1.5
    with caplog.at_level(logging.WARNING, "tenure.database_clock"):
        _read(watch, clocks, 5)
    offset = _sample(registry, "tenure_database_clock_offset_seconds")
    assert offset == pytest.approx(1.5, abs=0.01)
    assert _sample(registry, "tenure_database_clock_jumps_total", direction="forward") == 1
    assert _sample(registry, "tenure_database_clock_jumps_total", direction="backward") == 0
    [record] = caplog.records
    assert record.event == "database_clock.jump"  # type: ignore[attr-defined]
    assert "jumped forward by 1.500 s" in record.getMessage()


def test_a_backward_step_is_counted_backward() -> None:
    """A step back is a backward jump and a negative offset."""
    clocks = FakeClocks()
    watch, registry = _watch(clocks)
    _read(watch, clocks, 0)
    clocks.offset = -2.0
    _read(watch, clocks, 5)
    assert _sample(registry, "tenure_database_clock_offset_seconds") == pytest.approx(
        -2.0, abs=0.01
    )
    assert _sample(registry, "tenure_database_clock_jumps_total", direction="backward") == 1


def test_small_moves_and_slow_answers_are_no_jump() -> None:
    """A move under the threshold, or one a slow reading's round trip explains, is not a jump
    (the offset still shows it)."""
    clocks = FakeClocks()
    watch, registry = _watch(clocks)
    _read(watch, clocks, 0)
    clocks.offset = 0.2
    _read(watch, clocks, 5)
    clocks.round_trip = 1.0  # the database instant is anywhere within a second
    clocks.offset = 0.6
    _read(watch, clocks, 5)
    for direction in ("forward", "backward"):
        assert _sample(registry, "tenure_database_clock_jumps_total", direction=direction) == 0
    assert _sample(registry, "tenure_database_clock_offset_seconds") == pytest.approx(0.6, abs=0.01)
