"""Who is asking, and what they may do: roles and name-prefix namespaces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tenure_server.domain.errors import Forbidden

Role = Literal["reader", "client", "admin"]
ROLES: tuple[Role, ...] = ("reader", "client", "admin")
# Each role includes the ones before it: a client may read what it may write.
_RANK = {role: rank for rank, role in enumerate(ROLES)}
EVERY_NAMESPACE = "*"


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
        return any(_RANK[mine] >= _RANK[role] for mine in self.roles)

    def owns(self, name: str) -> bool:
        """Namespaces are name prefixes (`billing.`); `*` covers every name."""
        return any(ns == EVERY_NAMESPACE or name.startswith(ns) for ns in self.namespaces)

    def require(self, role: Role, action: str, *names: str) -> None:
        """Refuse unless the principal has `role` and every name is in its namespaces."""
        if not self.has(role):
            raise Forbidden(self.label, action)
        for name in names:
            if not self.owns(name):
                raise Forbidden(self.label, action, name)


ANONYMOUS = Principal(None, frozenset({"admin"}), (EVERY_NAMESPACE,))
