"""CPU per event of the live event stream's path (bench/README.md, step 21), in this process, no
database: what a request pays to record an event (the telemetry sink alone, then with the hub),
what the publishing process pays to turn recorded events into notification payloads, and what
each receiving process pays to frame them for its history and streams.

    .venv/bin/python bench/stream_cost.py [--events 20000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from tenure_server.adapters.stream import EventHub, FanOut, StreamConfig
from tenure_server.adapters.telemetry import Telemetry
from tenure_server.domain.events import LeaseEvent


def best_microseconds(work: Callable[[], None], count: int, rounds: int) -> float:
    """The best round's CPU time per item."""
    times = []
    for _ in range(rounds):
        started = time.process_time()
        work()
        times.append((time.process_time() - started) / count * 1e6)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    count = options.events
    events = [LeaseEvent("acquired", f"bench-{i}", "holder-1", i) for i in range(count)]
    telemetry = Telemetry(cache_seconds=5.0)
    hub = EventHub(StreamConfig(buffer_size=count * 10))
    sink = FanOut(telemetry.sink, hub)
    payloads: list[str] = []

    def telemetry_alone() -> None:
        for event in events:
            telemetry.sink.record(event)

    def with_the_hub() -> None:
        for event in events:
            sink.record(event)

    def publish() -> None:
        for event in events:
            hub.record(event)
        payloads[:] = [payload for payload, _ in hub.take_batches()]

    def deliver() -> None:
        for payload in payloads:
            hub.deliver(payload)

    figures = {
        "a request records an event: telemetry sink alone": telemetry_alone,
        "a request records an event: telemetry sink and the stream's hub": with_the_hub,
        "the publishing process: record, then notification payloads": publish,
        "each receiving process: frame for history and streams": deliver,
    }
    for label, work in figures.items():
        print(f"{label}: {best_microseconds(work, count, options.rounds):.2f} µs per event")
        for _ in hub.take_batches():  # what a figure left buffered is not the next one's work
            pass


if __name__ == "__main__":
    main()
