"""Principals for tests with authentication on: five with different roles and namespaces, their
tokens, the tokens file that grants them (`TENURE_TOKENS`), and the Authorization header of each.
The `secured` fixture of tests/auth/conftest.py is an app with them.
"""

from __future__ import annotations

import asyncpg

from tenure.auth import hash_token

TOKENS = {
    "admin": "tnr_admin-token",
    "billing-client": "tnr_billing-client-token",
    "billing-reader": "tnr_billing-reader-token",
    "ops-client": "tnr_ops-client-token",
    "every-client": "tnr_every-client-token",
}
ROLES = {
    "admin": (["admin"], ["*"]),
    "billing-client": (["client"], ["billing."]),
    "billing-reader": (["reader"], ["billing."]),
    "ops-client": (["client"], ["ops."]),
    "every-client": (["client"], ["*"]),
}


def tokens_toml() -> str:
    entries = []
    for principal, token in TOKENS.items():
        roles, namespaces = ROLES[principal]
        entries.append(
            f'[[token]]\nprincipal = "{principal}"\nsha256 = "{hash_token(token)}"\n'
            f"roles = {roles!r}\nnamespaces = {namespaces!r}\n".replace("'", '"')
        )
    return "\n".join(entries)


def bearer(principal: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[principal]}"}


async def register_old_job(database_url: str) -> None:
    """A job registered under `tenure.` before the names were reserved."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "INSERT INTO jobs (name, schedule, timezone, key_format, lease, deadline_seconds,"
            " created_at, updated_at, active_since)"
            " VALUES ('tenure.nightly', '0 3 * * *', 'UTC', 'date', 'tenure.nightly', 60,"
            " now(), now(), now())"
        )
    finally:
        await connection.close()
