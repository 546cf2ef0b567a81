"""Fence stores, and the check a protected resource runs on a fencing token.

A fenced resource keeps, per resource key, the lease that fences it and the highest generation of
that lease it has accepted. A request carrying `Fencing-Token: <lease>/<generation>` is accepted
when its generation is at least that high (the highest is then raised to it) and refused when it
is lower: the sender's holding was taken over by a newer one, which has already written.

    store = MemoryFenceStore()
    generation = await check_token(store, "ledger", message.headers.get("Fencing-Token"))

    async with fenced(store, "ledger", token):      # check, and keep this process's other users
        await write(...)                            # of "ledger" out until the block ends

`FencingMiddleware` (ASGI) does the same for HTTP requests; `tenure.pg` has the PostgreSQL store,
whose check can run in the same transaction as the write.

Which guarantee each store gives:

- every store, within one process: requests for one resource are serialised from the check until
  the handler is done (`fenced`, or the middleware until the response is sent), so a request with
  generation 7 that passed the check cannot write after one with generation 8 did;
- `MemoryFenceStore`: one process only — the fence lives in its memory;
- `RemoteFenceStore`: the fence lives in Tenure; the check is atomic there, but check and write
  are not one step across replicas of the resource (see its docstring);
- `tenure.pg.PostgresFenceStore`: the resource's own PostgreSQL; check and write are atomic
  across replicas when the write runs in the transaction it opens.

Errors, each a refusal (the resource must not write):

    FencingError                  the fence refused a request, or could not decide
    ├── FencingTokenMissing       no token where one is required           (HTTP 428)
    ├── FencingTokenMalformed     not `<lease>/<generation>`, or sent twice (HTTP 400)
    ├── StaleFencingToken         .highest: a higher generation was accepted (HTTP 409)
    ├── FencedByAnotherLease      .lease: the resource is fenced by another lease (HTTP 409)
    ├── UnknownFencingGeneration  .current_generation: never handed out (remote store, HTTP 422)
    └── FenceStoreUnavailable     the store could not be asked: fail closed (HTTP 503)

    SchemaTooOld                  `tenure.pg.fenced_transaction` on a Tenure database older
                                  than the rules it calls (MINIMUM_SCHEMA): migrate it first

These are the resource's decisions, not answers of the Tenure service, so they do not derive from
`TenureError`; `RemoteFenceStore` translates the service's `StaleGeneration`,
`FenceLeaseMismatch` and `UnknownGeneration` into them.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from tenure._errors import (
    FenceLeaseMismatch,
    StaleGeneration,
    TenureError,
    UnknownGeneration,
)
from tenure._tokens import parse_token

if TYPE_CHECKING:
    from tenure._async.client import AsyncTenure

__all__ = [
    "FenceStore",
    "FenceStoreUnavailable",
    "FencedByAnotherLease",
    "FencedRequest",
    "FencingError",
    "FencingTokenMalformed",
    "FencingTokenMissing",
    "MemoryFenceStore",
    "RemoteFenceStore",
    "ResourceLocks",
    "SchemaTooOld",
    "StaleFencingToken",
    "UnknownFencingGeneration",
    "accepted_token",
    "check_token",
    "fenced",
    "parse_fencing_token",
    "refusal",
    "tenure_resource_name",
]


# Errors -------------------------------------------------------------------------------------


class FencingError(Exception):
    """The fence refused a request, or could not decide (then it refuses too)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class FencingTokenMissing(FencingError):
    """The request carries no fencing token, and this resource requires one."""


class FencingTokenMalformed(FencingError):
    """The token is not `<lease>/<generation>` (see `tenure.parse_token`), or was sent twice."""


class StaleFencingToken(FencingError):
    """The resource has accepted a higher generation (`highest`): the sender is fenced off."""

    def __init__(self, detail: str, *, highest: int) -> None:
        super().__init__(detail)
        self.highest = highest


class FencedByAnotherLease(FencingError):
    """The resource is fenced by another lease (`lease`); generations of two leases are not
    comparable, so a resource belongs to the first lease that wrote to it."""

    def __init__(self, detail: str, *, lease: str) -> None:
        super().__init__(detail)
        self.lease = lease


