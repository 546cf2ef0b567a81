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
# What a merged family holds: by label set (without "le"), each sample's value.
Merged = defaultdict[Labels, dict[tuple[str, Labels], float]]
# How the gauge modes (multiprocess_mode) combine the workers' values of one series.
_GAUGE_RULES: dict[str, Callable[[float, float], float]] = {
    "min": min,
    "max": max,
    "sum": lambda held, value: held + value,
}


@dataclass(frozen=True, slots=True)
class _Key:
    """One series as a file names it: its family, sample name, sorted labels and the family's
    help; for a histogram's bucket, the bucket's bound and the labels without it."""

    family: str
    sample: str
    labels: Labels
    help: str
    bound: float | None
    without_bound: Labels


def _decode(key: str) -> _Key:
    family, sample, labels, help_text = json.loads(key)
    sorted_labels = tuple(sorted(labels.items()))
    bound = labels.get("le") if sample.endswith("_bucket") else None
    return _Key(
        family,
        sample,
        sorted_labels,
        help_text,
        None if bound is None else float(bound),
        tuple(pair for pair in sorted_labels if pair[0] != "le"),
    )


class _Family:
    """The merge of one family over the workers' files, in prometheus-client's order: label sets
    and samples as first met, buckets by bound, then each label set's count."""

    def __init__(self, name: str, help_text: str, kind: str, mode: str) -> None:
        self.name = name
        self.help = help_text
        self.kind = kind
        self.mode = mode
        self.samples: Merged = defaultdict(dict)
        self.buckets: defaultdict[Labels, defaultdict[float, float]] = defaultdict(
            lambda: defaultdict(float)
        )
        self.timestamps: dict[tuple[str, Labels], float] = {}

    def add(self, key: _Key, value: float, timestamp: float, pid: str) -> None:
        if self.kind == "gauge":
            self._add_gauge(key, value, timestamp, pid)
        elif key.bound is not None:
            self.buckets[key.without_bound][key.bound] += value
        else:
            held = self.samples[key.labels]
            sample = (key.sample, key.labels)
            held[sample] = held.get(sample, 0.0) + value

    def _add_gauge(self, key: _Key, value: float, timestamp: float, pid: str) -> None:
        mode = self.mode.removeprefix("live")
        labels = (*key.labels, ("pid", pid)) if mode == "all" else key.labels
        held = self.samples[labels]
        sample = (key.sample, labels)
        if mode == "mostrecent":
            if self.timestamps.get(sample, 0.0) < timestamp:
                held[sample] = value
                self.timestamps[sample] = timestamp
        elif mode in _GAUGE_RULES and sample in held:
            held[sample] = _GAUGE_RULES[mode](held[sample], value)
        else:  # "all", or the first value of a series
            held[sample] = value

    def metric(self, label_dicts: Callable[[Labels], dict[str, str]]) -> Metric:
        for labels, bounds in self.buckets.items():
            held = self.samples[labels]
            total = 0.0
            for bound, value in sorted(bounds.items()):
                total += value
                bucket = floatToGoString(bound)  # type: ignore[no-untyped-call]  # unannotated upstream
                held[(self.name + "_bucket", (*labels, ("le", bucket)))] = total
            held[(self.name + "_count", labels)] = total
        metric = Metric(self.name, self.help, self.kind)
        metric.samples = [
            Sample(sample, label_dicts(labels), value)
            for held in self.samples.values()
            for (sample, labels), value in held.items()
        ]
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
                family.add(key, value, timestamp, pid)
        for family in families.values():
            yield family.metric(self._labels)

    def _labels(self, labels: Labels) -> dict[str, str]:
        """One dict per label set for the process's life: the exposition only reads them."""
        found = self._label_dicts.get(labels)
        if found is None:
            found = self._label_dicts[labels] = dict(labels)
        return found
