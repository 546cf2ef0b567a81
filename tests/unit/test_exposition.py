"""The text format /metrics writes (adapters/exposition.py, and the state gauges' text) is
prometheus-client's `generate_latest`, byte for byte, scrape after scrape."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from tenure_server.adapters.exposition import Exposition, StateSet, value_text
from tenure_server.adapters.exposition import Gauge as StateGauge
from tenure_server.adapters.state_gauges import DatabaseGauges

# Label values that need escaping, and names as Tenure's are.
AWKWARD = ('quote"d', "back\\slash", "new\nline", "ünï", "")


def registry_of_every_kind() -> tuple[CollectorRegistry, Counter]:
    registry = CollectorRegistry()
    counter = Counter("tenure_things", 'Things\\ "done"\nhere.', ("lease",), registry=registry)
    for value in AWKWARD:
        counter.labels(value).inc(3)
    histogram = Histogram(
        "tenure_seconds", "Durations.", ("route",), buckets=(0.1, 1.0), registry=registry
    )
    histogram.labels("/v1/x").observe(0.5)
    Gauge("tenure_plain", "No labels.", registry=registry).set(1e22)
    return registry, counter


class Timestamped:
    """A collector whose samples carry timestamps."""

    def collect(self) -> list[GaugeMetricFamily]:
        family = GaugeMetricFamily("tenure_stamped", "Stamped.", labels=["x"])
        family.add_metric(["y"], 2.5, timestamp=1700000000.25)
        return [family]


class AsLibrary:
    """The state gauges as prometheus-client's own gauge families: what their text must be."""

    def __init__(self, gauges: DatabaseGauges, state: list[StateGauge | StateSet]) -> None:
        self._gauges = gauges
        self._state = state

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for name, doc, value in (
            ("tenure_database_up", "1 when the state gauges could be read from the database.", 1.0),
            ("tenure_ready", "1 when this replica is ready: the /readyz check passes.", 0.0),
        ):
            yield GaugeMetricFamily(name, doc, value=value)
        for gauge in self._state:
            family = GaugeMetricFamily(gauge.name, gauge.doc, labels=list(gauge.labels))
            if isinstance(gauge, StateSet):
                for item, current in gauge.current:
                    for state in gauge.states:
                        family.add_metric([item, state], float(state == current))
            else:
                for values, value in gauge.samples:
                    family.add_metric(list(values), value)
            yield family


def test_the_text_is_generate_latests_scrape_after_scrape() -> None:
    """Counters (with their `_created` moved apart), histograms, gauges, escaped labels and
    help, big floats and timestamps: the same bytes as generate_latest, again after values
    and series change."""
    registry, counter = registry_of_every_kind()
    registry.register(Timestamped())
    exposition = Exposition([], collector=registry)
    assert exposition.render() == generate_latest(registry)

    counter.labels("later").inc()
    counter.labels(AWKWARD[0]).inc(0.25)
    text = exposition.render()
    assert text == generate_latest(registry)
    assert 'tenure_things_total{lease="quote\\"d"} 3.25' in text.decode()


def test_the_state_gauges_text_is_generate_latests() -> None:
    """Escaped label values, several labels, no labels, values of every notation, state sets:
    the same bytes as the library's gauge families, after a new snapshot too."""
    gauges = DatabaseGauges(cache_seconds=0)
    statuses = ("ok", "late", "failed")
    snapshots: list[list[StateGauge | StateSet]] = [
        [
            StateSet("tenure_job_status", "S.", ("job", "status"), statuses, (("a", "late"),)),
            StateGauge("tenure_job_slow", "Slow.", ("job",), tuple(((v,), 1.0) for v in AWKWARD)),
            StateGauge("tenure_two", "Two.", ("job", "status"), ((("a", "ok"), 0.0),)),
            StateGauge("tenure_pending", "P.", (), (((), 1234567.0),)),
        ],
        [
            StateGauge("tenure_job_slow", "Slow.", ("job",), ((("c",), float("nan")),)),
            StateSet(
                "tenure_job_status",
                "S.",
                ("job", "status"),
                statuses,
                tuple(zip(AWKWARD[:3], statuses, strict=True)),
            ),
        ],
    ]
    for state in snapshots:
        gauges.update(state)
        library = CollectorRegistry()
        library.register(AsLibrary(gauges, state))
        assert "".join(gauges.texts()).encode() == generate_latest(library)


def test_values_are_written_as_the_library_writes_them() -> None:
    """Go's notation past a million, and the infinities and NaN by name."""
    for value in (0.0, -0.0, 1.5, -3.0, 1e-07, 999999.9, 1e6, 1234567.0, 1e22, -1e22):
        registry = CollectorRegistry()
        Gauge("tenure_value", "V.", registry=registry).set(value)
        assert f"tenure_value {value_text(value)}\n".encode() in generate_latest(registry)
    assert [value_text(v) for v in (float("inf"), float("-inf"), float("nan"))] == [
        "+Inf",
        "-Inf",
        "NaN",
    ]


def test_a_series_no_longer_shown_is_forgotten() -> None:
    """Held leases come and go: the text kept is that of the series the last snapshot showed."""
    gauges = DatabaseGauges(cache_seconds=0)
    for lease in ("a", "b", "c"):
        gauges.update([StateGauge("tenure_lease_stuck", "Stuck.", ("lease",), (((lease,), 0.0),))])
    assert set(gauges._state._kept["tenure_lease_stuck"]) == {("c",)}
