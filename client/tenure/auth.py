"""Bearer tokens: how an operator makes one, and the hash the service stores instead of it.

Tokens are 256-bit random strings, so a fast hash (SHA-256) is enough: there is nothing to guess
that a slow password hash would protect. The service keeps only `sha256:<hex>`.
"""

from __future__ import annotations

import hashlib
import secrets

__all__ = ["TOKEN_PREFIX", "hash_token", "new_token"]

TOKEN_PREFIX = "tnr_"  # noqa: S105 - a prefix that makes tokens recognisable, not a secret
_HASH_PREFIX = "sha256:"


def new_token() -> str:
    """A fresh token: `tnr_` and 43 URL-safe characters (256 random bits)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """`sha256:<64 hex digits>`, the form the service's tokens file holds."""
    if not token or token != token.strip():
        raise ValueError("a token is a non-empty string without surrounding spaces")
    return _HASH_PREFIX + hashlib.sha256(token.encode("utf-8")).hexdigest()
