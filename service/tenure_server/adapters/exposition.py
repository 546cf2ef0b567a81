"""The Prometheus text format of the metrics, as prometheus-client's `generate_latest` writes it,
with the text of each series kept between scrapes.

`generate_latest` escapes and validates every label name and value of every sample on every
scrape: with a thousand lease names and a thousand jobs a scrape holds some twenty thousand
series, and that was most of its CPU. A series' line is its name and labels, then its value; the
name and labels do not change from one scrape to the next. The text of a family's header and of a
series' name and labels is asked of `generate_latest` itself the first time it is met (so the
escaping is the library's) and kept; afterwards only values are written, formatted as the library
formats them. Two kinds of sources: a `Collector` (the process's own registry), whose samples
are matched to their kept text here, and `Texts` sources, which keep the text of their own series
(the workers' files, the state gauges) and give each family's text whole.
tests/unit/test_exposition.py checks the output is byte for byte the library's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from prometheus_client import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

# generate_latest writes samples with these suffixes apart, each kind as a gauge family after
# the family they belong to.
_APART = ("_created", "_gsum", "_gcount")
SeriesKey = tuple[str, tuple[tuple[str, str], ...]]
# Below a million, and finite, the library writes a value as Python's repr (Go's notation, which
# it follows, switches to exponents sooner).
_REPR_BELOW = 1e6


@dataclass(frozen=True, slots=True)
class Gauge:
    """A gauge family: its series by their label values."""

    name: str
    doc: str
    labels: tuple[str, ...]
    samples: tuple[tuple[tuple[str, ...], float], ...]


@dataclass(frozen=True, slots=True)
class StateSet:
    """A gauge family of one series per item and state: 1 for the item's current state, 0 for
    the others. `labels`: the item's label, then the state's."""

    name: str
    doc: str
    labels: tuple[str, str]
    states: tuple[str, ...]
    current: tuple[tuple[str, str], ...]  # (item, its state)


class Texts(Protocol):
    """A source that writes its families' text itself, one string per family."""

    def texts(self) -> Iterable[str]: ...


class _Given(Collector):
    """A collector of families already collected: generate_latest's input for one family."""

    def __init__(self, metrics: Iterable[Metric]) -> None:
        self._metrics = list(metrics)

    def collect(self) -> Iterator[Metric]:
        return iter(self._metrics)


def _library(metric: Metric) -> str:
    return generate_latest(_Given([metric])).decode()


def header(name: str, documentation: str, kind: str) -> str:
    """A family's HELP and TYPE lines, as generate_latest writes them."""
    return _library(Metric(name, documentation, kind))


def series_prefix(name: str, labels: Mapping[str, str]) -> str:
    """A series' line up to its value, as generate_latest writes it."""
    alone = Metric("series", "", "unknown")
    alone.samples = [Sample(name, dict(labels), 0.0)]
    line = _library(alone).splitlines()[-1]
    return line[: -len("0.0")]


def value_text(value: float) -> str:
    """A value as generate_latest writes it."""
    if -math.inf < value < _REPR_BELOW:
        return repr(value)
    return floatToGoString(value)  # type: ignore[no-untyped-call, no-any-return]  # unannotated upstream


class Headers:
    """Families' headers, each made once for the process's life (families are few)."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, str, str], str] = {}

    def __call__(self, name: str, documentation: str, kind: str) -> str:
        key = (name, documentation, kind)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = header(name, documentation, kind)
        return made


class Exposition:
    """The text format of `collector`'s families, then of each of `texts`'. For the collector, a
    series' text is kept until a scrape no longer shows it."""

    def __init__(self, texts: Sequence[Texts], collector: Collector | None = None) -> None:
        self._texts = texts
        self._collector = collector
        self._header = Headers()
        self._prefixes: dict[SeriesKey, str] = {}
        self._shown: dict[SeriesKey, str] = {}

    def render(self) -> bytes:
        output: list[str] = []
        self._shown = {}
        for metric in self._collector.collect() if self._collector is not None else ():
            text = self._family(metric)
            output.append(_library(metric) if text is None else text)
        for source in self._texts:
            output.extend(source.texts())
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
                prefix = series_prefix(sample.name, sample.labels)
            shown[key] = prefix
            suffix = apart_names.get(sample.name)
            line = f"{prefix}{value_text(sample.value)}\n"
            (lines if suffix is None else apart.setdefault(suffix, [])).append(line)
        for suffix, apart_lines in sorted(apart.items()):
            lines.append(self._header(metric.name + suffix, metric.documentation, "gauge"))
            lines.extend(apart_lines)
        return "".join(lines)


class GaugeText:
    """The exposition text of gauge families, as generate_latest writes them. The text of a
    series' name and labels (of an item's whole state set) is kept while renders show it: held
    leases come and go, so a lease's is not kept for the process's life."""

    def __init__(self) -> None:
        self._header = Headers()
        self._kept: dict[str, dict[tuple[str, ...], str]] = {}

    def render(self, gauges: Iterable[Gauge | StateSet]) -> str:
        kept: dict[str, dict[tuple[str, ...], str]] = {}
        lines: list[str] = []
        for gauge in gauges:
            lines.append(self._header(gauge.name, gauge.doc, "gauge"))
            before = self._kept.get(gauge.name, {})
            shown = kept[gauge.name] = {}
            if isinstance(gauge, StateSet):
                lines.extend(_state_sets(gauge, before, shown))
                continue
            for values, value in gauge.samples:
                prefix = before.get(values)
                if prefix is None:
                    prefix = series_prefix(gauge.name, dict(zip(gauge.labels, values, strict=True)))
                shown[values] = prefix
                lines.append(f"{prefix}{value_text(value)}\n")
        self._kept = kept
        return "".join(lines)


def _state_sets(
    family: StateSet, before: dict[tuple[str, ...], str], shown: dict[tuple[str, ...], str]
) -> Iterator[str]:
    """Each item's lines, all its states', made once for each (item, current state)."""
    item_label, state_label = family.labels
    for item, current in family.current:
        key = (item, current)
        text = before.get(key)
        if text is None:
            text = "".join(
                f"{series_prefix(family.name, {item_label: item, state_label: state})}"
                f"{value_text(float(state == current))}\n"
                for state in family.states
            )
        shown[key] = text
        yield text
