"""The hot routes' answers, the overview and the jobs listing are rendered from fields without
building response models: they must be byte for byte the JSON of the models the OpenAPI document
declares."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tenure import MAX_GENERATION
from tenure_server.api.problems import problem_body
from tenure_server.api.schemas import (
    FenceOut,
    FenceRefusalOut,
    HoldingRefOut,
    LeaseOut,
    Problem,
    RenewManyResult,
    VerifyManyResult,
    json_response,
    lease_json,
    renewals_json,
    verifications_json,
)
from tenure_server.api.status_schemas import JobOut, OverviewOut, job_fields, overview_json
from tenure_server.app.status import Evaluated, Overview, Unregistered
from tenure_server.domain.alerts import Alert, OpenAlert
from tenure_server.domain.errors import (
    FenceLeaseMismatch,
    StaleGeneration,
    TenureError,
    UnknownGeneration,
)
from tenure_server.domain.fences import Fence
from tenure_server.domain.history import NotableEvent
from tenure_server.domain.jobs import Job, JobSpec
from tenure_server.domain.leases import Lease
from tenure_server.domain.status import (
    JobFacts,
    LeaseView,
    WindowFacts,
    expect,
    job_status,
    lease_age,
)
from tenure_server.domain.windows import Window

NOW = datetime(2026, 12, 3, 12, 0, 0, 123456, tzinfo=UTC)
LEASES = [
    Lease(
        "close-day",
        "worker-1",
        7,
        30.0,
        NOW,
        NOW,
        NOW + timedelta(seconds=30),
        None,
        None,
        "8812",
        True,
        29.99,
    ),
    # Whole seconds, another offset, a fractional TTL, a released lease without a grant.
    Lease(
        "a.b-c_d",
        "h é",
        MAX_GENERATION,
        0.25,
        NOW.replace(microsecond=0),
        NOW.astimezone(timezone(timedelta(hours=-3))),
        NOW,
        NOW,
        "team-a",
        None,
        False,
        0.0,
    ),
]


@pytest.mark.parametrize("lease", LEASES, ids=["held", "released"])
def test_a_lease_answer_is_the_json_of_its_leaseout(lease: Lease) -> None:
    model = LeaseOut.of(lease)
    assert lease_json(lease).body == model.__pydantic_serializer__.to_json(model)


# Any instant at any whole-minute offset, and any finite float: orjson and pydantic must write
# both alike (exponents, trailing zeros, microseconds, Z for UTC).
INSTANTS = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
).map(
    lambda moment: moment.astimezone(timezone(timedelta(minutes=moment.microsecond % 1439 - 719)))
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(moment=INSTANTS, utc=INSTANTS.map(lambda m: m.astimezone(UTC)), seconds=FLOATS)
def test_any_instant_and_float_is_written_as_pydantic_writes_it(
    moment: datetime, utc: datetime, seconds: float
) -> None:
    """The answers are encoded by orjson: each datetime and float as the model's JSON has it."""
    lease = LEASES[0]._replace(
        ttl_seconds=seconds, acquired_at=moment, renewed_at=utc, expires_in_seconds=-seconds
    )
    model = LeaseOut.of(lease)
    assert lease_json(lease).body == model.__pydantic_serializer__.to_json(model)


@pytest.mark.parametrize(
    ("renewed", "lost", "undecided"),
    [
        (LEASES, [("gone", 3), ("never", 1)], []),
        ([], [("gone", 3)], []),
        (LEASES[:1], [], []),
        (LEASES[:1], [("gone", 3)], [("locked", 2)]),
    ],
    ids=["both", "all-lost", "none-lost", "undecided"],
)
def test_a_batch_renew_answer_is_the_json_of_its_renewmanyresult(
    renewed: list[Lease], lost: list[tuple[str, int]], undecided: list[tuple[str, int]]
) -> None:
    model = RenewManyResult(
        renewed=[LeaseOut.of(lease) for lease in renewed],
        lost=[HoldingRefOut(name=name, generation=generation) for name, generation in lost],
        undecided=[HoldingRefOut(name=name, generation=gen) for name, gen in undecided],
    )
    response = renewals_json(renewed, lost, undecided)
    assert response.body == model.__pydantic_serializer__.to_json(model)
    assert response.media_type == "application/json"


FENCES = [
    Fence("ledger", "close-day", 7, NOW),
    Fence("a.b", "x", MAX_GENERATION, NOW.replace(microsecond=0)),
]
REFUSALS: list[tuple[str, str, int, TenureError]] = [
    ("stock", "close-day", 3, StaleGeneration("stock", 3, 7)),
    ("orders", "close-day", 7, FenceLeaseMismatch("orders", "other")),
    ("forged", "close-day", 9, UnknownGeneration("close-day", 9, 7)),
    ("nowhere", "none", 1, UnknownGeneration("none", 1, None)),
]