class UnknownFencingGeneration(FencingError):
    """The lease never handed out this generation (`current_generation` is its latest, None when
    the lease does not exist). Accepting it would fence out every real holder."""

    def __init__(self, detail: str, *, current_generation: int | None) -> None:
        super().__init__(detail)
        self.current_generation = current_generation


class FenceStoreUnavailable(FencingError):
    """The store could not be asked (Tenure or the database is unreachable or timed out); the
    request is refused rather than let through unchecked. Retrying later may work."""


# The oldest migration of Tenure's database that `tenure.pg.fenced_transaction` runs against: its
# check calls tenure_holds_v1, created by migration 0014.
MINIMUM_SCHEMA = 14


class SchemaTooOld(Exception):
    """Tenure's database is older than the migration (`MINIMUM_SCHEMA`) whose functions this
    client calls: run `tenure migrate` (or upgrade the service, which migrates at start-up)."""

    def __init__(self, function: str) -> None:
        super().__init__(
            f"the database schema is older than migration {MINIMUM_SCHEMA:04d} ({function} is "
            "missing): run `tenure migrate` or upgrade the Tenure service first"
        )
        self.function = function


# Tokens -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FencedRequest:
    """A token a store accepted for a resource: what a handler runs under."""

    resource: str
    lease: str
    generation: int


_accepted: ContextVar[FencedRequest | None] = ContextVar("tenure_accepted_token", default=None)


def accepted_token() -> FencedRequest | None:
    """The token accepted for the request (or `fenced` block) being handled, else None."""
    return _accepted.get()


@contextmanager
def _accepting(request: FencedRequest) -> Iterator[FencedRequest]:
    reset = _accepted.set(request)
    try:
        yield request
    finally:
        _accepted.reset(reset)


def parse_fencing_token(value: str | None) -> tuple[str, int]:
    """(lease, generation) from a header value; `FencingTokenMissing` for None,
    `FencingTokenMalformed` for anything `tenure.parse_token` does not accept."""
    if value is None:
        raise FencingTokenMissing("a Fencing-Token (<lease>/<generation>) is required")
    try:
        return parse_token(value)
    except ValueError as error:
        raise FencingTokenMalformed(str(error)) from None


def refusal(
    resource: str, lease: str, generation: int, fenced_by: str, highest: int
) -> FencingError | None:
    """Why a resource fenced by `fenced_by` up to `highest` refuses `lease`/`generation`; None
    when it accepts it (same lease, generation at least `highest`)."""
    if fenced_by != lease:
        return FencedByAnotherLease(
            f"resource {resource!r} is fenced by lease {fenced_by!r}, not {lease!r}",
            lease=fenced_by,
        )
    if generation < highest:
        return StaleFencingToken(
            f"resource {resource!r} accepted generation {highest} of {lease!r}; "
            f"{generation} is stale",
            highest=highest,
        )
    return None


# Stores -------------------------------------------------------------------------------------


class ResourceLocks:
    """One asyncio lock per resource key, created on demand and dropped when nobody holds or
    waits for it (so the map does not grow with every key ever seen)."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, resource: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(resource) or (asyncio.Lock(), 0)
        self._locks[resource] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[resource]
            if users == 1:
                del self._locks[resource]
            else:
                self._locks[resource] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._locks)


@runtime_checkable
class FenceStore(Protocol):
    """Where a resource keeps its fences. Share one instance per process: its locks are what
    serialises the process's requests for a resource."""

    def guard(self, resource: str) -> AbstractAsyncContextManager[None]:
        """Hold off this process's other users of `resource` for the block."""
        ...

    async def advance(self, resource: str, lease: str, generation: int) -> int:
        """Accept `generation` of `lease` for `resource` (raising the highest to it) and return
        it, or raise the `FencingError` that refuses it."""
        ...


