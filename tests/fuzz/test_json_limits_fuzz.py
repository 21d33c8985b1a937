"""Property-based fuzzing of the JSON limits every endpoint shares (`checkpoints.api.parsers`): the walk of
the decoded value and the linear depth scan agree with the real nesting depth however the document is
spelled, any byte string either parses to exactly what `json` reads or is a ValidationFailed (never another
exception), and the body limit is exact."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.test import override_settings
from hypothesis import given, settings
from hypothesis import strategies as st

from checkpoints.api.parsers import StrictJSONParser, json_depth_exceeds, nesting_exceeds, parse_json
from checkpoints.exceptions import PayloadTooLarge, ValidationFailed
from tests.fuzz.strategies import depth, json_values, keys

pytestmark = pytest.mark.one_backend  # pure code: the same on either backend (tests/conftest.py)

# Strings full of what a naive bracket counter trips over.
PIECES = ["[", "]", "{", "}", '"', "\\", ",", ":", "\\u005b", '\\"', "a", "\x00", "é"]
tricky = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)
tricky_keys = st.one_of(keys, tricky)
tricky_values = st.recursive(
    st.one_of(st.none(), st.integers(), tricky),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(tricky_keys, kids, max_size=4)),
    max_leaves=40,
)


def spellings(value: Any) -> list[str]:
    return [
        json.dumps(value),
        json.dumps(value, ensure_ascii=False),
        json.dumps(value, indent=1),
        json.dumps(value, separators=(",", ":")),
    ]


@st.composite
def nested(draw: Any) -> Any:
    """A chain of arrays and objects between 1 and 140 levels deep, with tricky strings on the way."""
    levels = draw(st.integers(min_value=1, max_value=140))
    value: Any = draw(tricky)
    for _ in range(levels):
        if draw(st.booleans()):
            value = [draw(tricky), value] if draw(st.booleans()) else [value]
        else:
            value = {draw(tricky): value, "s": draw(tricky)}
    return value


@given(st.one_of(tricky_values, nested()), st.integers(min_value=0, max_value=140))
def test_the_depth_scan_agrees_with_the_real_depth_however_it_is_spelled(value: Any, limit: int) -> None:
    for text in spellings(value):
        assert json_depth_exceeds(text, limit) is (depth(value) > limit)


@given(st.one_of(tricky_values, nested(), json_values), st.integers(min_value=0, max_value=140))
def test_the_walk_of_the_decoded_value_agrees_with_the_real_depth(value: Any, limit: int) -> None:
    assert nesting_exceeds(value, limit) is (depth(value) > limit)


@given(st.one_of(tricky_values, nested(), json_values))
def test_valid_documents_parse_exactly_as_json_reads_them_or_hit_the_depth_limit(value: Any) -> None:
    for text in spellings(value):
        if depth(value) > 128:
            with pytest.raises(ValidationFailed, match="nests deeper than 128"):
                parse_json(text.encode())
        else:
            assert parse_json(text.encode()) == json.loads(text)


@settings(max_examples=300)
@given(st.one_of(st.binary(max_size=64), st.text(max_size=64).map(str.encode)))
def test_any_bytes_parse_or_are_a_validation_error(raw: bytes) -> None:
    try:
        parsed = parse_json(raw)
    except ValidationFailed:
        return
    assert parsed == json.loads(raw.decode("utf-8"))


@given(json_values, st.data())
def test_a_mutated_document_parses_or_is_a_validation_error(value: Any, data: st.DataObject) -> None:
    text = json.dumps(value)
    position = data.draw(st.integers(min_value=0, max_value=len(text)))
    insert = data.draw(
        st.sampled_from(['"', "\\", "[", "]", "{", "}", ",", ":", "NaN", "\\ud800", "1e999", "\x00"])
    )
    mutated = text[:position] + insert + text[position:]
    try:
        parse_json(mutated.encode("utf-8", "surrogatepass"))
    except ValidationFailed as exc:
        assert exc.status == 400 and exc.code == "validation_error"


@given(json_values, keys)
def test_a_duplicate_key_anywhere_is_refused(value: Any, key: str) -> None:
    encoded = json.dumps(key)
    document = f'{{"outer": [{{{encoded}: 1, "x": {json.dumps(value)}, {encoded}: 2}}]}}'
    with pytest.raises(ValidationFailed, match="Duplicate key"):
        parse_json(document)


@given(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e400"]), json_values)
def test_non_finite_numbers_are_refused_anywhere(number: str, value: Any) -> None:
    with pytest.raises(ValidationFailed):
        parse_json(f'{{"v": {json.dumps(value)}, "n": [{number}]}}')


@given(st.integers(min_value=0xD800, max_value=0xDFFF), st.booleans())
def test_lone_surrogate_escapes_are_refused_and_pairs_accepted(code: int, as_key: bool) -> None:
    escape = f"\\u{code:04x}"
    document = f'{{"{escape}": 1}}' if as_key else f'{{"k": "a{escape}b"}}'
    with pytest.raises(ValidationFailed, match="surrogate"):
        parse_json(document)
    assert parse_json('{"k": "\\ud83d\\ude00"}') == {"k": "\U0001f600"}
    assert parse_json(f'{{"k": "\\\\{escape[1:]}"}}') == {"k": f"\\{escape[1:]}"}  # an escaped backslash


@settings(max_examples=60)
@given(st.integers(min_value=2, max_value=400), st.integers(min_value=0, max_value=800))
def test_the_body_limit_is_exact(limit: int, size: int) -> None:
    body = b'{"s": "' + b"x" * max(0, size - 9) + b'"}'
    parser = StrictJSONParser()
    with override_settings(CAIRN_MAX_BODY_BYTES=limit):
        if len(body) > limit:
            with pytest.raises(PayloadTooLarge):
                parser.parse(io.BytesIO(body))
        else:
            assert parser.parse(io.BytesIO(body)) == {"s": "x" * max(0, size - 9)}
