"""The text format /metrics writes (adapters/exposition.py) is prometheus-client's
`generate_latest`, byte for byte, scrape after scrape."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from tenure_server.adapters.exposition import Exposition
from tenure_server.adapters.state_gauges import DatabaseGauges
from tenure_server.adapters.state_gauges import Gauge as StateGauge

# Label values that need escaping, and names as Tenure's are.
AWKWARD = ('quote"d', "back\\slash", "new\nline", "ünï", "")


def registry_of_every_kind() -> tuple[CollectorRegistry, Counter, DatabaseGauges]:
    registry = CollectorRegistry()
    counter = Counter("tenure_things", 'Things\\ "done"\nhere.', ("lease",), registry=registry)
    for value in AWKWARD:
        counter.labels(value).inc(3)
    histogram = Histogram(
        "tenure_seconds", "Durations.", ("route",), buckets=(0.1, 1.0), registry=registry
    )
    histogram.labels("/v1/x").observe(0.5)
    Gauge("tenure_plain", "No labels.", registry=registry).set(1e22)
    gauges = DatabaseGauges(cache_seconds=0)
    gauges.update(
        [StateGauge("tenure_job_slow", "Slow.", ("job",), ((("a",), 1.0), (("b",), 0.0)))]
    )
    registry.register(gauges)
    return registry, counter, gauges


class Timestamped:
    """A collector whose samples carry timestamps."""

    def collect(self) -> list[GaugeMetricFamily]:
        family = GaugeMetricFamily("tenure_stamped", "Stamped.", labels=["x"])
        family.add_metric(["y"], 2.5, timestamp=1700000000.25)
        return [family]


def test_the_text_is_generate_latests_scrape_after_scrape() -> None:
    """Counters (with their `_created` moved apart), histograms, gauges, escaped labels and
    help, big floats and timestamps: the same bytes as generate_latest, again after values
    and series change."""
    registry, counter, gauges = registry_of_every_kind()
    registry.register(Timestamped())
    exposition = Exposition(registry)
    assert exposition.render() == generate_latest(registry)

    counter.labels("later").inc()
    counter.labels(AWKWARD[0]).inc(0.25)
    gauges.update([StateGauge("tenure_job_slow", "Slow.", ("job",), ((("c",), 1.0),))])
    text = exposition.render()
    assert text == generate_latest(registry)
    assert 'tenure_things_total{lease="quote\\"d"} 3.25' in text.decode()


def test_a_series_no_longer_shown_is_forgotten() -> None:
    """Held leases come and go: the text kept is that of the series the last scrape showed."""
    registry = CollectorRegistry()
    gauges = DatabaseGauges(cache_seconds=0)
    registry.register(gauges)
    exposition = Exposition(registry)
    for lease in ("a", "b", "c"):
        gauges.update([StateGauge("tenure_lease_stuck", "Stuck.", ("lease",), (((lease,), 0.0),))])
        assert exposition.render() == generate_latest(registry)
    kept = {labels for _, labels in exposition._prefixes}
    assert kept == {(), (("lease", "c"),)}
