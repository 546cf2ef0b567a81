"""The client's defaults and the holder identity.

Every default is a named constant so callers can see and pass it (the retry policy's are in
`_retry`).
"""

from __future__ import annotations

import os
import secrets
import socket

__all__ = [
    "DEFAULT_EARLY_TOLERANCE",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_WAIT_PER_REQUEST",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TTL",
    "DEFAULT_URL",
    "ENV_CA_BUNDLE",
    "ENV_TOKEN",
    "ENV_URL",
    "default_holder",
]

DEFAULT_URL = "http://127.0.0.1:8080"
ENV_URL = "TENURE_URL"
ENV_TOKEN = "TENURE_TOKEN"  # noqa: S105 - the name of a variable, not a secret
# The CA bundle (a file, or a folder of CA certificates) `from_env()` clients trust, when set.
ENV_CA_BUNDLE = "TENURE_CA_BUNDLE"
# Seconds for one HTTP request (connect, write, read, pool). A waiting acquire adds its wait.
DEFAULT_TIMEOUT = 10.0
# Connections a client opens to the service at most (`Tenure`: requests in flight at most), all
# of them kept open between requests: concurrent requests reuse them.
DEFAULT_MAX_CONNECTIONS = 256
# Lease lifetime used by the executor and `tenure run` unless told otherwise.
DEFAULT_TTL = 90.0
# A long wait is sent as several requests of at most this many seconds each, well below the
# service's default bound (TENURE_MAX_WAIT_SECONDS, 60 s) and below common proxy idle timeouts.
DEFAULT_MAX_WAIT_PER_REQUEST = 30.0
# A scheduler that fires this many seconds early (a clock step, a timer firing on the edge, a
# clock a little ahead of the database's) still counts for the occurrence it was about to run.
DEFAULT_EARLY_TOLERANCE = 2.0

_HOSTNAME_MAX = 150  # the holder is at most 200 characters on the service


def default_holder() -> str:
    """`hostname:pid:random8`: unique per client instance, readable by an operator."""
    host = "".join(c for c in socket.gethostname() if c.isprintable())[:_HOSTNAME_MAX]
    return f"{host or 'localhost'}:{os.getpid()}:{secrets.token_hex(4)}"
