"""The stream's JSON is the standard library's compact ASCII JSON, whichever encoder wrote it:
a batch's length in characters is its length in bytes, and every replica frames the same text."""

from __future__ import annotations

import json
import time

from hypothesis import given
from hypothesis import strategies as st

from tenure_server.app.stream_wire import streamed, to_json
from tests.unit.test_event_hub import ONE_OF_EACH


def reference(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def test_every_character_is_written_as_the_standard_encoder_writes_it() -> None:
    """Control characters, DEL, non-ASCII, astral and lone surrogate characters alike."""
    for code in [*range(0x300), 0x2028, 0xD800, 0xFFFF, 0x1F600]:
        value = {"holder": f"a{chr(code)}b", "generation": code}
        assert to_json(value) == reference(value)


def test_each_streamed_event_is_written_as_the_standard_encoder_writes_it() -> None:
    """The data of every streamed type, as the publisher encodes it."""
    for event in ONE_OF_EACH:
        found = streamed(event, time.time())
        assert found is not None
        assert to_json(found[1]) == reference(found[1])


plain = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(),
)


@given(st.dictionaries(st.one_of(st.text(), st.integers()), plain) | st.lists(plain))
def test_any_value_is_written_as_the_standard_encoder_writes_it(value: object) -> None:
    """Floats, integers beyond 64 bits, keys that are not strings and lists included."""
    assert to_json(value) == reference(value)
