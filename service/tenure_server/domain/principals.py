"""Who is asking, and what they may do: roles and name-prefix namespaces."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat
from typing import Literal

from tenure_server.domain.errors import Forbidden, ReservedName

Role = Literal["reader", "client", "admin"]
ROLES: tuple[Role, ...] = ("reader", "client", "admin")
# Each role includes the ones before it: a client may read what it may write. The roles that
# include each role (a set operation per request instead of a generator: every request asks).
_INCLUDING: dict[Role, frozenset[Role]] = {
    role: frozenset(ROLES[rank:]) for rank, role in enumerate(ROLES)
}
EVERY_NAMESPACE = "*"
# The service's own names (the monitor's lease, `tenure.monitor`): no caller acts under them,
# whatever its namespaces, so no token can hold what the service needs to hold.
SERVICE_NAMESPACE = "tenure."
# The principal of the service's own holdings. No caller is it: a token's principal begins with
# a letter or a digit (adapters/auth.py) and the anonymous caller's is None. A holding of a reserved
# name by another principal is not the service's, and the service does not honour it.
SERVICE_PRINCIPAL = "@tenure"


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller. `name` is None when authentication is off (anonymous admin)."""

    name: str | None
    roles: frozenset[Role]
    namespaces: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.name or "anonymous"

    def has(self, role: Role) -> bool:
        return not self.roles.isdisjoint(_INCLUDING[role])

    def owns(self, name: str) -> bool:
        """Namespaces are name prefixes (`billing.`); `*` covers every name."""
        # No generator: a batch asks this for each of its 100–200 names.
        return EVERY_NAMESPACE in self.namespaces or name.startswith(self.namespaces)

    def require(self, role: Role, action: str, *names: str) -> None:
        """Refuse unless the principal has `role` and every name is in its namespaces."""
        if not self.has(role):
            raise Forbidden(self.label, action)
        # Each name in one pass in C (a batch names 100–200); which one is refused, only then.
        if EVERY_NAMESPACE in self.namespaces or all(
            map(str.startswith, names, repeat(self.namespaces))
        ):
            return
        refused = next(name for name in names if not self.owns(name))
        raise Forbidden(self.label, action, refused)

    def require_client(self, action: str, *names: str) -> None:
        """A client's work under `names` (acquire, renew, release, claim, complete, verify,
        register a job): `require("client", …)`, and refused under a name reserved to the
        service whoever asks, a `*` token, an admin and the anonymous caller included."""
        if self.has("client") and any(map(str.startswith, names, repeat(SERVICE_NAMESPACE))):
            reserved = next(name for name in names if name.startswith(SERVICE_NAMESPACE))
            raise ReservedName(reserved, action, SERVICE_NAMESPACE)
        self.require("client", action, *names)


ANONYMOUS = Principal(None, frozenset({"admin"}), (EVERY_NAMESPACE,))


@dataclass(frozen=True, slots=True)
class ForeignHolding:
    """A holding of a name reserved to the service, by another principal (None: anonymous)."""

    lease: str
    holder: str
    principal: str | None
    generation: int


@dataclass(frozen=True, slots=True)
class ReservedUse:
    """A lease or a job of the deployment's own under the reserved prefix (`lease`: the job's)."""

    kind: Literal["lease", "job"]
    name: str
    lease: str | None
