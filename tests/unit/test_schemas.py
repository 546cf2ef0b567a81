"""The hot routes' answers are rendered from the lease's fields without building response models:
they must be byte for byte the JSON of the models the OpenAPI document declares."""

from __future__ import annotations

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
    lease_json,
    renewals_json,
    verifications_json,
)
from tenure_server.domain.errors import (
    FenceLeaseMismatch,
    StaleGeneration,
    TenureError,
    UnknownGeneration,
)
from tenure_server.domain.fences import Fence
from tenure_server.domain.leases import Lease

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
