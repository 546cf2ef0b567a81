"""Authentication: bearer tokens from a TOML file (or the TENURE_TOKENS variable), kept only as
SHA-256 hashes and compared in constant time, each mapped to a principal.

    [[token]]
    principal = "billing-jobs"
    sha256 = "sha256:9f86d081…"       # `tenure token hash` or `tenure token new`
    roles = ["client"]                # reader ⊂ client ⊂ admin
    namespaces = ["billing.", "billing:"]   # name prefixes; "*" for every name

A browser can present the token as the password of HTTP Basic authentication (any user name), so
the dashboard and /metrics open in a browser after the usual password prompt.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from tenure.auth import hash_token
from tenure_server.domain.errors import Unauthenticated
from tenure_server.domain.principals import ANONYMOUS, EVERY_NAMESPACE, ROLES, Principal, Role

_PRINCIPAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,99}")
_NAMESPACE = re.compile(r"[A-Za-z0-9._:-]{1,200}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# A longer Authorization header is refused before any parsing or hashing.
MAX_HEADER_LENGTH = 1024


class TokensFileError(ValueError):
    """The tokens file is malformed; the message names the entry and the field."""


@dataclass(frozen=True)
class _Entry:
    digest: bytes
    principal: Principal


class Authenticator:
    """Maps an Authorization header to a principal. With no tokens, authentication is off and
    every caller is the anonymous admin (the service then binds to loopback only)."""

    def __init__(self, entries: Iterable[_Entry] = ()) -> None:
        self._entries = tuple(entries)

    @property
    def enabled(self) -> bool:
        return bool(self._entries)

    @classmethod
    def from_toml(cls, text: str | None) -> Authenticator:
        if text is None:
            return cls()
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise TokensFileError(f"tokens: not TOML: {error}") from None
        tokens = document.get("token", [])
        if set(document) - {"token"} or not isinstance(tokens, list) or not tokens:
            raise TokensFileError("tokens: expected one or more [[token]] tables and nothing else")
        entries = [_entry(index, item) for index, item in enumerate(tokens)]
        _check_consistent(entries)
        return cls(entries)

    def authenticate(self, authorization: str | None) -> Principal:
        if not self.enabled:
            return ANONYMOUS
        token = _token_of(authorization)
        try:
            digest = hash_token(token).encode()
        except ValueError:  # surrounding spaces (a Basic password " x"): never a token
            raise Unauthenticated("the token is not valid") from None
        found: Principal | None = None
        # Compare against every entry, so the time taken does not depend on which one matches.
        for entry in self._entries:
            if hmac.compare_digest(entry.digest, digest):
                found = entry.principal
        if found is None:
            raise Unauthenticated("the token is not valid")
        return found


def _token_of(authorization: str | None) -> str:
    if not authorization:
        raise Unauthenticated()
    if len(authorization) > MAX_HEADER_LENGTH:
        raise Unauthenticated("the Authorization header is too long")
    scheme, _, credentials = authorization.strip().partition(" ")
    credentials = credentials.strip()
    if scheme.lower() == "bearer" and credentials:
        return credentials
    if scheme.lower() == "basic" and credentials:
        try:
            decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise Unauthenticated("malformed Basic credentials") from None
        password = decoded.partition(":")[2]
        if password:
            return password
    raise Unauthenticated("use Authorization: Bearer <token>")


def _entry(index: int, item: object) -> _Entry:
    where = f"tokens: entry {index + 1}"
    if not isinstance(item, dict):
        raise TokensFileError(f"{where}: expected a table")
    table = cast(dict[str, Any], item)
    unknown = set(table) - {"principal", "sha256", "roles", "namespaces"}
    if unknown:
        raise TokensFileError(f"{where}: unknown fields {sorted(unknown)}")
    name, digest = table.get("principal"), table.get("sha256")
    roles, namespaces = table.get("roles"), table.get("namespaces")
    if not isinstance(name, str) or not _PRINCIPAL.fullmatch(name):
        raise TokensFileError(f"{where}: principal must match {_PRINCIPAL.pattern}")
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise TokensFileError(f"{where}: sha256 must be 'sha256:' and 64 hex digits")
    if not isinstance(roles, list) or not roles or not all(role in ROLES for role in roles):
        raise TokensFileError(f"{where}: roles must be a non-empty list of {list(ROLES)}")
    if (
        not isinstance(namespaces, list)
        or not namespaces
        or not all(
            isinstance(ns, str) and (ns == EVERY_NAMESPACE or _NAMESPACE.fullmatch(ns))
            for ns in namespaces
        )
    ):
        raise TokensFileError(f"{where}: namespaces must be a non-empty list of name prefixes")
    principal = Principal(name, frozenset(cast(list[Role], roles)), tuple(namespaces))
    return _Entry(digest.encode(), principal)


def _check_consistent(entries: list[_Entry]) -> None:
    by_name: dict[str | None, Principal] = {}
    digests: set[bytes] = set()
    for entry in entries:
        if entry.digest in digests:
            raise TokensFileError("tokens: the same token hash appears twice")
        digests.add(entry.digest)
        known = by_name.setdefault(entry.principal.name, entry.principal)
        if known != entry.principal:
            raise TokensFileError(
                f"tokens: principal {entry.principal.name!r} has entries with different "
                "roles or namespaces"
            )
