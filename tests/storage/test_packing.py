"""Packing a document into a skeleton and parts (checkpoints.packing): exact, and shared as it grows."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkpoints.integrity import canonical_json
from checkpoints.packing import (
    MEMBER_MIN,
    PACK_MIN,
    VALUE_MIN,
    assemble,
    digest_of,
    is_packed,
    pack,
    references,
)

pytestmark = pytest.mark.one_backend  # pure code: the same on either backend (tests/conftest.py)


def message(n: int, size: int = 300) -> dict[str, Any]:
    return {"role": "user" if n % 2 else "assistant", "content": f"{n} " + "word " * (size // 5), "n": n}


def packed_text(value: Any) -> tuple[str, dict[bytes, str]]:
    text = canonical_json(value)
    packed = pack(value, text)
    assert packed is not None
    return packed.stored, packed.parts


def test_a_short_document_is_stored_whole() -> None:
    state = {"messages": [message(n, 50) for n in range(5)]}
    text = canonical_json(state)
    assert len(text) < PACK_MIN
    assert pack(state, text) is None


def test_a_large_scalar_document_is_stored_whole() -> None:
    text = canonical_json("x" * 10_000)
    assert pack("x" * 10_000, text) is None


def test_a_packed_document_assembles_to_the_exact_text() -> None:
    state = {"messages": [message(n) for n in range(70)], "plan": {"steps": ["a", "b"]}, "n": 1.5}
    stored, parts = packed_text(state)
    assert is_packed(stored) and not canonical_json(state).startswith("#")
    assert assemble(stored, parts) == canonical_json(state)
    # Every part is keyed by the SHA-256 of its text, and the skeleton is a fraction of the document.
    assert all(digest_of(body) == digest for digest, body in parts.items())
    assert len(stored) < len(canonical_json(state)) / 10


def test_a_growing_list_shares_its_complete_runs() -> None:
    messages = [message(n) for n in range(300)]
    _, before = packed_text({"messages": messages})
    _, after = packed_text({"messages": [*messages, message(300)]})
    new = set(after) - set(before)
    # Only the new element is new: runs [0, 256) and [256, 272), [272, 288), [288, 300) stay as they were.
    assert [json.loads(after[digest]) for digest in new] == [message(300)]


def test_completing_a_run_adds_one_part_holding_it() -> None:
    messages = [message(n) for n in range(31)]
    _, before = packed_text({"messages": messages})
    _, after = packed_text({"messages": [*messages, message(31)]})
    new = [after[digest] for digest in set(after) - set(before)]
    assert [json.loads(f"[{body}]") for body in new] == [[message(n) for n in range(16, 32)]]


def test_a_document_names_a_bounded_number_of_parts_however_long_the_list() -> None:
    stored, _ = packed_text({"messages": [message(n, 200) for n in range(2000)]})
    # 2000 = 7 runs of 256 + 13 of 16 + 0 single elements: 20 references.
    assert len(references(stored)) == 20


def test_small_maps_beside_the_list_stay_in_the_skeleton() -> None:
    # LangGraph's bookkeeping maps change at every step: as parts they would never be shared.
    versions = {f"channel-{n}": f"{n:032}.0.{n}" for n in range(6)}
    state = {"channel_values": {"messages": [message(n) for n in range(20)]}, "channel_versions": versions}
    assert 128 < len(canonical_json(versions)) < MEMBER_MIN
    stored, parts = packed_text(state)
    assert canonical_json(versions) in stored
    assert canonical_json(versions) not in parts.values()
    # A large member is still a part of its own, and every message is one.
    big = {"text": "word " * (MEMBER_MIN // 4)}
    stored, parts = packed_text({**state, "notes": big})
    assert canonical_json(big) in parts.values()
    assert all(canonical_json(message(n)) in parts.values() for n in range(16, 20))


def test_a_small_map_keeps_its_own_text_but_not_the_large_values_inside_it() -> None:
    # LangGraph's input checkpoint: the human message sits in `channel_values.__start__`, a small map.
    handed = {"messages": [message(99)]}
    tags = {"tags": [f"tag-{n:03}" for n in range(20)]}  # a small list of 16 or more elements: no runs
    state = {"channel_values": {"__start__": handed, "messages": [message(n) for n in range(20)]}, **tags}
    assert VALUE_MIN <= len(canonical_json(handed)) < MEMBER_MIN
    assert VALUE_MIN <= len(canonical_json(tags["tags"])) < MEMBER_MIN
    stored, parts = packed_text(state)
    assert canonical_json(message(99)) in parts.values()
    assert '"__start__":{"messages":[]}' in stored.split("\n", 1)[1]
    assert canonical_json(tags["tags"]) in stored
    assert not any(body.startswith('"tag-000"') for body in parts.values())


def test_a_pending_write_shares_its_message_with_the_list_that_later_holds_it() -> None:
    written = [message(20)]
    packed = pack(written, canonical_json(written), least=VALUE_MIN)
    assert packed is not None and list(packed.parts.values()) == [canonical_json(message(20))]
    _, parts = packed_text({"messages": [message(n) for n in range(21)]})
    assert packed.parts.keys() <= parts.keys()
    assert pack("x" * 500, canonical_json("x" * 500), least=VALUE_MIN) is None  # a scalar is stored whole


def test_a_missing_part_is_reported_not_guessed() -> None:
    stored, parts = packed_text({"messages": [message(n) for n in range(40)]})
    first = references(stored)[0][1]
    incomplete = {digest: body for digest, body in parts.items() if digest != first}
    try:
        assemble(stored, incomplete)
    except KeyError:
        return
    raise AssertionError("assembled without a part")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=40) | st.dictionaries(st.text(max_size=8), children, max_size=8)
    ),
    max_leaves=400,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(json_values, min_size=1, max_size=60), st.text(min_size=200, max_size=400))
def test_any_json_packs_to_exactly_its_canonical_text(items: list[Any], filler: str) -> None:
    # Filler makes the document long enough to be packed; the items exercise every JSON shape inside it.
    document = {"items": items, "filler": [filler] * 30, "nested": {"a": items, "b": [items, filler]}}
    text = canonical_json(document)
    packed = pack(document, text)
    assert packed is not None
    assert assemble(packed.stored, packed.parts) == text
