"""What a name, a window key and a holder may look like, and keyset cursors over names."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import TypeVar

from tenure_server.domain.errors import InvalidInput

# Lease, job and fence resource names: safe in URLs, logs and Prometheus labels.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"
NAME_MAX_LENGTH = 200
# Window keys also admit "+" so that an ISO 8601 occurrence with its offset is a key.
WINDOW_PATTERN = r"^[A-Za-z0-9._:+-]{1,100}$"
WINDOW_MAX_LENGTH = 100
HOLDER_MAX_LENGTH = 200


def check_window_key(key: str) -> str:
    """ "." and ".." match the pattern but no HTTP client can send them as a path segment."""
    if key in {".", ".."}:
        raise ValueError("a window key cannot be '.' or '..'")
    return key


def check_holder(holder: str) -> str:
    """A holder is 1–200 printable characters: it is shown to operators as it is."""
    if not 1 <= len(holder) <= HOLDER_MAX_LENGTH or not holder.isprintable():
        raise InvalidInput("holder", f"must be 1–{HOLDER_MAX_LENGTH} printable characters")
    return holder


def prefix_upper_bound(prefix: str) -> str | None:
    """The least string greater than every string starting with `prefix` (bytewise order).

    Names are ASCII and stored with the "C" collation, so bumping the last character gives an
    index range for a prefix search. None means no upper bound.
    """
    if not prefix:
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


T = TypeVar("T")


def page(rows: list[T], limit: int, key: Callable[[T], str]) -> tuple[list[T], str | None]:
    """Rows fetched with limit + 1, and the cursor of the next page: the extra row only says
    that there is one."""
    if len(rows) <= limit:
        return rows, None
    return rows[:limit], encode_cursor(key(rows[limit - 1]))


def encode_cursor(after: str) -> str:
    """An opaque cursor that resumes a listing after `after`."""
    return base64.urlsafe_b64encode(after.encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> str | None:
    if cursor is None:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        after = base64.urlsafe_b64decode(padded.encode("ascii")).decode("ascii")
    except (binascii.Error, UnicodeError, ValueError):
        raise InvalidInput("cursor", "is not a cursor this service handed out") from None
    if not after or len(after) > NAME_MAX_LENGTH or not after.isprintable():
        raise InvalidInput("cursor", "is not a cursor this service handed out")
    return after
