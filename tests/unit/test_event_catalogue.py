"""The one catalogue of event types (`domain/events.CATALOGUE`) names every event the service can
emit, and every reader handles each entry: the metrics, the log line, the live stream and the
client's `tenure status --watch` (its table generated from the catalogue)."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from tenure import StreamEvent
from tenure._event_types import FAMILIES as CLIENT_FAMILIES
from tenure._event_types import NAME_FIELDS, STREAM_TYPES
from tenure._status import render_event
from tenure_server.adapters.telemetry import Metrics, TelemetrySink
from tenure_server.app.stream_wire import EVENT_TYPES, streamed
from tenure_server.domain.events import (
    CATALOGUE,
    FAMILIES,
    Event,
    FenceEvent,
    LeaseEvent,
    WindowEvent,
    event_fields,
)
from tests.unit.test_event_hub import ONE_OF_EACH

ROOT = Path(__file__).parents[2]
# One event of each type: the streamed ones (which the stream and rendering tests use), and
# those only counted and logged.
EXAMPLES: list[Event] = [
    *ONE_OF_EACH,
    LeaseEvent("refused", "a", "h", None),
    FenceEvent("ledger", "a", 1),
]


def test_every_event_class_is_a_family_and_every_name_an_entry() -> None:
    """Each class of the `Event` union is one family; the names its kinds give (`lease.acquired`,
    …) are exactly the catalogue's entries, each under its own family."""
    assert sorted(family.cls.__name__ for family in FAMILIES) == sorted(
        cls.__name__ for cls in get_args(Event)
    )
    names = {f"{family.name}.{kind}" for family in FAMILIES for kind in family.kinds}
    assert names == set(CATALOGUE)
    for name, entry in CATALOGUE.items():
        assert (name, entry.name.partition(".")[0]) == (entry.name, entry.family.name)


def test_the_examples_cover_the_catalogue() -> None:
    """One example of each entry, so that the tests here and the stream's reach every type."""
    assert sorted(event.name for event in EXAMPLES) == sorted(CATALOGUE)


def _samples(
    metrics: Metrics, suffixes: tuple[str, ...] = ("_total", "_count")
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.name.endswith(suffixes) and sample.value
    }


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda event: event.name)
def test_each_event_adds_one_to_exactly_the_metrics_its_entry_names(event: Event) -> None:
    """Counters by one, histograms by one observation, with the labels the entry names read from
    the event; no other metric moves."""
    metrics = Metrics()
    metrics.observe(event)
    entry = CATALOGUE[event.name]
    expected = {}
    for count in entry.counts:
        suffix = "_total" if count.observe is None else "_count"
        labels = {label: getattr(event, entry.family.attribute(label)) for label in count.labels}
        expected[count.metric + suffix, tuple(sorted(labels.items()))] = 1.0
    assert _samples(metrics) == expected
    assert entry.counts or entry.name == "lease.force_released"  # counted nowhere, only logged


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda event: event.name)
def test_each_event_is_logged_at_its_entrys_level(
    event: Event, caplog: pytest.LogCaptureFixture
) -> None:
    """One line named after the event, at the level its entry gives, with its fields."""
    caplog.set_level(logging.DEBUG, "tenure.events")
    TelemetrySink(Metrics()).record(event)
    (record,) = caplog.records
    entry = CATALOGUE[event.name]
    assert (record.getMessage(), record.levelno) == (entry.name, entry.level)
    assert record.__dict__["event"] == entry.name


def test_a_batch_of_events_is_counted_and_logged_as_each_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`record_many` moves the metrics as recording each event would, events alike counted
    together and events of other label values apart, and logs each event's line in order."""
    batch: list[Event] = [
        *EXAMPLES,
        *EXAMPLES,
        FenceEvent("other-resource", "a", 2),  # alike to the metrics: one lease
        FenceEvent("ledger", "b", 1),  # another lease
        FenceEvent("ledger", "a", 1, "stale_generation", 3),
        FenceEvent("ledger", "a", 1, "unknown_generation", 0),  # another reason
        WindowEvent("completed", "job", "w2", "job", "h", 1, 1, 2.0),  # one duration observed
        WindowEvent("completed", "job", "w3", "job", "h", 1, 1, 7.5),  # another
    ]
    one_by_one, together = Metrics(), Metrics()
    for event in batch:
        TelemetrySink(one_by_one).record(event)
    caplog.set_level(logging.DEBUG, "tenure.events")
    caplog.clear()
    TelemetrySink(together).record_many(batch)
    every = ("_total", "_count", "_sum", "_bucket")
    assert _samples(together, every) == _samples(one_by_one, every)
    assert len(caplog.records) == len(batch)
    for record, event in zip(caplog.records, batch, strict=True):
        fields = event_fields(event)
        assert (record.getMessage(), record.levelno) == (event.name, CATALOGUE[event.name].level)
        assert {name: record.__dict__[name] for name in fields} == fields


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda event: event.name)
def test_each_streamed_event_carries_its_entrys_fields(event: Event) -> None:
    """An entry without a stream type is not streamed; one with it is streamed under it, its
    data the entry's fields in order, filtered by the family's names, each a field of it."""
    entry = CATALOGUE[event.name]
    found = streamed(event, 0.0)
    if entry.stream is None:
        assert found is None
        return
    assert found is not None
    names, data = found
    assert list(data) == ["type", "at", *entry.fields]
    assert data["type"] == entry.stream
    assert names == tuple(data[name] for name in entry.family.names)


def test_the_stream_types_are_the_catalogues() -> None:
    """The stream's list of types (OpenAPI, /ui's script) is the catalogue's streamed names."""
    assert (
        tuple(entry.stream for entry in CATALOGUE.values() if entry.stream is not None)
        == EVENT_TYPES
    )


def test_the_clients_event_types_are_generated_from_the_catalogue() -> None:
    """scripts/generate_event_types.py --check: client/tenure/_event_types.py is what the
    catalogue generates today (run `make events` after changing it)."""
    command = [sys.executable, str(ROOT / "scripts" / "generate_event_types.py"), "--check"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert tuple(family.name for family in FAMILIES) == CLIENT_FAMILIES
    assert set(STREAM_TYPES) == set(EVENT_TYPES)


@pytest.mark.parametrize("event", ONE_OF_EACH, ids=lambda event: event.name)
def test_the_client_names_and_renders_each_streamed_type_by_its_family(event: Event) -> None:
    """`StreamEvent.name` is what the family's first name field holds, and `tenure status
    --watch` renders the type by its family, never as an unknown type."""
    found = streamed(event, 0.0)
    assert found is not None
    names, data = found
    received = StreamEvent("p-1", data["type"], data)
    family = CATALOGUE[event.name].family
    assert NAME_FIELDS[family.name] == family.names[0]
    assert received.name == names[0]
    assert STREAM_TYPES[received.type][0] == family.name
    unknown = render_event(StreamEvent("p-1", "stream.unknown", {**data, "type": "stream.x"}))
    assert render_event(received).split("  ")[3:] != unknown.split("  ")[3:]
