"""How every use case decides: it runs its one deciding statement and, when that statement
changed nothing, reads the state to explain the refusal with a domain error.

The explaining read comes after the decision, so the state may have moved in between (the lease
expired, the window was released). Then the decision is simply taken again, a bounded number of
times; nothing is ever decided from the read.
"""

from __future__ import annotations

from tenure_server.domain.errors import StorageUnavailable

# How many times a decision is retaken when the state moved between it and its explanation.
DECISION_ATTEMPTS = 5


def still_moving(operation: str) -> StorageUnavailable:
    return StorageUnavailable(f"{operation}: the state kept changing under contention; retry")
