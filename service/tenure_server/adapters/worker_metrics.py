"""The counters, histograms and live gauges of every worker of a replica, merged from the files
prometheus-client's multiprocess mode writes (PROMETHEUS_MULTIPROC_DIR), as exposition text.

prometheus-client's own `MultiProcessCollector` gives the same families, series for series and in
the same order (tests/unit/test_worker_metrics.py compares the two expositions), but it starts
from nothing on every scrape: it decodes every entry of every file, builds a `Sample` of each,
merges them, and `generate_latest` escapes every label again. With a thousand lease names a
worker's files hold about ten thousand series, and a scrape of an empty database cost some 100 ms
of CPU. A worker's file only grows: `MmapedDict` appends an entry for a new series and overwrites
its value in place. So this reader keeps, for each file, the series of the entries read so far and
a `struct` that reads all their values at once; an entry is decoded once, and the text of its
series up to the value made once, for the process's life. A scrape unpacks the values, merges
them by one rule per file, and writes each line's value.
"""

from __future__ import annotations

import glob
import json
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.utils import floatToGoString

from tenure_server.adapters.exposition import Headers, series_prefix, value_text

Labels = tuple[tuple[str, str], ...]
# MmapedDict's layout: a native int of the bytes used, 4 bytes of padding, then entries: a native
# int (the key's length), the key in UTF-8 padded to 8-byte alignment, the value and a timestamp
# (two native doubles).
_INT = struct.Struct("=i")
_FIRST_ENTRY = 8
_PAGE = 4096
# How the gauge modes "min" and "max" combine the workers' values of a series (the others:
# `_merge`).
_RULES: dict[str, Callable[[float, float], float]] = {"min": min, "max": max}


@dataclass(frozen=True, slots=True)
class _Series:
    """One series as the files name it: its family (name, type, help), sample name and sorted
    labels; for a histogram's bucket, its bound and the labels without it; and its line's text
    up to the value."""

    family: str
    kind: str
    help: str
    labels: Labels
    bound: float | None
    without_bound: Labels
    prefix: str


def _series(kind: str, key: str, pid: str | None) -> _Series:
    """The series a file's key names (`pid`: a worker's own series, in the "all" gauge mode)."""
    family, sample, label_dict, help_text = json.loads(key)
    labels = tuple(sorted(label_dict.items()))
    if pid is not None:
        labels = (*labels, ("pid", pid))
    without = tuple(pair for pair in labels if pair[0] != "le")
    bound_text = label_dict.get("le") if sample.endswith("_bucket") else None
    bound = None if bound_text is None else float(bound_text)
    shown = labels if bound is None else (*without, ("le", floatToGoString(bound)))  # type: ignore[no-untyped-call]  # unannotated upstream
    return _Series(
        family, kind, help_text, labels, bound, without, series_prefix(sample, dict(shown))
    )


@dataclass(slots=True)
class _Layout:
    """The entries of one file read so far: the slot of each one's series, the families they
    belong to as first met, where the last key lies (to tell the file from another one at the
    same path), and a struct that reads every entry's value and timestamp at once."""

    inode: int
    used: int = _FIRST_ENTRY
    end: int = 0
    slots: list[int] = field(default_factory=list)
    families: dict[str, None] = field(default_factory=dict)
    last_key: tuple[int, bytes] = (0, b"")
    formats: list[str] = field(default_factory=list)
    numbers: struct.Struct = field(default_factory=lambda: struct.Struct("="))

    def holds(self, inode: int, data: bytes, used: int) -> bool:
        """Whether `data` is this file, grown or not since."""
        at, key = self.last_key
        return inode == self.inode and used >= self.used and data[at : at + len(key)] == key


def _entries(data: bytes, start: int, used: int) -> Iterator[tuple[int, bytes, int]]:
    """Where each entry's key is, the key, and where its value is, from `start` to `used`."""
    at = start
    while at < used:
        length = _INT.unpack_from(data, at)[0]
        if at + 4 + length > used:
            raise RuntimeError("Read beyond file size detected, file is corrupted.")
        key_at = at + 4
        value_at = key_at + length + (8 - (length + 4) % 8)
        yield key_at, data[key_at : key_at + length], value_at
        at = value_at + 16


def _read(path: str) -> tuple[int, bytes, int]:
    """The file's inode, its bytes in use, and how many they are."""
    with open(path, "rb") as file:
        inode = os.fstat(file.fileno()).st_ino
        data = file.read(_PAGE)
        # A file a worker is creating may be empty, or not yet say what it uses: no entries.
        used = _INT.unpack_from(data, 0)[0] if len(data) >= _FIRST_ENTRY else 0
        if used > len(data):
            data += file.read(used - len(data))
    return inode, data, used


