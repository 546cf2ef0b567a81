"""Idempotency keys of an occurrence: one per (job, window, parts), never shared by two, in the
one format `run_once`'s context and `tenure run` both use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tenure import idempotency_key

# Valid names and keys over a few letters, "-" (which every name allows) and, in free-form parts,
# the separator and the escape character: the alphabet where collisions would show up at once.
JOBS = st.from_regex(r"[ab][ab.:-]{0,4}", fullmatch=True)
WINDOWS = st.from_regex(r"[ab.:+-]{1,5}", fullmatch=True)
PARTS = st.lists(st.text(alphabet="ab-/%2F", max_size=4), max_size=3)
RUNS = st.tuples(JOBS, WINDOWS, PARTS)


@settings(max_examples=2000, deadline=None)
@given(RUNS, RUNS)
def test_distinct_runs_never_share_a_key(
    first: tuple[str, str, list[str]], second: tuple[str, str, list[str]]
) -> None:
    """Two keys are equal only when job, window and every part are."""
    (job, window, parts), (other_job, other_window, other_parts) = first, second
    same_key = idempotency_key(job, window, *parts) == idempotency_key(
        other_job, other_window, *other_parts
    )
    assert same_key == (first == second)


def test_the_format_joins_with_slashes_and_escapes_free_form_parts() -> None:
    """`job/window/part/…`: names and window keys never hold "/" or "%" and appear as they are;
    in a part "%" is written %25 and "/" %2F. Parts are taken as `str(part)`."""
    key = idempotency_key("close-day", "2026-09-25", "store", 42)
    assert key == "close-day/2026-09-25/store/42"
    assert idempotency_key("close-day", "2026-09-25") != idempotency_key("close", "day-2026-09-25")
    assert idempotency_key("job", "w", "a/b", "100%") == "job/w/a%2Fb/100%25"
    assert idempotency_key("job", "w", "a%2Fb") == "job/w/a%252Fb"


SHARED_CASES = Path(__file__).parents[1] / "shared" / "idempotency_keys.json"


@pytest.mark.parametrize(
    "case", json.loads(SHARED_CASES.read_text(encoding="utf-8"))["cases"], ids=repr
)
def test_the_keys_shared_with_the_node_client(case: dict[str, Any]) -> None:
    """tests/shared/idempotency_keys.json, which the Node.js client's tests read too: both
    clients write these keys byte for byte."""
    assert idempotency_key(case["job"], case["window"], *case["parts"]) == case["key"]
