"""Send the current fencing token with every outgoing httpx request.

    http = httpx.Client(event_hooks={"request": [fencing_hook]})
    with fencing_token("close-day", 7):
        http.post(url, json=payment)            # carries Fencing-Token: close-day/7
    http.post(url, json=payment)                # carries none

    ahttp = httpx.AsyncClient(event_hooks={"request": [async_fencing_hook]})

The token lives in a `ContextVar`: it follows the code that set it — the current thread, or the
current asyncio task and the tasks it starts (and `asyncio.to_thread`), never a plain
`threading.Thread` started inside the block, nor other requests served concurrently. Blocks
nest; leaving one restores the outer token. A request that already has a `Fencing-Token` header
keeps it: an explicit header wins over the ambient one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import httpx

from tenure._tokens import FENCING_HEADER, format_token

__all__ = ["async_fencing_hook", "current_fencing_token", "fencing_hook", "fencing_token"]

_current: ContextVar[str | None] = ContextVar("tenure_fencing_token", default=None)


@contextmanager
def fencing_token(lease: str, generation: int) -> Iterator[str]:
    """Within the block, requests through a client with the hook carry
    `Fencing-Token: <lease>/<generation>`. Yields the token; ValueError for a malformed one."""
    token = format_token(lease, generation)
    reset = _current.set(token)
    try:
        yield token
    finally:
        _current.reset(reset)


def current_fencing_token() -> str | None:
    """The token set by the innermost `fencing_token` block around this code, else None."""
    return _current.get()


def fencing_hook(request: httpx.Request) -> None:
    """A request event hook for `httpx.Client`: adds the current token, if any."""
    token = _current.get()
    if token is not None and FENCING_HEADER not in request.headers:
        request.headers[FENCING_HEADER] = token


async def async_fencing_hook(request: httpx.Request) -> None:
    """The same hook for `httpx.AsyncClient`, which awaits its hooks."""
    fencing_hook(request)
