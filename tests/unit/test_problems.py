"""The problem table: every domain error has one stable type, status and title."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tenure_server.api.problems import ALL_TYPES, PROBLEMS
from tenure_server.domain import errors


def domain_errors() -> list[type[errors.TenureError]]:
    return [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.TenureError)
    ]


def test_every_domain_error_is_mapped() -> None:
    """No domain error can reach the handler without a row in the table."""
    unmapped = {error for error in domain_errors() if error is not errors.TenureError} - set(
        PROBLEMS
    )
    assert unmapped == set()


def test_problem_types_are_unique() -> None:
    """Each slug names exactly one problem."""
    slugs = [kind.slug for kind in ALL_TYPES]
    assert len(slugs) == len(set(slugs))


@pytest.mark.parametrize(
    ("error", "facts"),
    [
        (
            errors.LeaseHeld("n", "a", datetime(2026, 1, 1, tzinfo=UTC), 3.5),
            {
                "holder": "a",
                "expires_at": "2026-01-01T00:00:00+00:00",
                "retry_after_seconds": 3.5,
            },
        ),
        (errors.StaleGeneration("r", 2, 5), {"highest": 5}),
        (errors.UnknownGeneration("l", 9, 2), {"current_generation": 2}),
        (errors.WindowLeaseMismatch("j", "w", "other"), {"lease": "other"}),
        (
            errors.WindowNotDue(
                "j", "w", datetime(2026, 12, 6, tzinfo=UTC), datetime(2026, 12, 5, tzinfo=UTC), 30
            ),
            {"occurrence": "2026-12-06T00:00:00+00:00", "now": "2026-12-05T00:00:00+00:00"},
        ),
        (errors.InvalidInput("limit", "bad"), {"errors": [{"field": "limit", "message": "bad"}]}),
    ],
)
def test_problems_carry_the_facts_of_their_error(
    error: errors.TenureError, facts: dict[str, object]
) -> None:
    """The extension fields a client needs travel with the problem."""
    assert PROBLEMS[type(error)].facts(error) == facts
