"""The hot routes' path parameters, one named tuple per path shape. Each field is the `Annotated`
type (schemas.py) FastAPI validates that parameter with; the express lane validates with the
same tuple, so a path either both accept or both refuse (api/hot_routes.py)."""

from __future__ import annotations

from typing import NamedTuple

from tenure_server.api.schemas import JobName, LeaseName, ResourceName, WindowKey


class LeasePath(NamedTuple):
    """/v1/leases/{name}/…"""

    name: LeaseName


class ResourcePath(NamedTuple):
    """/v1/fences/{resource}/…"""

    resource: ResourceName


class WindowPath(NamedTuple):
    """/v1/jobs/{job}/windows/{window}/…"""

    job: JobName
    window: WindowKey


class NoPath(NamedTuple):
    """A path without parameters: the batch routes."""
