"""Which certificate authorities a client trusts: exactly what httpx's clients trust by default,
or what `verify=` names.

    verify=True             $SSL_CERT_FILE, else $SSL_CERT_DIR, else certifi's bundle (httpx's
                            default; not the system's store)
    verify="ca.pem"         that CA bundle only (a folder: the CA certificates in it)
    verify=ssl_context      the context as it is (its CAs, and a client certificate if loaded)
    verify=False            no verification at all

`ssl_context` makes the context every pool that uses Python's `ssl` shares (aiohttp's, httpx's
own). reqwest verifies with rustls instead; `tenure._sync_transport` says when it can trust the
same CAs and sends through httpx's own pool when it cannot.
"""

from __future__ import annotations

import os
import ssl
from typing import TypeAlias

import httpx

__all__ = ["Verify", "ssl_context"]

Verify: TypeAlias = "bool | str | os.PathLike[str] | ssl.SSLContext"


def ssl_context(verify: Verify) -> ssl.SSLContext:
    """The context an httpx client given `verify` (and `trust_env`, its default) would use."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    if isinstance(verify, bool):
        return httpx.create_ssl_context(verify=verify)
    if isinstance(verify, str | os.PathLike):
        # What httpx does with a path, without the warning it gives for `verify=<str>` since 0.28.
        path = os.fspath(verify)
        if os.path.isdir(path):
            return ssl.create_default_context(capath=path)
        return ssl.create_default_context(cafile=path)
    raise TypeError(f"verify must be a bool, a CA bundle's path or an ssl.SSLContext: {verify!r}")
