"""The fenced downstream app of the tests and the chaos harness: the documented example,
examples/payments_api.py, run as a process of its own.

    python -m tests.support.payments PORT DATABASE_URL [--fences postgres|memory|remote]
        [--tenure-url URL] [--fence-per-lease]

Its payouts are in the PostgreSQL at DATABASE_URL; its fences there too (the default: verified
with Tenure at --tenure-url first when given, as the example does with $TENURE_URL), in this
process's memory, or checked with Tenure at --tenure-url (remote). --fence-per-lease gives each
lease a fence of its own (the chaos harness's leases guard independent resources) instead of
one over every payout. Every accepted payout is a row of `payouts`, its `fencing_token` the
token accepted: what a checker reads back.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import uvicorn
from examples.payments_api import create_app, every_payout

from tenure import FENCING_HEADER, AsyncTenure, FenceStore, MemoryFenceStore, RemoteFenceStore
from tests.support.processes import Server, free_port, running

ROOT = Path(__file__).resolve().parents[2]
# Answered once the app has started (its lifespan made the tables): the example has no health
# route of its own.
READY_PATH = "/openapi.json"
_TOKEN_HEADER = FENCING_HEADER.lower().encode("latin-1")


def lease_of_token(scope: MutableMapping[str, Any]) -> str:
    """The resource key for a fence per lease: the lease the request's token names.
    FencingMiddleware asks for it only once the token has parsed."""
    token: bytes = dict(scope["headers"])[_TOKEN_HEADER]
    return token.decode("latin-1").rsplit("/", 1)[0]


def payments_command(
    port: int,
    database_url: str,
    *,
    fences: str = "postgres",
    tenure_url: str | None = None,
    fence_per_lease: bool = False,
) -> list[str]:
    """The command that serves the app on 127.0.0.1:`port`; run it with `python_env()`."""
    command = [sys.executable, "-m", "tests.support.payments", str(port), database_url]
    command += ["--fences", fences]
    if tenure_url:
        command += ["--tenure-url", tenure_url]
    if fence_per_lease:
        command.append("--fence-per-lease")
    return command


def python_env() -> dict[str, str]:
    """This process's environment, with the repository's root on PYTHONPATH (for `tests` and
    `examples`)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return os.environ | {"PYTHONPATH": path}


@contextmanager
def payments_service(
    database_url: str,
    *,
    fences: str = "postgres",
    tenure_url: str | None = None,
    output: IO[bytes] | int | None = None,
) -> Iterator[Server]:
    """The app on a free port until the block ends."""
    port = free_port()
    command = payments_command(port, database_url, fences=fences, tenure_url=tenure_url)
    env = python_env()
    with running(command, port, env=env, output=output, ready_path=READY_PATH) as server:
        yield server


def _store(fences: str, tenure_url: str | None) -> FenceStore | None:
    """The fence store of `--fences` (None: the app's own, in its database)."""
    if fences == "memory":
        return MemoryFenceStore()
    if fences == "remote":
        if not tenure_url:
            raise SystemExit("--fences remote needs --tenure-url")
        return RemoteFenceStore(AsyncTenure(tenure_url))
    return None


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("port", type=int)
    parser.add_argument("database_url")
    parser.add_argument("--fences", choices=["postgres", "memory", "remote"], default="postgres")
    parser.add_argument("--tenure-url")
    parser.add_argument("--fence-per-lease", action="store_true")
    options = parser.parse_args(argv)
    app = create_app(
        options.database_url,
        fences=_store(options.fences, options.tenure_url),
        resource=lease_of_token if options.fence_per_lease else every_payout,
        tenure_url=options.tenure_url or "",  # Tenure only when told, never from $TENURE_URL
    )
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning")


if __name__ == "__main__":
    main()