@pytest.mark.parametrize(
    ("accepted", "refused"),
    [(FENCES, REFUSALS), ([], REFUSALS[:1]), (FENCES[:1], [])],
    ids=["both", "all-refused", "none-refused"],
)
def test_a_batch_verify_answer_is_the_json_of_its_verifymanyresult(
    accepted: list[Fence], refused: list[tuple[str, str, int, TenureError]]
) -> None:
    entries: list[dict[str, Any]] = [
        {"resource": r, "lease": lease, "generation": g, "problem": problem_body(error)}
        for r, lease, g, error in refused
    ]
    model = VerifyManyResult(
        accepted=[FenceOut.of(fence) for fence in accepted],
        refused=[
            FenceRefusalOut(**{**entry, "problem": Problem(**entry["problem"])})
            for entry in entries
        ],
    )
    response = verifications_json(accepted, entries)
    assert response.body == model.__pydantic_serializer__.to_json(model)


# The overview's jobs and leases are rendered from their fields (`overview_json`): every status,
# zones whose offset is zero in winter and not, whole-number seconds, and the few parts that go
# through their models (alerts, events, unregistered jobs).
OVERVIEW_AT = datetime(2026, 1, 15, 12, 34, 56, 789000, tzinfo=UTC)


def _job(name: str, zone: str, max_runtime: float | None, active_since: datetime) -> Job:
    spec = JobSpec("*/5 * * * *", zone, "occurrence", name, 60, max_runtime, {"team": "ä"})
    return Job(name, spec, active_since, active_since, active_since)


def _window(job: str, key: str, started: datetime, completed: datetime | None) -> Window:
    return Window(job, key, job, "host-1", 4, 1, started, completed, interrupted=completed is None)


def _evaluated(job: Job, facts: JobFacts) -> Evaluated:
    expected = expect(job, OVERVIEW_AT)
    return Evaluated(job, expected, facts, job_status(job, expected, facts, OVERVIEW_AT))


def _overview() -> Overview:
    hour_ago = OVERVIEW_AT - timedelta(hours=1)
    completed = _job("done", "America/New_York", None, hour_ago)
    key = expect(completed, OVERVIEW_AT).window
    done = _window("done", key, hour_ago, hour_ago + timedelta(seconds=3))
    running = WindowFacts(_window("run", "2026-01-15T12:30", hour_ago, None), lease_held=True)
    died = WindowFacts(_window("died", "2026-01-15T12:30", hour_ago, None), lease_held=False)
    jobs = [
        _evaluated(_job("new", "UTC", None, OVERVIEW_AT), JobFacts()),
        _evaluated(_job("missed", "Europe/London", 60, hour_ago), JobFacts(last_completed=done)),
        _evaluated(
            completed, JobFacts({key: WindowFacts(done, False)}, done, WindowFacts(done, False))
        ),
        _evaluated(_job("run", "Asia/Kolkata", 30, hour_ago), JobFacts(last_started=running)),
        _evaluated(_job("died", "UTC", None, hour_ago), JobFacts(last_started=died)),
    ]
    assert {item.status.status for item in jobs} >= {"new", "missed", "ok", "overrunning"}
    view = LeaseView("grown-1", "host-1", 4, hour_ago, OVERVIEW_AT, True, 29.5)
    return Overview(
        now=OVERVIEW_AT,
        jobs=jobs,
        leases=[
            lease_age(view, OVERVIEW_AT, 600, None),
            lease_age(dataclasses.replace(view, held=False), OVERVIEW_AT, 600, 7200),
        ],
        alerts=[OpenAlert(Alert("stuck", "grown-1", "4", "held for 1 h"), hour_ago)],
        events=[NotableEvent(hour_ago, "lease", "grown-1", "taken_over", "host-2", 5, None)],
        unregistered=[Unregistered("gone", JobFacts(last_completed=done, last_started=died))],
    )


def test_the_overview_answer_is_the_json_of_its_overviewout() -> None:
    """`GET /v1/overview` writes each job and lease from its fields: the same JSON as the model."""
    overview = _overview()
    model = OverviewOut.of(overview)
    assert overview_json(overview).body == model.__pydantic_serializer__.to_json(model)


def test_a_jobs_fields_are_the_json_of_its_jobout() -> None:
    """`GET /v1/jobs` writes each job from its fields: the same JSON as its JobOut."""
    for item in _overview().jobs:
        model = JobOut.of(item)
        assert json_response(job_fields(item)).body == model.__pydantic_serializer__.to_json(model)
