"""The merge of the workers' metric files (adapters/worker_metrics.py) exposes exactly what
prometheus-client's own MultiProcessCollector exposes, byte for byte, scrape after scrape."""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.multiprocess import MultiProcessCollector

from tenure_server.adapters.worker_metrics import WorkerMetrics

# (file, family, sample, labels, value, timestamp): what two workers and a dead one wrote.
Entry = tuple[str, str, str, dict[str, str], float, float]
BUCKETS = ("0.1", "1.0", "+Inf")


def counters(pid: int, lease: str, count: float) -> list[Entry]:
    file = f"counter_{pid}.db"
    total = "tenure_lease_acquisitions_total"
    return [
        (file, "tenure_lease_acquisitions", total, {"lease": lease}, count, 0.0),
        (file, "tenure_lease_acquisitions", total, {"lease": "_other"}, 1.0, 0.0),
    ]


def histogram(pid: int, route: str, observed: float) -> list[Entry]:
    file, family = f"histogram_{pid}.db", "tenure_http_request_duration_seconds"
    labels = {"method": "GET", "route": route}
    return [
        *(
            (file, family, f"{family}_bucket", {**labels, "le": bound}, float(observed), 0.0)
            for bound in BUCKETS
        ),
        (file, family, f"{family}_sum", labels, observed / 10, 0.0),
    ]


def gauges(pid: int, value: float, at: float) -> list[Entry]:
    def gauge(mode: str, family: str, labels: dict[str, str]) -> Entry:
        return (f"gauge_{mode}_{pid}.db", family, family, labels, value, at)

    return [
        gauge("livesum", "tenure_database_pool_connections", {"state": "idle"}),
        gauge("livemostrecent", "tenure_database_clock_offset_seconds", {}),
        gauge("max", "gauge_max", {"kind": "a"}),
        gauge("min", "gauge_min", {"kind": "a"}),
        gauge("all", "gauge_all", {"kind": "a"}),
    ]


def write(folder: Path, entries: list[Entry]) -> None:
    files: dict[str, MmapedDict] = {}
    for file, family, sample, labels, value, timestamp in entries:
        if file not in files:
            files[file] = MmapedDict(str(folder / file))  # type: ignore[no-untyped-call]
        key = mmap_key(family, sample, list(labels), list(labels.values()), f"{family} help")
        files[file].write_value(key, value, timestamp)  # type: ignore[no-untyped-call]
    for opened in files.values():
        opened.close()  # type: ignore[no-untyped-call]


def expositions(folder: Path, ours: WorkerMetrics) -> tuple[bytes, bytes]:
    theirs = CollectorRegistry()
    MultiProcessCollector(theirs, str(folder))  # type: ignore[no-untyped-call]
    return generate_latest(theirs), "".join(ours.texts()).encode()


def test_the_merge_equals_prometheus_clients_scrape_after_scrape(tmp_path: Path) -> None:
    """Counters, histograms and every gauge mode summed over workers as prometheus-client sums
    them; again after values change, a new series appears and a worker's live file goes."""
    write(
        tmp_path,
        counters(11, "a", 2.0)
        + counters(12, "a", 3.0)
        + counters(13, "b", 5.0)
        + histogram(11, "/v1/overview", 1.0)
        + histogram(12, "/v1/overview", 2.0)
        + histogram(12, "/metrics", 4.0)
        + gauges(11, 1.0, 100.0)
        + gauges(12, 2.0, 50.0),
    )
    ours = WorkerMetrics(str(tmp_path))
    theirs, mine = expositions(tmp_path, ours)
    assert b'tenure_lease_acquisitions_total{lease="a"} 5.0' in mine
    assert mine == theirs

    write(tmp_path, counters(11, "c", 7.0) + histogram(11, "/v1/overview", 3.0))
    os.remove(tmp_path / "gauge_livesum_12.db")
    theirs, mine = expositions(tmp_path, ours)
    assert b'tenure_lease_acquisitions_total{lease="c"} 7.0' in mine
    assert mine == theirs


def test_a_file_written_anew_at_the_same_path_is_read_anew(tmp_path: Path) -> None:
    """A worker's live gauges removed, and a new worker of the same pid writing other series
    there: the entries read before are not taken for the new file's."""
    write(tmp_path, counters(11, "a", 2.0) + gauges(11, 1.0, 100.0))
    ours = WorkerMetrics(str(tmp_path))
    assert expositions(tmp_path, ours)[0] == expositions(tmp_path, ours)[1]

    os.remove(tmp_path / "gauge_livesum_11.db")
    pools = ("tenure_database_pool_max_connections", "tenure_database_pool_connections")
    write(
        tmp_path,
        [
            ("gauge_livesum_11.db", family, family, labels, 4.0, 0.0)
            for family, labels in zip(pools, ({}, {"state": "in_use"}), strict=True)
        ],
    )
    theirs, mine = expositions(tmp_path, ours)
    assert b"tenure_database_pool_max_connections 4.0" in mine
    assert mine == theirs


def test_a_file_still_being_created_shows_nothing_yet(tmp_path: Path) -> None:
    """A worker's file caught empty (where prometheus-client's reader fails), then with its size
    set but nothing used: no series and no error; its entries are read once written."""
    ours = WorkerMetrics(str(tmp_path))
    for started in (b"", bytes(65536)):
        (tmp_path / "counter_21.db").write_bytes(started)
        assert list(ours.texts()) == []
    write(tmp_path, counters(21, "a", 2.0))
    theirs, mine = expositions(tmp_path, ours)
    assert b'tenure_lease_acquisitions_total{lease="a"} 2.0' in mine
    assert mine == theirs
