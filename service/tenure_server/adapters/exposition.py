"""The Prometheus text format of a registry, as prometheus-client's `generate_latest` writes it,
with the text of each series kept between scrapes.

`generate_latest` escapes and validates every label name and value of every sample on every
scrape: with a thousand lease names and a thousand jobs a scrape holds some twenty thousand
series, and that was most of its CPU. A series' line is its name and labels, then its value; the
name and labels do not change from one scrape to the next. `Exposition` asks `generate_latest`
itself for a series' text the first time it meets the series (so the escaping is the library's)
and afterwards writes only the value, with the library's float formatting. Samples that
`generate_latest` moves into a family of their own (a counter's `_created`) are moved alike; a
family with timestamped samples (none of Tenure's) is written by `generate_latest` whole.
tests/unit/test_exposition.py checks the output is byte for byte the library's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

# generate_latest writes samples with these suffixes apart, each kind as a gauge family after
# the family they belong to.
_APART = ("_created", "_gsum", "_gcount")
SeriesKey = tuple[str, tuple[tuple[str, str], ...]]


class _Given(Collector):
    """A collector of families already collected: generate_latest's input for one family."""

    def __init__(self, metrics: Iterable[Metric]) -> None:
        self._metrics = list(metrics)

    def collect(self) -> Iterator[Metric]:
        return iter(self._metrics)


def _library(metric: Metric) -> str:
    return generate_latest(_Given([metric])).decode()


class Exposition:
    """The text format of `registry`'s families. A family's header is kept for the process's
    life; a series' text until a scrape no longer shows it (held leases come and go, so the
    state gauges' series are not bounded over time)."""

    def __init__(self, registry: Collector) -> None:
        self._registry = registry
        self._headers: dict[tuple[str, str, str], str] = {}
        self._prefixes: dict[SeriesKey, str] = {}
        self._shown: dict[SeriesKey, str] = {}

    def render(self) -> bytes:
        output: list[str] = []
        self._shown = {}
        for metric in self._registry.collect():
            text = self._family(metric)
            output.append(_library(metric) if text is None else text)
        self._prefixes, self._shown = self._shown, {}
        return "".join(output).encode()

    def _family(self, metric: Metric) -> str | None:
        """The family's text, or None when a sample has a timestamp (the library writes it)."""
        apart_names = {metric.name + suffix: suffix for suffix in _APART}
        lines = [self._header(metric.name, metric.documentation, metric.type)]
        apart: dict[str, list[str]] = {}
        prefixes, shown = self._prefixes, self._shown
        for sample in metric.samples:
            if sample.timestamp is not None:
                return None
            key = (sample.name, tuple(sample.labels.items()))
            prefix = prefixes.get(key)
            if prefix is None:
                prefix = self._prefix(sample)
            shown[key] = prefix
            value = floatToGoString(sample.value)  # type: ignore[no-untyped-call]  # unannotated upstream
            suffix = apart_names.get(sample.name)
            (lines if suffix is None else apart.setdefault(suffix, [])).append(f"{prefix}{value}\n")
        for suffix, apart_lines in sorted(apart.items()):
            lines.append(self._header(metric.name + suffix, metric.documentation, "gauge"))
            lines.extend(apart_lines)
        return "".join(lines)

    def _header(self, name: str, documentation: str, kind: str) -> str:
        """The family's HELP and TYPE lines, as generate_latest writes them."""
        key = (name, documentation, kind)
        header = self._headers.get(key)
        if header is None:
            header = self._headers[key] = _library(Metric(name, documentation, kind))
        return header

    @staticmethod
    def _prefix(sample: Sample) -> str:
        """The series' line up to its value, as generate_latest writes it."""
        alone = Metric("series", "", "unknown")
        alone.samples = [Sample(sample.name, sample.labels, 0.0)]
        line = _library(alone).splitlines()[-1]
        return line[: -len("0.0")]
