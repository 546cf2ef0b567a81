"""The recorded history of a run: what every process did and saw, and the database's facts.

Processes append JSON lines to their own file (`<run>/history/<process>.jsonl`):

    {"type": "invoke",   "id": 7, "process": "w3", "op": "acquire", "lease": "…", "sent": …}
    {"type": "complete", "id": 7, "process": "w3", "received": …, "outcome": "ok", …}
    {"type": "effect",   "process": "w3", "lease": "…", "generation": 4, "t": …}
    {"type": "belief",   "process": "w3", "lease": "…", "generation": 4, "start": …, "end": …}
    {"type": "fault",    "fault": "F3", "phase": "heal", "t": …, "detail": {…}}
    {"type": "db_probe", "t": …, "generations": {"lease": 12, …}}

Every time is `time.monotonic()` — CLOCK_MONOTONIC, one clock for every process of the machine —
except the database's own instants (`acquired_at`, `expires_at`, commit timestamps), which are
integer microseconds of the database clock and are only ever compared with each other.

An invoke without a complete (the process was killed mid-request) is an `unknown` outcome: it
may or may not have taken effect. After the run, `<run>/facts.json` holds what the database says
(`DatabaseFacts`); `load` joins everything into a `History`, the checker's only input.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Literal, cast

Outcome = Literal["ok", "fail", "unknown"]
OUTCOMES: tuple[Outcome, ...] = ("ok", "fail", "unknown")


def micros(moment: datetime | str | None) -> int | None:
    """A database instant as integer microseconds since the epoch (exact, unlike floats)."""
    if moment is None:
        return None
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    delta = moment - datetime.fromtimestamp(0, moment.tzinfo)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


@dataclass(frozen=True, slots=True)
class Operation:
    """One request and what came of it. `received` is None when no answer ever came."""

    process: str
    op: str  # acquire | renew | release | write_sql | write_http | claim | complete
    lease: str
    sent: float
    received: float | None
    outcome: Outcome
    holder: str = ""
    generation: int | None = None
    ttl: float | None = None
    acquired_at: int | None = None  # database clock: when the holding answered began
    expires_at: int | None = None  # database clock: the expiry in the answer
    remaining: float | None = None  # the answer's expires_in_seconds
    deadline: float | None = None  # the client's belief after this operation (monotonic)
    window: str | None = None  # "job/key" for claim and complete
    error: str | None = None
    replica: int | None = None
    hold: float = 0.0  # seconds a fenced writer held its transaction open before writing
    wait: float = 0.0  # seconds a waiting acquire asked the service to wait
    status: int | None = None  # the HTTP status of a downstream write

    @property
    def holding(self) -> tuple[str, int, str, int | None]:
        """(lease, generation, holder, acquired_at): one holding, as an acquire reported it."""
        return (self.lease, self.generation or 0, self.holder, self.acquired_at)


@dataclass(frozen=True, slots=True)
class Effect:
    """An unfenced side effect, written only while the writer believed it held the lease."""

    process: str
    lease: str
    generation: int
    holder: str
    t: float  # when the writer checked its belief, just before writing


@dataclass(frozen=True, slots=True)
class Belief:
    """How long a client believed it held one holding: [start, end] on the monotonic clock."""

    process: str
    lease: str
    generation: int
    holder: str
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class FaultEvent:
    fault: str
    phase: Literal["start", "heal", "step"]  # step: F11 moved the database's clock
    t: float
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DurabilityProbe:
    """The lease generations read straight from the database right after it restarted."""

    t: float
    mode: str
    generations: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class LeaseEvent:
    id: int
    lease: str
    kind: str
    holder: str
    generation: int
    at: int  # database clock, microseconds


@dataclass(frozen=True, slots=True)
class ResourceWrite:
    """A committed row of a fenced resource; `committed` is its commit timestamp."""

    path: Literal["sql", "http"]
    id: int
    resource: str
    holder: str
    generation: int
    committed: int | None


@dataclass(frozen=True, slots=True)
class WindowEvent:
    id: int
    job: str
    kind: str  # claimed | completed
    window: str
    lease: str
    holder: str
    generation: int


@dataclass(frozen=True, slots=True)
class WindowRow:
    job: str
    window: str
    lease: str
    holder: str
    generation: int
    completed: bool


@dataclass(frozen=True, slots=True)
class DatabaseFacts:
    lease_events: tuple[LeaseEvent, ...] = ()
    writes: tuple[ResourceWrite, ...] = ()
    window_events: tuple[WindowEvent, ...] = ()
    windows: tuple[WindowRow, ...] = ()
    settings: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DatabaseFacts:
        return cls(
            lease_events=tuple(LeaseEvent(**row) for row in data.get("lease_events", ())),
            writes=tuple(ResourceWrite(**row) for row in data.get("writes", ())),
            window_events=tuple(WindowEvent(**row) for row in data.get("window_events", ())),
            windows=tuple(WindowRow(**row) for row in data.get("windows", ())),
            settings=dict(data.get("settings", {})),
        )


@dataclass(frozen=True)
class History:
    """Everything the checker looks at."""

    operations: tuple[Operation, ...] = ()
    effects: tuple[Effect, ...] = ()
    beliefs: tuple[Belief, ...] = ()
    faults: tuple[FaultEvent, ...] = ()
    probes: tuple[DurabilityProbe, ...] = ()
    facts: DatabaseFacts = field(default_factory=DatabaseFacts)

    def ops(self, *kinds: str) -> Iterator[Operation]:
        return (op for op in self.operations if op.op in kinds)


# Writing -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pending:
    """A request recorded as invoked: its id, and when (before it was sent)."""

    id: int
    sent: float


class Recorder:
    """Appends one process's records to its JSON-lines file, a line per write (flushed)."""

    def __init__(self, path: Path, process: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("a", encoding="utf-8", buffering=1)
        self.process = process
        self._ids = itertools.count(1)

    def write(self, record: Mapping[str, Any]) -> None:
        self._file.write(json.dumps({"process": self.process, **record}, default=str) + "\n")

    def invoke(self, op: str, lease: str, **facts: Any) -> Pending:
        """Record a request about to be sent. Its `sent` is taken before the request leaves, so
        a deadline counted from it is never later than one counted from the real send."""
        pending = Pending(next(self._ids), time.monotonic())
        self.write(
            {"type": "invoke", "id": pending.id, "op": op, "lease": lease, "sent": pending.sent}
            | facts
        )
        return pending

    def complete(
        self, pending: Pending, outcome: Outcome, received: float | None = None, **facts: Any
    ) -> float:
        """Record the outcome of a request (`received`: when its answer came, default now)."""
        now = time.monotonic() if received is None else received
        self.write(
            {"type": "complete", "id": pending.id, "received": now, "outcome": outcome} | facts
        )
        return now

    def close(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()


# Reading -------------------------------------------------------------------------------------


def _records(folder: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(folder.glob("*.jsonl")):
        with path.open(encoding="utf-8") as lines:
            for text in lines:
                if text.endswith("\n"):  # a torn last line (killed mid-write) is skipped
                    yield cast(dict[str, Any], json.loads(text))


_OPERATION_FIELDS = set(Operation.__dataclass_fields__)


def _operation(invoke: Mapping[str, Any], done: Mapping[str, Any] | None) -> Operation:
    facts = {**invoke, **(done or {})}
    facts.setdefault("received", None)
    facts.setdefault("outcome", "unknown")
    return Operation(**{key: value for key, value in facts.items() if key in _OPERATION_FIELDS})


def parse(records: Iterable[Mapping[str, Any]], facts: DatabaseFacts | None = None) -> History:
    """A history from records (as written by `Recorder` and the harness) and database facts."""
    invokes: dict[tuple[str, int], Mapping[str, Any]] = {}
    completes: dict[tuple[str, int], Mapping[str, Any]] = {}
    effects, beliefs, faults, probes = [], [], [], []
    for record in records:
        kind = record.get("type")
        body = {key: value for key, value in record.items() if key != "type"}
        if kind == "invoke":
            invokes[(record["process"], record["id"])] = body
        elif kind == "complete":
            completes[(record["process"], record["id"])] = body
        elif kind == "effect":
            effects.append(Effect(**body))
        elif kind == "belief":
            beliefs.append(Belief(**body))
        elif kind == "fault":
            faults.append(FaultEvent(**{k: v for k, v in body.items() if k != "process"}))
        elif kind == "db_probe":
            probes.append(DurabilityProbe(**{k: v for k, v in body.items() if k != "process"}))
    operations = [_operation(invoke, completes.get(key)) for key, invoke in invokes.items()]
    operations.sort(key=lambda op: op.sent)
    return History(
        operations=tuple(operations),
        effects=tuple(effects),
        beliefs=tuple(beliefs),
        faults=tuple(sorted(faults, key=lambda event: event.t)),
        probes=tuple(probes),
        facts=facts or DatabaseFacts(),
    )


def load(run: Path) -> History:
    """The history of the run in folder `run` (its `history/` records and `facts.json`)."""
    facts_path = run / "facts.json"
    facts = (
        DatabaseFacts.from_json(json.loads(facts_path.read_text(encoding="utf-8")))
        if facts_path.exists()
        else None
    )
    return parse(_records(run / "history"), facts)
