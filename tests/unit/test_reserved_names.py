"""Names under `tenure.` are the service's: who is refused, and that no caller is the service."""

from __future__ import annotations

import pytest

from tenure.auth import hash_token
from tenure_server.adapters.auth import Authenticator, TokensFileError
from tenure_server.domain.errors import Forbidden, ReservedName
from tenure_server.domain.principals import (
    ANONYMOUS,
    SERVICE_NAMESPACE,
    SERVICE_PRINCIPAL,
    Principal,
)

EVERY_NAME = Principal("all", frozenset({"client"}), ("*",))
READER = Principal("eyes", frozenset({"reader"}), ("*",))


@pytest.mark.parametrize("caller", [EVERY_NAME, ANONYMOUS], ids=["star-client", "anonymous"])
def test_a_client_of_every_name_is_refused_every_reserved_name(caller: Principal) -> None:
    """Among other names or alone, as the lease or the job: `reserved-name`, naming it."""
    with pytest.raises(ReservedName) as refused:
        caller.require_client("claim windows", "nightly", f"{SERVICE_NAMESPACE}monitor")
    assert refused.value.name == "tenure.monitor"
    caller.require_client("acquire", "tenure-monitor", "tenure", "billing.tenure.x")
    caller.require("reader", "read", "tenure.monitor")


def test_a_role_too_small_is_told_so_first() -> None:
    """A reader is refused for its role, reserved name or not."""
    with pytest.raises(Forbidden) as refused:
        READER.require_client("acquire", "tenure.monitor")
    assert type(refused.value) is Forbidden


def test_no_token_can_be_the_service() -> None:
    """The service's principal is not one a tokens file may name: a holding under it is the
    service's own."""
    entry = (
        f'[[token]]\nprincipal = "{SERVICE_PRINCIPAL}"\nsha256 = "{hash_token("tnr_x")}"\n'
        'roles = ["client"]\nnamespaces = ["*"]\n'
    )
    with pytest.raises(TokensFileError, match="principal must match"):
        Authenticator.from_toml(entry)
    assert ANONYMOUS.name != SERVICE_PRINCIPAL
