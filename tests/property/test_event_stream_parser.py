"""The client's Server-Sent Events parser against the HTML standard's event-stream rules: any
stream written with any line terminator, comments, split data lines and optional spaces reads
back as the messages it was written from."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tenure._errors import UnexpectedResponse
from tenure._events import (
    DROPPED,
    Message,
    SSEParser,
    StreamEvent,
    check_media_type,
    resume_point,
)

# What a field value may hold: anything but line terminators (and NUL, which voids an id); a
# small alphabet with the characters that matter (spaces, colons, non-ASCII) keeps it fast.
VALUE = st.text(' a:.{}"é☃\ufeff', max_size=12)
NAME = st.text("a.:é_-", min_size=1, max_size=8).map(lambda name: name.replace(":", "x"))
TERMINATOR = st.sampled_from(["\n", "\r", "\r\n"])


def parse(text: str) -> tuple[list[Message], SSEParser]:
    """Split at CRLF, LF or CR, as the standard (and httpx's `iter_lines`) do, and parse."""
    parser = SSEParser()
    lines = re.split(r"\r\n|\r|\n", text)
    found = [message for line in lines[:-1] if (message := parser.feed(line)) is not None]
    return found, parser


@st.composite
def streams(draw: st.DrawFn) -> tuple[str, list[Message]]:
    """A stream text and the messages it must read back as."""
    end = draw(TERMINATOR)
    text, expected, last_id = "", [], ""
    for _ in range(draw(st.integers(0, 5))):
        event = draw(st.none() | NAME)
        data_lines = draw(st.lists(VALUE, min_size=1, max_size=3))
        given_id = draw(st.none() | VALUE)
        fields: list[str] = []
        if event is not None:
            fields.append(f"event:{draw(st.sampled_from(['', ' ']))}{event}")
        # One space after the colon is dropped: a value starting with a space must have it.
        spaces = [
            " " if line.startswith(" ") else draw(st.sampled_from(["", " "])) for line in data_lines
        ]
        fields += [f"data:{space}{line}" for space, line in zip(spaces, data_lines, strict=True)]
        if given_id is not None:
            fields.append(f"id: {given_id}")
        for _ in range(draw(st.integers(0, 2))):  # comments anywhere in the block
            fields.insert(draw(st.integers(0, len(fields))), f":{draw(VALUE)}")
        text += "".join(field + end for field in fields) + end
        last_id = last_id if given_id is None else given_id
        expected.append(Message(event or "message", "\n".join(data_lines), given_id, last_id))
    return text, expected


@given(streams(), st.booleans())
def test_any_stream_reads_back_as_its_messages(
    stream: tuple[str, list[Message]], bom: bool
) -> None:
    """Each blank-line-ended block is one message: event type (default "message"), data lines
    joined by LF, the id given in it, and the stream's last id carried forward."""
    text, expected = stream
    found, _ = parse(("\ufeff" if bom else "") + text)
    assert found == expected


def test_fields_the_standard_ignores_or_interprets() -> None:
    """A block without data dispatches nothing but still sets the last id; `retry` takes only
    digits; unknown fields, a field without colon and an unterminated last block are ignored."""
    found, parser = parse(
        "retry: 2500\n: connected\n\nid: 7\n\nretry: 1e3\nbogus: 1\ndata\n\ndata: tail\n"
    )
    assert found == [Message("message", "", None, "7")]
    assert parser.retry == 2500
    assert parser.last_event_id == "7"


def test_a_nul_in_an_id_voids_the_field() -> None:
    """An id containing NUL is ignored (the standard's rule), the previous one stays."""
    found, _ = parse("id: 1\ndata: a\n\nid: 2\0\ndata: b\n\n")
    assert [message.last_event_id for message in found] == ["1", "1"]
    assert found[1].id is None


def test_event_fields_and_resumption() -> None:
    """A lease event's convenience fields read its data; a drop resumes from the id it names."""
    data = (
        '{"type":"lease.taken_over","at":"2026-12-04T19:00:00+00:00","lease":"close-day",'
        '"holder":"b","generation":8,"previous_holder":"a","previous_generation":7}'
    )
    event = StreamEvent.of(Message("lease.taken_over", data, "42", "42"))
    assert (event.name, event.holder, event.generation, event.window) == ("close-day", "b", 8, None)
    assert event.at is not None
    assert event.at.utcoffset() is not None
    assert not event.control
    assert resume_point(event, "41") == "42"
    window = StreamEvent.of(Message("window.claimed", '{"job":"j","window":"w"}', "43", "43"))
    assert (window.name, window.window) == ("j", "w")
    dropped = '{"type":"stream.dropped","last_event_id":"40"}'
    drop = StreamEvent.of(Message(DROPPED, dropped, None, "42"))
    assert drop.control
    assert resume_point(drop, "42") == "40"


@pytest.mark.parametrize("data", ["[1]", "not json", '"text"'])
def test_data_that_is_no_json_object_is_an_unexpected_response(data: str) -> None:
    """The service always sends a JSON object; anything else is a broken answer."""
    with pytest.raises(UnexpectedResponse):
        StreamEvent.of(Message("lease.acquired", data, "1", "1"))


@pytest.mark.parametrize("content_type", ["text/event-stream", "Text/Event-Stream; charset=utf-8"])
def test_an_event_stream_is_accepted(content_type: str) -> None:
    """The media type is compared without parameters and case."""
    check_media_type(content_type)


@pytest.mark.parametrize("content_type", ["", "text/html", "application/json"])
def test_anything_else_is_an_unexpected_response(content_type: str) -> None:
    """An answer that is no event stream (a proxy's page) is refused, as EventSource does."""
    with pytest.raises(UnexpectedResponse):
        check_media_type(content_type)
