"""Wire schemas of the HTTP API v1: what requests may carry and what responses hold."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import orjson
from fastapi import Path
from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field
from starlette.responses import Response

from tenure import MAX_GENERATION
from tenure.schedule import KeyFormat
from tenure_server.domain.fences import Fence
from tenure_server.domain.leases import Lease
from tenure_server.domain.names import (
    HOLDER_MAX_LENGTH,
    NAME_MAX_LENGTH,
    NAME_PATTERN,
    WINDOW_MAX_LENGTH,
    WINDOW_PATTERN,
    check_holder,
    check_window_key,
)
from tenure_server.domain.windows import Window, WindowState

LeaseName = Annotated[
    str, Path(pattern=NAME_PATTERN, max_length=NAME_MAX_LENGTH, description="Lease name.")
]
JobName = Annotated[
    str, Path(pattern=NAME_PATTERN, max_length=NAME_MAX_LENGTH, description="Job name.")
]
ResourceName = Annotated[
    str,
    Path(pattern=NAME_PATTERN, max_length=NAME_MAX_LENGTH, description="Fenced resource name."),
]
WindowKey = Annotated[
    str,
    Path(
        pattern=WINDOW_PATTERN,
        max_length=WINDOW_MAX_LENGTH,
        description="Window key: the occurrence the scheduler meant to run.",
    ),
    AfterValidator(check_window_key),
]

Holder = Annotated[
    str,
    Field(
        min_length=1,
        max_length=HOLDER_MAX_LENGTH,
        description="Who holds the lease: 1–200 printable characters, unique per process.",
    ),
    AfterValidator(check_holder),
]
Generation = Annotated[
    int, Field(ge=1, le=MAX_GENERATION, description="The fencing token handed out by acquire.")
]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NameField = Annotated[str, Field(pattern=NAME_PATTERN, max_length=NAME_MAX_LENGTH)]


class _Body(BaseModel):
    # Unknown fields are refused: a misspelt field must not be silently ignored.
    model_config = ConfigDict(extra="forbid", strict=True)


class AcquireRequest(_Body):
    holder: Holder
    ttl_seconds: Seconds = Field(description="Lifetime of the lease unless renewed.")
    wait_seconds: float = Field(
        default=0,
        ge=0,
        allow_inf_nan=False,
        description="Wait up to this long for the lease to become free (409 at the deadline).",
    )


class RenewRequest(_Body):
    holder: Holder
    generation: Generation
    ttl_seconds: Seconds


class HoldingRef(_Body):
    name: NameField
    generation: Generation


class RenewManyRequest(_Body):
    holder: Holder
    ttl_seconds: Seconds
    leases: list[HoldingRef] = Field(
        min_length=1, description="The holdings to renew (at most TENURE_MAX_BATCH_SIZE)."
    )


class ReleaseRequest(_Body):
    holder: Holder
    generation: Generation
    grant: str = Field(
        pattern=r"^(0|[1-9][0-9]{0,19})$",
        description="The `grant` of the caller's latest acquire or renew (required): the release "
        "ends nothing if the holder was granted the lease again after sending it.",
    )


class WindowRequest(_Body):
    holder: Holder
    lease: NameField = Field(description="The lease this run holds.")
    generation: Generation


class VerifyRequest(_Body):
    lease: NameField = Field(description="The lease whose generations fence this resource.")
    generation: Generation


class FenceRef(_Body):
    resource: NameField = Field(description="The fenced resource.")
    lease: NameField = Field(description="The lease whose generations fence this resource.")
    generation: Generation


class VerifyManyRequest(_Body):
    fences: list[FenceRef] = Field(
        min_length=1,
        description="The verifies, one per resource (at most TENURE_MAX_BATCH_SIZE).",
    )


class ResolveRequest(_Body):
    cron: str = Field(max_length=200, description="Five-field cron expression.")
    timezone: str = Field(max_length=64, description="IANA time zone of the schedule.")
    at: AwareDatetime | None = Field(
        default=None, description="The instant to resolve; default: now by the database clock."
    )
    key: KeyFormat = Field(
        default="occurrence",
        description="occurrence (ISO 8601 with offset), date, or previous_day (business date - 1).",
    )
    early_tolerance_seconds: float = Field(
        default=0,
        ge=0,
        description="An occurrence at most this many seconds after `at` (or now) counts as"
        " meant: a scheduler firing a hair early runs the occurrence it was about to run. At"
        " most TENURE_MAX_EARLY_TOLERANCE_SECONDS.",
    )

    model_config = ConfigDict(extra="forbid", strict=False)


class Resolution(BaseModel):
    occurrence: datetime = Field(
        description="The latest instant the schedule meant to fire, at or before `at` (or now)"
        " plus the early tolerance."
    )
    window: str = Field(description="The window key of that occurrence.")
    next_occurrence: datetime = Field(description="The occurrence after it.")
    now: datetime = Field(
        description="The database clock when this was answered: compare a host's clock with it."
    )


class LeaseOut(BaseModel):
    name: str
    holder: str
    generation: int
    ttl_seconds: float
    acquired_at: datetime
    renewed_at: datetime
    expires_at: datetime
    grant: str | None = Field(
        default=None, description="Names this acquire or renew; send it with the release."
    )
    held: bool = Field(description="Not expired by the database clock when this was answered.")
    expires_in_seconds: float = Field(
        description="Time left by the database clock; compare this, never wall clocks."
    )

    @classmethod
    def of(cls, lease: Lease) -> LeaseOut:
        return cls(**lease_fields(lease))


def lease_fields(lease: Lease) -> dict[str, Any]:
    """What a LeaseOut shows of a lease."""
    return {
        "name": lease.name,
        "holder": lease.holder,
        "generation": lease.generation,
        "ttl_seconds": lease.ttl_seconds,
        "acquired_at": lease.acquired_at,
        "renewed_at": lease.renewed_at,
        "expires_at": lease.expires_at,
        "grant": lease.grant_id,
        "held": lease.held,
        "expires_in_seconds": lease.expires_in_seconds,
    }


class HoldingRefOut(BaseModel):
    name: str
    generation: int


class RenewManyResult(BaseModel):
    renewed: list[LeaseOut] = Field(description="Holdings renewed, with their new expiry.")
    lost: list[HoldingRefOut] = Field(description="Holdings no longer held: stop their work.")
    undecided: list[HoldingRefOut] = Field(
        default_factory=list,
        description="Holdings whose lease row another transaction (a fenced write) kept locked "
        "past the lock timeout, or while this replica already waited on as many locked rows as "
        "it may: neither renewed nor lost; retry them as after a 503.",
    )


class WindowOut(BaseModel):
    job: str
    window: str
    lease: str
    holder: str
    generation: int
    attempt: int
    started_at: datetime
    completed_at: datetime | None
    status: Literal["running", "completed"]
    state: WindowState = Field(
        description="As `status`, but `interrupted` when the window is not completed and the "
        "holding that claimed it no longer holds its lease (by the database clock): the run "
        "died. A new claim makes it `running` again."
    )

    @classmethod
    def of(cls, window: Window) -> WindowOut:
        return cls(
            job=window.job,
            window=window.window,
            lease=window.lease,
            holder=window.holder,
            generation=window.generation,
            attempt=window.attempt,
            started_at=window.started_at,
            completed_at=window.completed_at,
            status=window.status,
            state=window.state,
        )


class FenceOut(BaseModel):
    resource: str
    lease: str
    highest: int = Field(description="The highest generation this resource has accepted.")
    updated_at: datetime

    @classmethod
    def of(cls, fence: Fence) -> FenceOut:
        return cls(**fence_fields(fence))


def fence_fields(fence: Fence) -> dict[str, Any]:
    """What a FenceOut shows of a fence."""
    return {
        "resource": fence.resource,
        "lease": fence.lease,
        "highest": fence.highest,
        "updated_at": fence.updated_at,
    }


class FenceRefusalOut(BaseModel):
    resource: str
    lease: str
    generation: int
    problem: Problem = Field(
        description="The problem a single verify would have answered: `stale-generation`, "
        "`fence-lease-mismatch` or `unknown-generation`."
    )


class VerifyManyResult(BaseModel):
    accepted: list[FenceOut] = Field(description="Verifies the fences accepted, and recorded.")
    refused: list[FenceRefusalOut] = Field(description="Verifies refused: do not write.")


class LeasePage(BaseModel):
    items: list[LeaseOut]
    next_cursor: str | None


class WindowPage(BaseModel):
    items: list[WindowOut]
    next_cursor: str | None


class Problem(BaseModel):
    """RFC 9457 problem details; each `type` may add the fields documented for it."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str


