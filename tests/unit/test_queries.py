"""The SQL loader and the one-to-one match between statements and repository methods."""

from __future__ import annotations

import inspect

import pytest

from tenure_server.db.queries import QUERIES, parse
from tenure_server.db.repository import Repository


def test_every_statement_has_a_repository_method_of_its_name_and_back() -> None:
    """Query names equal the repository's public methods, in both directions."""
    methods = {
        name
        for name, member in inspect.getmembers(Repository, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }
    assert methods == set(QUERIES)


def test_every_method_runs_the_statement_it_is_named_after() -> None:
    """Each repository method's body names its own statement."""
    for name in QUERIES:
        assert f'"{name}"' in inspect.getsource(getattr(Repository, name))


def test_every_statement_says_why_it_is_safe() -> None:
    """Each block starts with a comment (parameters and why it is safe under concurrency)."""
    for name, statement in QUERIES.items():
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
