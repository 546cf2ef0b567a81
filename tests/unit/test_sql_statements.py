"""The SQL loader and the one-to-one match between statements and repository methods."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import ModuleType

import pytest

from tenure.sql import parse
from tenure_server.db import admin, fences, health, jobs, leases, monitoring, windows
from tenure_server.db.connections import Connections
from tenure_server.db.repository import Repository

# Each aggregate's module: its statements (QUERIES, from its .sql file) and the class running them.
AGGREGATES: list[tuple[ModuleType, type[Connections]]] = [
    (leases, leases.Leases),
    (windows, windows.Windows),
    (fences, fences.Fences),
    (health, health.Health),
    (jobs, jobs.Jobs),
    (monitoring, monitoring.Monitoring),
]


def public_methods(part: type) -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(part, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }


def statements(module: ModuleType) -> Mapping[str, str]:
    found: Mapping[str, str] = module.QUERIES
    return found


@pytest.mark.parametrize(("module", "part"), AGGREGATES)
def test_every_statement_has_a_repository_method_of_its_name_and_back(
    module: ModuleType, part: type[Connections]
) -> None:
    """Query names equal the aggregate's public methods, in both directions: a method runs one
    statement, the one of its name."""
    assert public_methods(part) == set(statements(module))


def test_the_repository_runs_every_aggregate_s_statements_and_no_other() -> None:
    """One repository: the methods of every aggregate, no name shared by two."""
    names = [name for module, _ in AGGREGATES for name in statements(module)]
    assert len(names) == len(set(names))
    assert public_methods(Repository) == set(names)


def test_the_operator_commands_are_functions_named_after_their_statements() -> None:
    """`tenure admin` runs on a connection of its own, not the pool: its statements are run by
    module functions of their names, each naming its own statement."""
    functions = {
        name
        for name, member in inspect.getmembers(admin, inspect.iscoroutinefunction)
        if not name.startswith("_") and member.__module__ == admin.__name__
    }
    assert functions == set(statements(admin))
    for name in functions:
        assert f'QUERIES["{name}"]' in inspect.getsource(getattr(admin, name))


@pytest.mark.parametrize(("module", "part"), AGGREGATES)
def test_every_method_runs_the_statement_it_is_named_after(
    module: ModuleType, part: type[Connections]
) -> None:
    """Each repository method's body names its own statement."""
    for name in statements(module):
        assert f'QUERIES["{name}"]' in inspect.getsource(getattr(part, name))


@pytest.mark.parametrize(("module", "part"), AGGREGATES)
def test_every_statement_says_why_it_is_safe(module: ModuleType, part: type[Connections]) -> None:
    """Each block starts with a comment (parameters and why it is safe under concurrency)."""
    for name, statement in statements(module).items():
        assert statement.startswith("--"), name


def test_the_loader_refuses_a_name_twice() -> None:
    """Two blocks with one name are a packaging error, not a silent override."""
    with pytest.raises(ValueError, match="twice"):
        parse("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")


def test_the_loader_splits_named_blocks() -> None:
    """Text between two markers is the first statement, without its trailing semicolon."""
    assert parse("header\n-- name: a\nSELECT 1;\n\n-- name: b\nSELECT 2;\n") == {
        "a": "SELECT 1",
        "b": "SELECT 2",
    }
