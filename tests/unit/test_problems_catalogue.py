"""The problem catalogue `tenure.problems` is the one list of problem types: the service, the
FencingMiddleware and the client each answer or decode only types it holds, as it writes them."""

from __future__ import annotations

from tenure._error_answers import DECODERS
from tenure._middleware import _PROBLEMS as MIDDLEWARE_PROBLEMS
from tenure._middleware import _UNKNOWN as MIDDLEWARE_UNKNOWN
from tenure.problems import ProblemType
from tenure_server.api.problems import ALL_TYPES, PROBLEMS


def test_each_slug_names_one_problem_type() -> None:
    """No two problem types share a slug (nor are two members one type under two names)."""
    slugs = [kind.slug for kind in ProblemType]
    assert len(slugs) == len(set(slugs)) == len(ProblemType.__members__)


def test_every_type_says_what_it_means_and_what_to_do() -> None:
    """Each type has a description of its own, in sentences, beyond its title: what
    GET /problems/<slug> answers."""
    descriptions = [kind.description for kind in ProblemType]
    assert len(set(descriptions)) == len(descriptions)
    for kind in ProblemType:
        assert kind.description.endswith("."), kind
        assert len(kind.description) > 2 * len(kind.title), kind


def test_the_service_answers_only_catalogue_types() -> None:
    """Every type the service can answer, for its domain errors and from its HTTP layer, is a
    type of the catalogue, status and title included."""
    assert all(isinstance(kind, ProblemType) for kind in ALL_TYPES)
    assert {row.kind for row in PROBLEMS.values()} <= set(ALL_TYPES)


def test_the_middleware_answers_only_catalogue_types() -> None:
    """The FencingMiddleware's refusals are catalogue types; those it shares with the service
    are the very types the service answers."""
    kinds = {row.kind for row in MIDDLEWARE_PROBLEMS.values()} | {MIDDLEWARE_UNKNOWN.kind}
    assert all(isinstance(kind, ProblemType) for kind in kinds)
    shared = {
        ProblemType.STALE_GENERATION,
        ProblemType.FENCE_LEASE_MISMATCH,
        ProblemType.UNKNOWN_GENERATION,
    }
    assert shared <= kinds & set(ALL_TYPES)


def test_the_client_decodes_only_catalogue_types() -> None:
    """Each slug the client has a decoder for is the slug of a catalogue type."""
    assert set(DECODERS) <= {kind.slug for kind in ProblemType}


def test_a_body_lists_type_title_status_detail_then_facts() -> None:
    """The members of a problem, in the order every part of Tenure writes them."""
    body = ProblemType.STALE_GENERATION.body("d", facts={"highest": 3})
    assert list(body.items()) == [
        ("type", "/problems/stale-generation"),
        ("title", "A higher generation has been seen"),
        ("status", 409),
        ("detail", "d"),
        ("highest", 3),
    ]
    assert ProblemType.FENCING_TOKEN_REQUIRED.body("d", status=400)["status"] == 400
