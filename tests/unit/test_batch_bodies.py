"""The lane's cheaper decoders of the batch bodies accept only what the routes' pydantic models
accept, with the same values; whatever else they leave to the model, and so to FastAPI."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from tenure import MAX_GENERATION
from tenure_server.api.batch_bodies import decode_renew_many, decode_verify_many
from tenure_server.api.schemas import RenewManyRequest, VerifyManyRequest
from tenure_server.domain.errors import TenureError
from tenure_server.domain.names import NAME_PATTERN
from tests.hardening.strategies import names, text
from tests.unit.test_express import body, hand_over, post

EXAMPLES = settings(max_examples=400, deadline=None)
T = TypeVar("T")

# JSON texts for a value: mostly what the field wants, else near misses of its type and bounds.
_GENERATIONS = [str(MAX_GENERATION + 1), "0", "-1", "1.0", "1e0"]
_NUMBERS = ["0", "-0.0", "1e-400", "1.7976931348623159e308", "1e999", "1E2", "2.50"]
_OTHERS = ["true", "null", '"1"', "[]", "{}", "99999999999999999999999"]
_NAMES = st.from_regex(NAME_PATTERN, fullmatch=True)


def mostly(good: st.SearchStrategy[T], odd: st.SearchStrategy[T]) -> st.SearchStrategy[T]:
    """`good` seven times in eight."""
    return st.integers(0, 7).flatmap(lambda draw: odd if draw == 0 else good)


generations = mostly(
    st.integers(1, MAX_GENERATION).map(str), st.sampled_from(_GENERATIONS + _OTHERS)
)
numbers = mostly(
    st.floats(min_value=0, exclude_min=True, allow_infinity=False).map(repr),
    st.sampled_from(_NUMBERS + _OTHERS),
)
# Names and holders as JSON strings, some written with escapes (\n, \u002d, lone surrogates).
strings = mostly(
    _NAMES.map(json.dumps),
    st.one_of(
        names.map(json.dumps),
        names.map(lambda name: json.dumps(name, ensure_ascii=False)),
        st.sampled_from(['"a\\nb"', '"a\\n"', '"\\u0061b"', '"\\ud800"', '"a\\u002d"', '"-a"']),
        st.sampled_from(_OTHERS),
    ),
)


def obj(members: list[tuple[str, str]]) -> str:
    """A JSON object from (key, value text) pairs: keys may repeat, as JSON allows."""
    return "{" + ",".join(f"{json.dumps(key)}:{value}" for key, value in members) + "}"


def members(fields: dict[str, st.SearchStrategy[str]]) -> st.SearchStrategy[list[Any]]:
    """Each field, usually once; sometimes missing, repeated or joined by an unknown one."""
    pairs = [st.tuples(st.just(key), values) for key, values in fields.items()]
    odd = st.lists(st.one_of(*pairs, st.tuples(text, strings)), max_size=len(fields) + 2)
    return mostly(st.tuples(*pairs).map(list), odd)


fence_refs = members({"resource": strings, "lease": strings, "generation": generations})
holding_refs = members({"name": strings, "generation": generations})


def batch(items: st.SearchStrategy[list[Any]]) -> st.SearchStrategy[str]:
    found = mostly(st.lists(items.map(obj), min_size=1, max_size=4), st.just([]))
    return found.map(lambda listed: "[" + ",".join(listed) + "]")


verify_bodies = members({"fences": batch(fence_refs)}).map(obj)
renew_bodies = members({"holder": strings, "ttl_seconds": numbers, "leases": batch(holding_refs)})


def as_values(decoded: Any) -> Any:
    """A decoded body as plain values with their types, whichever decoder built it."""
    if isinstance(decoded, list):
        return [as_values(item) for item in decoded]
    if hasattr(decoded, "__struct_fields__"):
        fields = decoded.__struct_fields__
    elif isinstance(decoded, BaseModel):
        fields = tuple(type(decoded).model_fields)
    else:
        return (type(decoded), decoded)
    return {field: as_values(getattr(decoded, field)) for field in fields}


def holds_to_model(model: type[BaseModel], decode: Callable[[bytes], Any], text: str) -> None:
    fast = decode(text.encode())
    try:
        validated: BaseModel | None = model.model_validate_json(text)
    except (ValidationError, TenureError):
        validated = None
    if fast is not None:
        assert validated is not None, f"the model refuses what the fast decoder took: {text}"
        assert as_values(fast) == as_values(validated)


@EXAMPLES
@given(verify_bodies)
@example('{"fences": [{"resource": "a\\nb", "lease": "a", "generation": 1}]}')
@example('{"fences": [{"resource": "a", "lease": "-a", "generation": 1}], "fences": []}')
def test_batch_verify_bodies_decode_as_the_model_decodes_them(text: str) -> None:
    holds_to_model(VerifyManyRequest, decode_verify_many, text)


# A batch renew with the holder given as JSON text.
RENEW = '{"holder": %s, "ttl_seconds": 30, "leases": [{"name": "a", "generation": 1}]}'


@EXAMPLES
@given(renew_bodies.map(obj))
@example(RENEW.replace("30", "1e999") % '"a"')
@example(RENEW % '"a\\u0000"')
@example(RENEW % json.dumps("😀" * 200, ensure_ascii=False))  # 200 characters, 800 bytes
@example(RENEW % json.dumps("😀" * 201, ensure_ascii=False))
def test_batch_renew_bodies_decode_as_the_model_decodes_them(text: str) -> None:
    holds_to_model(RenewManyRequest, decode_renew_many, text)


GOOD_FENCES = '{"fences": [{"resource": "r-1", "lease": "job", "generation": 3}]}'
GOOD_LEASES = '{"holder": "w 1", "ttl_seconds": 2.5, "leases": [{"name": "job", "generation": 3}]}'


def test_the_usual_bodies_take_the_cheaper_decoder() -> None:
    """Else the lane would validate every batch twice."""
    fences = decode_verify_many(GOOD_FENCES.encode())
    assert fences is not None
    assert [(f.resource, f.lease, f.generation) for f in fences.fences] == [("r-1", "job", 3)]
    leases = decode_renew_many(GOOD_LEASES.encode())
    assert leases is not None
    assert (leases.holder, leases.ttl_seconds) == ("w 1", 2.5)
    assert [(h.name, h.generation) for h in leases.leases] == [("job", 3)]


@pytest.mark.parametrize(
    ("path", "payload"),
    [
        ("/v1/fences/verify", GOOD_FENCES.replace('"r-1"', '"r\\n1"')),
        ("/v1/fences/verify", GOOD_FENCES.replace('"job"', '".job"')),
        ("/v1/fences/verify", GOOD_FENCES.replace("3}", "0}")),
        ("/v1/leases/renew", GOOD_LEASES.replace('"w 1"', '"w\\u00001"')),
        ("/v1/leases/renew", GOOD_LEASES.replace("2.5", "1e999")),
        ("/v1/leases/renew", GOOD_LEASES.replace('"job"', '"' + "j" * 201 + '"')),
    ],
    ids=[
        "newline-in-name",
        "leading-dot",
        "generation-0",
        "unprintable-holder",
        "infinite",
        "long",
    ],
)
async def test_a_batch_both_decoders_refuse_is_replayed_to_fastapi(path: str, payload: str) -> None:
    downstream = await hand_over(post(path), body(payload.encode()))
    assert downstream.received == body(payload.encode())