class MemoryFenceStore:
    """Fences in this process's memory. Guarantee: exact, but for ONE process only — tests and
    single-instance services. Two processes have two memories, and each accepts what the other
    has fenced off; a restart forgets every fence. Use `tenure.pg.PostgresFenceStore` (or
    `RemoteFenceStore`) as soon as the resource runs as more than one process."""

    def __init__(self) -> None:
        self._fences: dict[str, tuple[str, int]] = {}
        self._locks = ResourceLocks()

    def guard(self, resource: str) -> AbstractAsyncContextManager[None]:
        return self._locks.hold(resource)

    async def advance(self, resource: str, lease: str, generation: int) -> int:
        # No await between the read and the write: one event loop makes this step atomic.
        fenced_by, highest = self._fences.get(resource, (lease, generation))
        refused = refusal(resource, lease, generation, fenced_by, highest)
        if refused is not None:
            raise refused
        self._fences[resource] = (lease, generation)
        return generation

    def highest(self, resource: str) -> int | None:
        """The highest generation accepted for `resource`, if any (for tests and metrics)."""
        fence = self._fences.get(resource)
        return None if fence is None else fence[1]


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}", re.ASCII)


def tenure_resource_name(key: str) -> str:
    """A Tenure resource name for a resource key: the key itself when it is a valid name, else
    the key with its slashes turned into colons (`/payments/42` -> `payments:42`), else a hash
    of the key (`sha256:…`). Two keys may share a name; that only makes the fence coarser (a
    write to one refuses older writes to both), never weaker."""
    if _NAME.fullmatch(key):
        return key
    colons = key.strip("/").replace("/", ":")
    if _NAME.fullmatch(colons):
        return colons
    return "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


class RemoteFenceStore:
    """Fences kept by the Tenure service (`POST /v1/fences/{resource}/verify`).

    Guarantee: the check itself is atomic in Tenure — concurrent verifies of one resource are
    serialised there, the highest generation only grows, and a generation the lease never handed
    out is refused (`UnknownFencingGeneration`), so a forged token cannot fence everyone out.
    Within one process, requests for a resource are serialised until the handler is done.

    NOT atomic: the check and the resource's write, across replicas of the resource. The check
    happens in Tenure and the write happens here, later. With two replicas, a request with
    generation 7 can pass the check on replica 1, then one with generation 8 passes on replica 2
    and writes, then the generation-7 write lands on replica 1. Use it where the resource runs
    as one process, where writes are idempotent or last-writer-wins is harmless, or as a first
    filter in front of a write that checks again (`tenure.pg` does that in one transaction).

    Resource keys are mapped to Tenure resource names by `resource_name`
    (`tenure_resource_name` by default). Tenure unreachable or failing answers
    `FenceStoreUnavailable`: the request is refused, never let through unchecked.
    """

    def __init__(
        self, client: AsyncTenure, *, resource_name: Callable[[str], str] = tenure_resource_name
    ) -> None:
        self._client = client
        self._resource_name = resource_name
        self._locks = ResourceLocks()

    def guard(self, resource: str) -> AbstractAsyncContextManager[None]:
        return self._locks.hold(resource)

    async def advance(self, resource: str, lease: str, generation: int) -> int:
        name = self._resource_name(resource)
        try:
            fence = await self._client.verify_fence(name, lease, generation)
        except StaleGeneration as error:
            raise StaleFencingToken(error.detail, highest=error.highest) from None
        except FenceLeaseMismatch as error:
            raise FencedByAnotherLease(error.detail, lease=error.lease) from None
        except UnknownGeneration as error:
            raise UnknownFencingGeneration(
                error.detail, current_generation=error.current_generation
            ) from None
        except TenureError as error:
            raise FenceStoreUnavailable(f"Tenure could not verify the fence: {error}") from error
        return fence.highest


# Checking -----------------------------------------------------------------------------------


async def check_token(store: FenceStore, resource: str, token_value: str | None) -> int:
    """Check a `Fencing-Token` value for `resource` and record it; returns its generation.

    For code that is not an ASGI app (queue consumers, workers). Raises a `FencingError` for a
    refusal. The store's per-resource lock is held only during the check: to keep this process's
    other users of the resource out until the write is done, use `fenced` instead.
    """
    async with fenced(store, resource, token_value) as request:
        return request.generation


@asynccontextmanager
async def fenced(
    store: FenceStore, resource: str, token_value: str | None
) -> AsyncIterator[FencedRequest]:
    """Check the token, then run the block holding the store's lock on `resource` (and with
    `accepted_token()` set, so `tenure.pg.PostgresFenceStore.connection()` can use it)."""
    lease, generation = parse_fencing_token(token_value)
    async with store.guard(resource):
        accepted = await store.advance(resource, lease, generation)
        with _accepting(FencedRequest(resource, lease, accepted)) as request:
            yield request