class Health(BaseModel):
    status: Literal["ok"]


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the problem statuses a route can answer. Always: 400 (a body that is
    not UTF-8), 401 (every route authenticates), 413 (body limit), 422, 429 (rate limit), 503."""
    return {
        status: {"model": Problem, "content": {"application/problem+json": {}}}
        for status in sorted({400, 401, 413, 422, 429, 503, *statuses})
    }


def json_response(document: Any) -> Response:
    """An answer encoded by orjson from plain values: byte for byte what pydantic renders for
    the route's `response_model` (`Z` for UTC, floats and datetimes alike:
    tests/unit/test_schemas.py), for under half the CPU of pydantic's serializer, which was a
    batch renew's largest cost after asyncpg (bench/README.md, step 22)."""
    return Response(orjson.dumps(document, option=orjson.OPT_UTC_Z), media_type="application/json")


def lease_json(lease: Lease) -> Response:
    """A hot route's LeaseOut answer, rendered from the lease's fields: the JSON of
    `LeaseOut.of(lease)`, without building and validating the model."""
    return json_response(lease_fields(lease))


def renewals_json(
    renewed: list[Lease], lost: list[tuple[str, int]], undecided: list[tuple[str, int]]
) -> Response:
    """The batch renew's RenewManyResult answer, rendered likewise: a batch builds hundreds."""
    return json_response(
        {
            "renewed": [lease_fields(lease) for lease in renewed],
            "lost": [{"name": name, "generation": generation} for name, generation in lost],
            "undecided": [{"name": name, "generation": gen} for name, gen in undecided],
        }
    )


def verifications_json(accepted: list[Fence], refused: list[dict[str, Any]]) -> Response:
    """The batch verify's VerifyManyResult answer, rendered likewise; `refused` holds each
    refusal's FenceRefusalOut fields, its problem as the problem's JSON object."""
    return json_response(
        {"accepted": [fence_fields(fence) for fence in accepted], "refused": refused}
    )


def as_json(model: BaseModel) -> Response:
    """The JSON FastAPI renders for a route's `response_model`, from the model a hot route has
    just built: FastAPI validates a returned model again before serializing it (its cost per
    acquire: bench/README.md, step 3), but skips that for a returned Response. The route keeps
    its `response_model`, so the OpenAPI document is unchanged."""
    return Response(model.__pydantic_serializer__.to_json(model), media_type="application/json")
