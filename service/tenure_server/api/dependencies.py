"""What handlers receive: the operations and limits that the lifespan put on the app."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from tenure_server.db.operations import Operations
from tenure_server.db.repository import Repository
from tenure_server.domain.limits import Limits


def _operations(request: Request) -> Operations:
    operations: Operations = request.app.state.operations
    return operations


def _repository(request: Request) -> Repository:
    repository: Repository = request.app.state.repository
    return repository


def _limits(request: Request) -> Limits:
    limits: Limits = request.app.state.limits
    return limits


OperationsDep = Annotated[Operations, Depends(_operations)]
RepositoryDep = Annotated[Repository, Depends(_repository)]
LimitsDep = Annotated[Limits, Depends(_limits)]
