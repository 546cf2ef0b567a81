"""The batch routes' bodies as their actions read them, and the express lane's cheaper decoder of
the common ones.

pydantic builds a model per item of a batch (a batch verify's hundreds): validating the body was
12% of a worker's CPU under batch verify load, more than any part but asyncpg (bench/README.md,
step 27). msgspec decodes the same JSON into structs in C for a fraction of that, but its own
pattern check runs Python's `re` once per string and costs more than pydantic's whole
validation. So the structs here carry only the checks msgspec makes cheaply (types, bounds,
lengths, no unknown field), and the names' pattern is checked once per body, over all its names
joined.

The decoders only ever accept a body the route's pydantic model accepts, with the same values: a
body they are unsure of is None, and the lane then validates it with the route's model, so every
refusal is still FastAPI's (tests/unit/test_batch_bodies.py holds the two to each other)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Annotated, Protocol

import msgspec
from msgspec import Meta

from tenure import MAX_GENERATION
from tenure_server.domain.errors import InvalidInput
from tenure_server.domain.names import (
    HOLDER_MAX_LENGTH,
    NAME_MAX_LENGTH,
    NAME_PATTERN,
    check_holder,
)


class FenceRefFields(Protocol):
    """What `verify_many` reads of each fence: a pydantic `FenceRef` or a `FastFenceRef`."""

    @property
    def resource(self) -> str: ...
    @property
    def lease(self) -> str: ...
    @property
    def generation(self) -> int: ...


class VerifyManyBody(Protocol):
    @property
    def fences(self) -> Sequence[FenceRefFields]: ...


class HoldingRefFields(Protocol):
    """What `renew_many` reads of each holding: a pydantic `HoldingRef` or a `FastHoldingRef`."""

    @property
    def name(self) -> str: ...
    @property
    def generation(self) -> int: ...


class RenewManyBody(Protocol):
    @property
    def holder(self) -> str: ...
    @property
    def ttl_seconds(self) -> float: ...
    @property
    def leases(self) -> Sequence[HoldingRefFields]: ...


# The schemas' field types (api/schemas.py) as msgspec checks them, less the names' pattern.
_Name = Annotated[str, Meta(min_length=1, max_length=NAME_MAX_LENGTH)]
_Generation = Annotated[int, Meta(ge=1, le=MAX_GENERATION)]


class _Struct(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """As the schemas' `_Body`: a misspelt field is refused (strictness is msgspec's default).
    Without garbage collector tracking: they hold only strings and numbers."""


class FastFenceRef(_Struct):
    resource: _Name
    lease: _Name
    generation: _Generation


class FastVerifyMany(_Struct):
    fences: Annotated[list[FastFenceRef], Meta(min_length=1)]


class FastHoldingRef(_Struct):
    name: _Name
    generation: _Generation


class FastRenewMany(_Struct):
    holder: Annotated[str, Meta(min_length=1, max_length=HOLDER_MAX_LENGTH)]
    ttl_seconds: Annotated[float, Meta(gt=0)]
    leases: Annotated[list[FastHoldingRef], Meta(min_length=1)]


# NAME_PATTERN is anchored (^…$), as pydantic's Rust regex reads it: a whole string. Unanchored,
# followed by a newline (which no name may hold) and repeated, it matches names joined by
# newlines, each a whole name; Python's `$`, which also matches before a final newline, is not
# used.
if not (NAME_PATTERN.startswith("^") and NAME_PATTERN.endswith("$")):
    raise ValueError("NAME_PATTERN must be anchored at both ends")
_NAMES = re.compile(f"(?:{NAME_PATTERN[1:-1]}\n)*")


def _all_names(names: list[str]) -> bool:
    """Whether every string is a name (NAME_PATTERN): one match over them all. A string holding
    a newline would pass as two names, so the newlines are counted too."""
    joined = "\n".join(names) + "\n"
    return joined.count("\n") == len(names) and _NAMES.fullmatch(joined) is not None


_VERIFY_MANY = msgspec.json.Decoder(FastVerifyMany)
_RENEW_MANY = msgspec.json.Decoder(FastRenewMany)


def decode_verify_many(body: bytes) -> VerifyManyBody | None:
    """The batch verify's body, where VerifyManyRequest would accept it alike; else None."""
    try:
        decoded = _VERIFY_MANY.decode(body)
    except msgspec.DecodeError:  # ValidationError is one
        return None
    fences = decoded.fences
    names = [fence.resource for fence in fences]
    names += [fence.lease for fence in fences]
    return decoded if _all_names(names) else None


def decode_renew_many(body: bytes) -> RenewManyBody | None:
    """The batch renew's body, where RenewManyRequest would accept it alike; else None."""
    try:
        decoded = _RENEW_MANY.decode(body)
        check_holder(decoded.holder)
    except (msgspec.DecodeError, InvalidInput):  # check_holder raises InvalidInput
        return None
    if not math.isfinite(decoded.ttl_seconds):
        return None
    return decoded if _all_names([holding.name for holding in decoded.leases]) else None