class WorkerMetrics:
    """The families of the multiprocess files in `folder`, as text (`exposition.Texts`)."""

    def __init__(self, folder: str) -> None:
        self._folder = folder
        self._layouts: dict[str, _Layout] = {}
        self._slots: dict[tuple[str, str | None], int] = {}
        self._series: list[_Series] = []
        self._first: dict[str, int] = {}  # each family's first series: its help and type
        self._header = Headers()
        self._count_prefixes: dict[tuple[str, Labels], str] = {}

    def texts(self) -> Iterator[str]:
        totals: dict[int, float] = {}  # by slot, in the order first met
        stamps: dict[int, float] = {}
        # A family is shown from its first file on, even without a series yet (a "mostrecent"
        # gauge never set), as prometheus-client shows it.
        families: dict[str, list[int]] = {}
        layouts = {}
        for path in glob.glob(os.path.join(self._folder, "*.db")):
            kind, *mode, pid = os.path.basename(path)[: -len(".db")].split("_")
            rule = mode[0].removeprefix("live") if kind == "gauge" else "sum"
            try:
                inode, data, used = _read(path)
            except FileNotFoundError:
                if mode and mode[0].startswith("live"):
                    continue  # a dead worker's live gauges, removed since the glob
                raise
            if used < _FIRST_ENTRY:
                continue
            layout = self._layouts.get(path)
            if layout is None or not layout.holds(inode, data, used):
                layout = _Layout(inode)
            layouts[path] = layout
            self._extend(layout, kind, pid if rule == "all" else None, data, used)
            numbers = layout.numbers.unpack_from(data)
            _merge(totals, stamps, rule, layout.slots, numbers)
            for family in layout.families:
                families.setdefault(family, [])
        self._layouts = layouts
        series = self._series
        for slot in totals:
            families[series[slot].family].append(slot)
        for family, slots in families.items():
            yield self._family(family, slots, totals)

    def _extend(self, layout: _Layout, kind: str, pid: str | None, data: bytes, used: int) -> None:
        """Read the entries appended since `layout` last read the file."""
        if used == layout.used:
            return
        for key_at, key, value_at in _entries(data, layout.used, used):
            text = key.decode()
            slot = self._slots.get((text, pid))
            if slot is None:
                slot = self._slots[text, pid] = len(self._series)
                self._series.append(_series(kind, text, pid))
                self._first.setdefault(self._series[slot].family, slot)
            layout.slots.append(slot)
            layout.families[self._series[slot].family] = None
            gap = value_at - layout.end
            layout.formats.append(f"{gap}x2d" if gap else "2d")
            layout.end = value_at + 16
            layout.last_key = (key_at, key)
        layout.used = used
        layout.numbers = struct.Struct("=" + "".join(layout.formats))

    def _family(self, name: str, slots: Sequence[int], totals: dict[int, float]) -> str:
        first = self._series[self._first[name]]
        lines = [self._header(name, first.help, first.kind)]
        if first.kind == "histogram":
            lines.extend(self._histogram(name, slots, totals))
        else:
            series = self._series
            lines.extend(f"{series[slot].prefix}{value_text(totals[slot])}\n" for slot in slots)
        return "".join(lines)

    def _histogram(self, name: str, slots: Sequence[int], totals: dict[int, float]) -> list[str]:
        """prometheus-client's order: by label set (without "le") as first met, its sum, its
        buckets by bound (cumulative), then its count."""
        grouped: dict[Labels, list[str]] = {}
        buckets: dict[Labels, dict[float, tuple[str, float]]] = {}
        for slot in slots:
            series = self._series[slot]
            if series.bound is None:
                line = f"{series.prefix}{value_text(totals[slot])}\n"
                grouped.setdefault(series.labels, []).append(line)
            else:
                bounds = buckets.setdefault(series.without_bound, {})
                held = bounds.get(series.bound, ("", 0.0))[1]
                bounds[series.bound] = (series.prefix, held + totals[slot])
        for without, bounds in buckets.items():
            group = grouped.setdefault(without, [])
            total = 0.0
            for bound in sorted(bounds):
                prefix, value = bounds[bound]
                total += value
                group.append(f"{prefix}{value_text(total)}\n")
            group.append(f"{self._count_prefix(name, without)}{value_text(total)}\n")
        return [line for group in grouped.values() for line in group]

    def _count_prefix(self, name: str, labels: Labels) -> str:
        found = self._count_prefixes.get((name, labels))
        if found is None:
            found = self._count_prefixes[name, labels] = series_prefix(
                name + "_count", dict(labels)
            )
        return found


def _merge(
    totals: dict[int, float],
    stamps: dict[int, float],
    rule: str,
    slots: Sequence[int],
    numbers: tuple[float, ...],
) -> None:
    """Add one file's values (`numbers`: each entry's value, then its timestamp) to `totals`."""
    values = numbers[0::2]
    if rule == "mostrecent":
        for slot, value, stamp in zip(slots, values, numbers[1::2], strict=True):
            if stamps.get(slot, 0.0) < stamp:
                totals[slot] = value
                stamps[slot] = stamp
    elif rule == "sum":
        held = totals.get
        for slot, value in zip(slots, values, strict=True):
            totals[slot] = held(slot, 0.0) + value
    elif rule in _RULES:
        combine = _RULES[rule]
        for slot, value in zip(slots, values, strict=True):
            totals[slot] = combine(totals[slot], value) if slot in totals else value
    else:  # "all": each worker's series is its own
        for slot, value in zip(slots, values, strict=True):
            totals[slot] = value
