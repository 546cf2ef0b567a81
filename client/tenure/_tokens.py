"""Tokens on the wire: the fencing token, and the idempotency key of an occurrence.

The fencing token is the header `Fencing-Token: <lease>/<generation>`.

A protected resource (an HTTP service behind the fencing middleware, a database write that checks
the generation) refuses a request whose generation is lower than the highest it has seen for the
lease. The format is exact so that every reader agrees on it:

- the lease name: 1–200 characters of `[A-Za-z0-9._:-]`, starting with a letter or digit (never a
  "/", so the first "/" separates the two parts);
- the generation: a positive decimal integer up to `MAX_GENERATION` (2**53 - 1), without sign,
  leading zeros or whitespace.

The idempotency key names one effect of one occurrence of a job, the same on every attempt:
`<job>/<window>/<part>/…` (`close-day/2026-09-25/store/42`). Job names and window keys never
contain "/" or "%"; in the free-form parts "%" is written `%25` and "/" `%2F`, so every "/" is a
separator and two different (job, window, parts) never share a key.
"""

from __future__ import annotations

import re

__all__ = [
    "FENCING_HEADER",
    "MAX_GENERATION",
    "fencing_headers",
    "format_token",
    "idempotency_key",
    "parse_token",
]

FENCING_HEADER = "Fencing-Token"
# The largest generation Tenure hands out: 2**53 - 1, the largest integer that JSON readers holding
# numbers as IEEE doubles (JavaScript) read exactly. The service's request schemas, its SQL
# (migration 0009) and the fencing middleware share it.
MAX_GENERATION = 2**53 - 1

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}", re.ASCII)
_GENERATION = re.compile(r"[1-9][0-9]{0,18}", re.ASCII)


def _check_name(lease: str) -> str:
    if not isinstance(lease, str) or not _NAME.fullmatch(lease):
        raise ValueError(f"not a lease name: {lease!r}")
    return lease


def _check_generation(generation: int) -> int:
    if isinstance(generation, bool) or not isinstance(generation, int):
        raise TypeError(f"generation must be an int, got {type(generation).__name__}")
    if not 1 <= generation <= MAX_GENERATION:
        raise ValueError(f"generation must be between 1 and {MAX_GENERATION}, got {generation}")
    return generation


def format_token(lease: str, generation: int) -> str:
    """`"close-day/7"`. Raises ValueError for a malformed name or an out-of-range generation."""
    return f"{_check_name(lease)}/{_check_generation(generation)}"


def parse_token(value: str) -> tuple[str, int]:
    """`"close-day/7"` -> `("close-day", 7)`. Raises ValueError for anything else."""
    if not isinstance(value, str):
        raise ValueError(f"not a fencing token: {value!r}")
    lease, slash, generation = value.partition("/")
    if not slash or not _NAME.fullmatch(lease) or not _GENERATION.fullmatch(generation):
        raise ValueError(f"not a fencing token (<lease>/<generation>): {value!r}")
    number = int(generation)
    if number > MAX_GENERATION:
        raise ValueError(f"fencing token generation is above {MAX_GENERATION}: {value!r}")
    return lease, number


def fencing_headers(lease: str, generation: int) -> dict[str, str]:
    """`{"Fencing-Token": "<lease>/<generation>"}`, to merge into a request's headers."""
    return {FENCING_HEADER: format_token(lease, generation)}


def idempotency_key(job: str, window: str, *parts: object) -> str:
    """`idempotency_key("close-day", "2026-09-25", "store", 42)` is
    `"close-day/2026-09-25/store/42"`: each part as `str(part)`, with "%" and "/" escaped
    (`%25`, `%2F`) so that distinct (job, window, parts) never give the same key."""
    return "/".join(_escape(str(component)) for component in (job, window, *parts))


def _escape(component: str) -> str:
    # "%" first: the "%" that escapes "/" must not be escaped again.
    return component.replace("%", "%25").replace("/", "%2F")
