"""Hypothesis strategies for hostile input: arbitrary text next to near-misses of every format the
service parses (names, window keys, cursors, cron expressions, time zones, tokens)."""

from __future__ import annotations

import base64
import json
import sysconfig
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import TZPATH

from hypothesis import strategies as st

from tenure_server.domain.names import NAME_PATTERN, WINDOW_PATTERN

# Strings that often break parsers: separators, escapes, encodings, limits.
AWKWARD = [
    "",
    " ",
    "\x00",
    "\t",
    "\n",
    "\r\n",
    "/",
    "//",
    "..",
    "../..",
    "%2F",
    "%00",
    "?",
    "#",
    "*",
    ":",
    "+",
    "-",
    ".",
    "ß",
    "İ",
    "٣",
    "\u200b",
    "\ufeff",
    "😀",
    "\\",
    "'",
    '"',
    "<script>",
    "' OR 1=1 --",
    "x" * 201,
    "9" * 40,
]

text = st.one_of(st.text(max_size=260), st.sampled_from(AWKWARD))
names = st.one_of(text, st.from_regex(NAME_PATTERN, fullmatch=True))
window_keys = st.one_of(text, st.from_regex(WINDOW_PATTERN, fullmatch=True))

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=8,
)

_CRON_FIELD = st.one_of(
    st.sampled_from(
        [
            *["*", "?", "L", "W", "1W", "L-2", "5L", "1#2", "MON-FRI", "jan", "*/0", "*/61"],
            *["0-59/15", "60", "-1", "31", "0", "7", "1,2,3", "1-", ",", "//", "1-2-3", "2-1"],
            "99999999999",
        ]
    ),
    st.integers(-5, 100).map(str),
    st.text(max_size=4),
)
cron_expressions = st.one_of(
    text,
    st.lists(_CRON_FIELD, min_size=4, max_size=6).map(" ".join),
    st.sampled_from(["0 0 30 2 *", "0 0 31 4 *", "59 23 31 12 *", "* * * * *", "0 0 29 2 1"]),
)


def _zone_files() -> list[str]:
    """Every file under the zoneinfo trees this machine has, zones and not: `zone.tab`,
    `leapseconds`, `posix/…`, `right/…`, `localtime`, folders."""
    roots = [Path(path) for path in TZPATH]
    roots.append(Path(sysconfig.get_paths()["purelib"]) / "tzdata" / "zoneinfo")
    found: set[str] = set()
    for root in roots:
        if root.is_dir():
            found.update(str(path.relative_to(root)) for path in root.rglob("*"))
    return sorted(found) or ["UTC"]


ZONE_FILES = _zone_files()
time_zones = st.one_of(
    text,
    st.sampled_from(ZONE_FILES),
    st.sampled_from(ZONE_FILES).map(lambda name: "/" + name),
    st.sampled_from(ZONE_FILES).map(lambda name: name.lower()),
    st.sampled_from(["../../../etc/passwd", "UTC\x00", "Etc/../UTC", "Factory", "EST5EDT"]),
)

ordinary_instants = st.datetimes(
    datetime(1900, 1, 1), datetime(2200, 1, 1), timezones=st.timezones()
)
# Any aware instant, and often one within days of the limits of datetime (years 1 and 9999).
instants = st.one_of(
    st.datetimes(timezones=st.timezones()),
    st.datetimes(datetime(1, 1, 1), datetime(1, 1, 4), timezones=st.timezones()),
    st.datetimes(datetime(9999, 12, 28), timezones=st.timezones()),
)

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ "


def _basic(payload: bytes) -> bytes:
    return b"Basic " + base64.b64encode(payload)


authorization_values = st.one_of(
    st.binary(max_size=1100),
    st.binary(max_size=300).map(lambda raw: b"Bearer " + raw),
    st.binary(max_size=300).map(lambda raw: b"bEaReR  " + raw + b"  "),
    st.binary(max_size=300).map(_basic),
    st.text(alphabet=_B64, max_size=300).map(lambda junk: b"Basic " + junk.encode()),
    st.tuples(st.binary(max_size=40), st.binary(max_size=200)).map(
        lambda pair: _basic(pair[0] + b":" + pair[1])
    ),
    # A password with surrounding spaces, as a browser sends what the user typed.
    st.tuples(
        st.sampled_from([b" ", b"\t", b"\xc2\xa0", b"\xe3\x80\x80"]), st.binary(max_size=50)
    ).map(lambda pair: _basic(b"user:" + pair[0] + pair[1] + pair[0])),
    st.sampled_from([b"Basic", b"Basic ", b"Bearer", b"Bearer ", b"Basic Og==", b"Digest x"]),
    st.just(b"Bearer " + b"t" * 2000),
)


def _toml_value(value: Any) -> str:
    """TOML for a JSON-like value; JSON strings are valid TOML basic strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{_toml_value(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"


_toml_values: st.SearchStrategy[Any] = st.recursive(
    st.booleans() | st.integers(-(2**63), 2**63 - 1) | text.filter(lambda s: "\x00" not in s),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
_GOOD = {
    "principal": "jobs",
    "sha256": "sha256:" + "0" * 64,
    "roles": ["client"],
    "namespaces": ["billing."],
}


def _token_table(table: dict[str, Any]) -> str:
    return "[[token]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in table.items())


# A well-formed entry with one or two fields replaced by anything, dropped, or added.
_token_tables = st.builds(
    lambda changes, dropped: {
        key: value for key, value in (_GOOD | changes).items() if key not in dropped
    },
    st.dictionaries(
        st.sampled_from([*_GOOD, "token"]),
        _toml_values | st.lists(_toml_values, min_size=1, max_size=3),
        max_size=2,
    ),
    st.sets(st.sampled_from(list(_GOOD)), max_size=1),
).map(_token_table)
tokens_files = st.one_of(text, st.lists(_token_tables, min_size=1, max_size=3).map("\n".join))
