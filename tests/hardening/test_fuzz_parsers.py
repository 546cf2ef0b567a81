"""The parsers themselves, fed hostile input: each returns a value or raises its one documented
exception (ValueError for the client's formats; InvalidInput, Unauthenticated or TokensFileError
in the service), and what it accepts is what the format says. Any other exception fails."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tenure import MAX_GENERATION, format_token, parse_token
from tenure.schedule import KeyFormat, check_cron, check_timezone, next_occurrence, resolve
from tenure_server.adapters.auth import Authenticator, TokensFileError
from tenure_server.domain.errors import InvalidInput, Unauthenticated
from tenure_server.domain.names import (
    NAME_PATTERN,
    WINDOW_PATTERN,
    check_holder,
    decode_cursor,
    encode_cursor,
)
from tests.hardening.strategies import (
    authorization_values,
    cron_expressions,
    json_values,
    names,
    ordinary_instants,
    text,
    time_zones,
    tokens_files,
)
from tests.support.tokens import TOKENS, tokens_toml

EXAMPLES = settings(max_examples=300, deadline=None)
KEYS: list[KeyFormat] = ["occurrence", "date", "previous_day"]
AUTHENTICATOR = Authenticator.from_toml(tokens_toml())

T = TypeVar("T")
E = TypeVar("E", bound=Exception)


def attempt(call: Callable[[], T], documented: type[E]) -> T | E:
    """The result, or the documented exception raised; any other exception propagates."""
    try:
        return call()
    except documented as refused:
        return refused


tokens = st.one_of(
    text,
    names.map(lambda name: f"{name}/{name}"),
    st.from_regex(r"\A.{0,5}/[-+ ]?0*[0-9]{1,25}\s?\Z"),
    st.from_regex(NAME_PATTERN, fullmatch=True).map(lambda name: f"{name}/7"),
)


@EXAMPLES
@given(value=tokens)
def test_parse_token_accepts_exactly_the_canonical_form(value: str) -> None:
    """parse_token returns (lease, generation) only for `<name>/<1..2^53-1>` written canonically
    (formatting the result gives the input back); anything else is a ValueError."""
    parsed = attempt(lambda: parse_token(value), ValueError)
    if isinstance(parsed, ValueError):
        return
    lease, generation = parsed
    assert re.fullmatch(NAME_PATTERN, lease)
    assert 1 <= generation <= MAX_GENERATION
    assert format_token(lease, generation) == value


@EXAMPLES
@given(value=json_values.filter(lambda value: not isinstance(value, str)))
def test_parse_token_refuses_non_strings_with_value_error(value: Any) -> None:
    """Whatever else a caller passes (None, numbers, lists, dicts), only ValueError."""
    assert isinstance(attempt(lambda: parse_token(value), ValueError), ValueError)


@EXAMPLES
@given(cron=cron_expressions, at=ordinary_instants, key=st.sampled_from(KEYS))
def test_cron_expressions_are_checked_or_refused_with_value_error(
    cron: str, at: datetime, key: KeyFormat
) -> None:
    """check_cron returns the expression or raises ValueError; an accepted expression resolves
    (or says with ValueError that it never fires near that instant)."""
    if isinstance(attempt(lambda: check_cron(cron), ValueError), ValueError):
        return
    resolved = attempt(lambda: resolve(cron, "UTC", at, key), ValueError)
    following = attempt(lambda: next_occurrence(cron, "UTC", at), ValueError)
    if isinstance(resolved, ValueError) or isinstance(following, ValueError):
        return
    assert resolved.occurrence <= at < following
    assert re.fullmatch(WINDOW_PATTERN, resolved.window)


@EXAMPLES
@given(zone=time_zones, at=ordinary_instants, key=st.sampled_from(KEYS))
def test_time_zones_are_checked_or_refused_with_value_error(
    zone: str, at: datetime, key: KeyFormat
) -> None:
    """check_timezone accepts IANA zone names only (no paths, no tzdata's other files), else
    ValueError; an accepted zone resolves a daily schedule at any instant, or ValueError."""
    if isinstance(attempt(lambda: check_timezone(zone), ValueError), ValueError):
        return
    assert not zone.startswith(("/", "posix/", "right/"))
    assert ".." not in zone
    resolved = attempt(lambda: resolve("30 2 * * *", zone, at, key), ValueError)
    if isinstance(resolved, ValueError):
        return
    assert resolved.occurrence <= at
    assert re.fullmatch(WINDOW_PATTERN, resolved.window)


@EXAMPLES
@example(cron="0 0 * * *", zone="UTC", at=datetime(1, 1, 1, 12, tzinfo=UTC), key="previous_day")
@given(
    cron=st.sampled_from(["* * * * *", "0 0 * * *", "30 2 * * *", "59 23 31 12 *"]),
    zone=st.sampled_from(["UTC", "Pacific/Kiritimati", "Etc/GMT+12", "America/New_York"]),
    at=st.one_of(
        st.datetimes(datetime(1, 1, 1), datetime(1, 1, 3), timezones=st.just(UTC)),
        st.datetimes(datetime(9999, 12, 29), timezones=st.just(UTC)),
    ),
    key=st.sampled_from(KEYS),
)
def test_schedules_near_the_limits_of_datetime_resolve_or_raise_value_error(
    cron: str, zone: str, at: datetime, key: KeyFormat
) -> None:
    """In the first and last days datetime can hold, resolve answers or raises ValueError (the
    window key of the day before 0001-01-01 does not exist), never OverflowError."""
    resolved = attempt(lambda: resolve(cron, zone, at, key), ValueError)
    if not isinstance(resolved, ValueError):
        assert re.fullmatch(WINDOW_PATTERN, resolved.window)


@EXAMPLES
@given(cursor=st.one_of(text, names.map(encode_cursor)))
def test_cursors_decode_or_are_invalid_input(cursor: str) -> None:
    """A cursor decodes to a printable name of at most 200 characters, or it is InvalidInput."""
    after = attempt(lambda: decode_cursor(cursor), InvalidInput)
    if isinstance(after, InvalidInput):
        assert after.field == "cursor"
        return
    assert after is not None
    assert 1 <= len(after) <= 200
    assert after.isprintable()


@EXAMPLES
@given(name=st.from_regex(NAME_PATTERN, fullmatch=True))
def test_cursors_round_trip_every_name(name: str) -> None:
    """The cursor handed out after a name resumes after exactly that name."""
    assert decode_cursor(encode_cursor(name)) == name


@EXAMPLES
@given(holder=text)
def test_holders_are_printable_or_invalid_input(holder: str) -> None:
    """A holder is accepted as it is when 1–200 printable characters, else InvalidInput."""
    checked = attempt(lambda: check_holder(holder), InvalidInput)
    valid = 1 <= len(holder) <= 200 and holder.isprintable()
    if isinstance(checked, InvalidInput):
        assert checked.field == "holder"
        assert not valid
    else:
        assert checked == holder
        assert valid


@EXAMPLES
@given(header=st.one_of(authorization_values.map(lambda raw: raw.decode("latin-1")), text))
def test_authorization_headers_authenticate_or_are_unauthenticated(header: str) -> None:
    """No Authorization value (garbage, Basic with broken base64 or non-UTF-8 bytes, too long)
    raises anything but Unauthenticated."""
    principal = attempt(lambda: AUTHENTICATOR.authenticate(header), Unauthenticated)
    assert isinstance(principal, Unauthenticated), f"{header!r} authenticated as {principal}"


@EXAMPLES
@given(
    principal=st.sampled_from(sorted(TOKENS)),
    user=st.text(max_size=40).filter(lambda user: ":" not in user),
    scheme=st.sampled_from(["Bearer", "bearer", "BASIC", "Basic"]),
)
def test_a_valid_token_authenticates_in_either_scheme(
    principal: str, user: str, scheme: str
) -> None:
    """The right token authenticates as Bearer, or as the password of Basic with any user."""
    token = TOKENS[principal]
    if scheme.lower() == "basic":
        credentials = base64.b64encode(f"{user}:{token}".encode()).decode()
    else:
        credentials = token
    assert AUTHENTICATOR.authenticate(f"{scheme} {credentials}").name == principal


@EXAMPLES
@given(document=tokens_files)
def test_tokens_files_load_or_are_refused_with_a_message(document: str) -> None:
    """Any tokens file loads or raises TokensFileError naming the problem, never another error
    (the service would stop with a traceback instead of the message)."""
    loaded = attempt(lambda: Authenticator.from_toml(document), TokensFileError)
    if isinstance(loaded, TokensFileError):
        assert str(loaded).startswith("tokens:")
    else:
        assert loaded.enabled
