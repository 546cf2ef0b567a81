"""The counters, histograms and live gauges of every worker of a replica, merged from the files
prometheus-client's multiprocess mode writes (PROMETHEUS_MULTIPROC_DIR).

prometheus-client's own `MultiProcessCollector` gives the same families, sample for sample and in
the same order (tests/unit/test_worker_metrics.py compares the two expositions), but it starts
from nothing on every scrape: it decodes each series' JSON key again, builds a `Sample` per file
entry and then merges them, comparing the gauge mode again for every sample. With a thousand
lease names a worker holds about ten thousand series, and that was most of a scrape's CPU. This
collector lives as long as the app: a key is decoded once for the process's life (a key names one
series and never changes), and each family is merged by one rule chosen from its type and mode.
"""

from __future__ import annotations

import glob
import json
import os
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.metrics_core import Metric
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

Labels = tuple[tuple[str, str], ...]
# How the gauge modes (multiprocess_mode) combine the workers' values of one series.
_GAUGE_RULES: dict[str, Callable[[float, float], float]] = {
    "min": min,
    "max": max,
    "sum": lambda held, value: held + value,
}


@dataclass(frozen=True, slots=True)
class _Key:
    """One series as a file names it: its family, sample name, sorted labels (and as the dict
    the exposition reads) and the family's help; for a histogram's bucket, the bucket's bound
    and the labels without it."""

    family: str
    sample: str
    labels: Labels
    label_dict: dict[str, str]
    help: str
    bound: float | None
    without_bound: Labels


def _decode(key: str) -> _Key:
    family, sample, labels, help_text = json.loads(key)
    return _key(family, sample, tuple(sorted(labels.items())), help_text)


def _key(family: str, sample: str, labels: Labels, help_text: str) -> _Key:
    bound = dict(labels).get("le") if sample.endswith("_bucket") else None
    return _Key(
        family,
        sample,
        labels,
        dict(labels),
        help_text,
        None if bound is None else float(bound),
        tuple(pair for pair in labels if pair[0] != "le"),
    )


class _Family:
    """The merge of one family over the workers' files, in prometheus-client's order: series as
    first met; a histogram's grouped by label set (without "le"), its buckets by bound, then its
    count. `totals` holds each series' value by the text that names it in the files."""

    def __init__(self, name: str, help_text: str, kind: str, mode: str) -> None:
        self.name = name
        self.help = help_text
        self.kind = kind
        self.mode = mode.removeprefix("live")
        self.totals: dict[str, float] = {}
        self.buckets: defaultdict[Labels, defaultdict[float, float]] = defaultdict(
            lambda: defaultdict(float)
        )
        self.timestamps: dict[str, float] = {}

    def add_gauge(self, text: str, value: float, timestamp: float) -> None:
        """Add a worker's value of a gauge's series (`text` names the worker's own series when
        the mode keeps each worker's apart)."""
        totals, mode = self.totals, self.mode
        if mode == "mostrecent":
            if self.timestamps.get(text, 0.0) < timestamp:
                totals[text] = value
                self.timestamps[text] = timestamp
        elif mode in _GAUGE_RULES and text in totals:
            totals[text] = _GAUGE_RULES[mode](totals[text], value)
        else:  # "all", or the first value of a series
            totals[text] = value

    def metric(self, keys: dict[str, _Key], labels: Callable[[Labels], dict[str, str]]) -> Metric:
        metric = Metric(self.name, self.help, self.kind)
        if self.kind != "histogram":
            metric.samples = [
                Sample(key.sample, key.label_dict, value)
                for key, value in ((keys[text], value) for text, value in self.totals.items())
            ]
            return metric
        grouped: defaultdict[Labels, list[Sample]] = defaultdict(list)
        for text, value in self.totals.items():
            key = keys[text]
            grouped[key.labels].append(Sample(key.sample, key.label_dict, value))
        for without, bounds in self.buckets.items():
            group = grouped[without]
            total = 0.0
            for bound, value in sorted(bounds.items()):
                total += value
                bucket = floatToGoString(bound)  # type: ignore[no-untyped-call]  # unannotated upstream
                group.append(
                    Sample(self.name + "_bucket", labels((*without, ("le", bucket))), total)
                )
            group.append(Sample(self.name + "_count", labels(without), total))
        metric.samples = [sample for group in grouped.values() for sample in group]
        return metric


class WorkerMetrics:
    """A Prometheus collector of the multiprocess files in `folder`."""

    def __init__(self, folder: str) -> None:
        self._folder = folder
        self._keys: dict[str, _Key] = {}
        self._label_dicts: dict[Labels, dict[str, str]] = {}

    def collect(self) -> Iterator[Metric]:
        families: dict[str, _Family] = {}
        keys = self._keys
        for path in glob.glob(os.path.join(self._folder, "*.db")):
            kind, *mode, pid = os.path.basename(path)[: -len(".db")].split("_")
            try:
                entries = MmapedDict.read_all_values_from_file(path)  # type: ignore[no-untyped-call]  # unannotated upstream
            except FileNotFoundError:
                if mode and mode[0].startswith("live"):
                    continue  # a dead worker's live gauges, removed since the glob
                raise
            for text, value, timestamp, _ in entries:
                key = keys.get(text)
                if key is None:
                    key = keys[text] = _decode(text)
                family = families.get(key.family)
                if family is None:
                    family = families[key.family] = _Family(
                        key.family, key.help, kind, mode[0] if mode else ""
                    )
                if kind == "gauge":
                    family.add_gauge(self._own(text, key, pid, family.mode), value, timestamp)
                elif key.bound is not None:
                    family.buckets[key.without_bound][key.bound] += value
                else:
                    totals = family.totals
                    totals[text] = totals.get(text, 0.0) + value
        for family in families.values():
            yield family.metric(keys, self._labels)

    def _own(self, text: str, key: _Key, pid: str, mode: str) -> str:
        """The text naming a gauge's series: a worker's own, with its pid as a label, in the
        "all" mode (a JSON text holds no raw tab, so the two cannot meet)."""
        if mode != "all":
            return text
        own = f"{text}\t{pid}"
        if own not in self._keys:
            self._keys[own] = _key(key.family, key.sample, (*key.labels, ("pid", pid)), key.help)
        return own

    def _labels(self, labels: Labels) -> dict[str, str]:
        """One dict per label set for the process's life: the exposition only reads them."""
        found = self._label_dicts.get(labels)
        if found is None:
            found = self._label_dicts[labels] = dict(labels)
        return found
