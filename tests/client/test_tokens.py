"""The fencing token `<lease>/<generation>`: formatting and parsing agree, and anything else is
refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tenure import FENCING_HEADER, MAX_GENERATION, fencing_headers, format_token, parse_token

NAMES = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:-]{0,199}\Z")
GENERATIONS = st.integers(min_value=1, max_value=MAX_GENERATION)


@given(NAMES, GENERATIONS)
def test_format_and_parse_round_trip(lease: str, generation: int) -> None:
    """Every valid lease name and generation survives format_token -> parse_token."""
    assert parse_token(format_token(lease, generation)) == (lease, generation)


def test_header_name_and_value() -> None:
    """The header is `Fencing-Token: <lease>/<generation>`."""
    assert FENCING_HEADER == "Fencing-Token"
    assert fencing_headers("close-day", 7) == {"Fencing-Token": "close-day/7"}
    assert parse_token("a.b:c-d_e/9007199254740991") == ("a.b:c-d_e", MAX_GENERATION)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "close-day",
        "close-day/",
        "/7",
        "close-day/0",
        "close-day/-1",
        "close-day/+1",
        "close-day/07",
        "close-day/ 7",
        "close-day/7 ",
        " close-day/7",
        "close-day/7\n",
        "close-day/1.0",
        "close-day/1e3",
        "close-day/9007199254740992",
        "close-day/9223372036854775807",
        "close-day/99999999999999999999",
        "close day/7",
        "close-day/7/8",
        "-close/7",
        "clôse/7",
        "close-day/٣",
        "x" * 201 + "/7",
    ],
)
def test_malformed_tokens_are_refused(value: str) -> None:
    """Empty, no slash, a bad name, or a generation that is not 1..2**53-1 in plain digits."""
    with pytest.raises(ValueError, match="fencing token"):
        parse_token(value)


@pytest.mark.parametrize(
    ("lease", "generation"),
    [("", 1), ("a/b", 1), ("a", 0), ("a", -3), ("a", MAX_GENERATION + 1)],
)
def test_format_refuses_what_parse_would_refuse(lease: str, generation: int) -> None:
    """format_token never produces a token that parse_token would refuse."""
    with pytest.raises(ValueError, match=r"lease name|generation"):
        format_token(lease, generation)


def test_format_refuses_a_bool_generation() -> None:
    """True is not generation 1."""
    with pytest.raises(TypeError):
        format_token("a", True)
