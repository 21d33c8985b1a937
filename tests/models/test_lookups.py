"""The JSON lookups give the same answers on SQLite and PostgreSQL: every query here is checked against one
reference implementation of jsonb containment, on whichever database the suite runs."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from django.db import DataError, connection, transaction

from checkpoints.exceptions import ValidationFailed
from checkpoints.integrity import canonical_json
from checkpoints.models import Checkpoint, Thread, Workspace

pytestmark = pytest.mark.django_db

DOCUMENTS: dict[str, Any] = {
    "int": {"n": 1},
    "float": {"n": 1.0},
    "float_half": {"n": 1.5},
    "bool": {"n": True},
    "false": {"n": False},
    "zero": {"n": 0},
    "null": {"n": None},
    "string_number": {"n": "1"},
    "missing": {"other": 1},
    "nested": {"a": {"b": {"c": [1, 2, {"d": "e"}]}, "f": "g"}},
    "array": {"tags": ["x", "y", "x"], "n": 2},
    "array_of_objects": {"items": [{"id": 1, "ok": True}, {"id": 2, "ok": False}]},
    "nested_arrays": {"m": [[1, 2], [3]]},
    "array_scalar": {"tags": "x"},
    "big_int": {"big": 2**80},
    "big_int_plus_one": {"big": 2**80 + 1},
    "big_float": {"big": 1e30},
    "neg_zero": {"z": -0.0},
    "tiny": {"t": 1e-7},
    "weird_keys": {'a"b': 1, "x.y": 2, "[0]": 3, "é": 4, "": 5, "\\": 6, "$": 7},
    "unicode": {"s": "決定", "e": "🧗"},
    "empty": {},
    "empty_containers": {"o": {}, "l": []},
    "deep": {"l1": {"l2": {"l3": {"l4": {"l5": 1}}}}},
}

QUERIES: list[Any] = [
    {"n": 1},
    {"n": 1.0},
    {"n": 1.5},
    {"n": True},
    {"n": False},
    {"n": 0},
    {"n": None},
    {"n": "1"},
    {},
    {"a": {}},
    {"a": {"b": {"c": [2]}}},
    {"a": {"b": {"c": [{"d": "e"}, 1]}}},
    {"a": {"b": {"c": [{"d": "x"}]}}},
    {"a": {"f": "g"}},
    {"tags": ["x"]},
    {"tags": ["x", "x", "y"]},
    {"tags": ["z"]},
    {"tags": []},
    {"tags": "x"},
    {"items": [{"ok": False}]},
    {"items": [{"id": 1, "ok": False}]},
    {"m": [[2]]},
    {"m": [2]},
    {"m": [[1, 3]]},
    {"big": 2**80},
    {"big": 2**80 + 1},
    {"big": 10**30},
    {"big": 1e30},
    {"z": 0},
    {"z": -0.0},
    {"t": 1e-7},
    {'a"b': 1},
    {"x.y": 2},
    {"[0]": 3},
    {"é": 4},
    {"": 5},
    {"\\": 6},
    {"$": 7},
    {"s": "決定"},
    {"e": "🧗"},
    {"o": {}},
    {"l": []},
    {"o": []},
    {"deep": {}},
    {"l1": {"l2": {"l3": {"l4": {"l5": 1}}}}},
    {"l1": {"l2": {"l3": {"l4": {"l5": 2}}}}},
    {"n": 1, "other": 1},
]


def _number(value: Any) -> Decimal:
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def jsonb_contains(document: Any, wanted: Any) -> bool:
    """PostgreSQL's `document @> wanted` below the top level (where both sides are objects here)."""
    if isinstance(wanted, dict):
        return isinstance(document, dict) and all(
            key in document and jsonb_contains(document[key], item) for key, item in wanted.items()
        )
    if isinstance(wanted, list):
        return isinstance(document, list) and all(any(jsonb_contains(d, w) for d in document) for w in wanted)
    if wanted is None or isinstance(wanted, bool):
        return document is wanted
    if isinstance(wanted, int | float):
        is_number = isinstance(document, int | float) and not isinstance(document, bool)
        return is_number and _number(document) == _number(wanted)
    return isinstance(document, str) and document == wanted


@pytest.fixture
def stored(workspace: Workspace) -> None:
    thread = Thread.objects.create(workspace=workspace, thread_id="t")
    Checkpoint.objects.bulk_create(
        Checkpoint(
            workspace=workspace,
            thread=thread,
            checkpoint_id=name,
            agent_id="a",
            state="{}",
            context="{}",
            metadata=canonical_json(document),
            checksum="0" * 64,
        )
        for name, document in DOCUMENTS.items()
    )
    # A tombstone has no metadata: it matches nothing, not even {}.
    Checkpoint.objects.create(
        workspace=workspace,
        thread=thread,
        checkpoint_id="tombstone",
        agent_id="a",
        metadata=None,
        checksum="0" * 64,
    )


@pytest.mark.parametrize("wanted", QUERIES, ids=[json.dumps(q, ensure_ascii=False) for q in QUERIES])
def test_it_matches_jsonb_containment(stored: None, wanted: Any) -> None:
    found = set(
        Checkpoint.objects.filter(metadata__json_contains=wanted).values_list("checkpoint_id", flat=True)
    )
    expected = {name for name, document in DOCUMENTS.items() if jsonb_contains(document, wanted)}
    assert found == expected


def test_it_treats_1_and_1_0_alike_and_true_apart(stored: None) -> None:
    found = set(
        Checkpoint.objects.filter(metadata__json_contains={"n": 1}).values_list("checkpoint_id", flat=True)
    )
    assert found == {"int", "float"}


def test_it_never_fails_on_metadata_text_that_is_not_json(stored: None) -> None:
    if connection.vendor == "postgresql":
        # The jsonb expression index refuses such text at write time: it can never be stored.
        with pytest.raises(DataError), transaction.atomic():
            Checkpoint.objects.filter(checkpoint_id="int").update(metadata="not json {")
        return
    Checkpoint.objects.filter(checkpoint_id="int").update(metadata="not json {")
    found = set(Checkpoint.objects.filter(metadata__json_contains={}).values_list("checkpoint_id", flat=True))
    assert "int" not in found and "float" in found


@pytest.mark.parametrize("wanted", [{"a": "\x00"}, {"\x00": 1}, {"a": [{"b": "x\x00"}]}, {"a": object()}])
def test_it_refuses_what_postgresql_could_not_compare(stored: None, wanted: Any) -> None:
    with pytest.raises(ValidationFailed):
        Checkpoint.objects.filter(metadata__json_contains=wanted)


TAGS: dict[str, list[str]] = {
    "none": [],
    "a": ["a"],
    "ab": ["a", "b"],
    "bc": ["b", "c"],
    "abc": ["a", "b", "c"],
}


@pytest.fixture
def tagged(workspace: Workspace) -> None:
    for name, tags in TAGS.items():
        Thread.objects.create(workspace=workspace, thread_id=name, tags=tags)


@pytest.mark.parametrize(
    ("wanted", "any_of", "all_of"),
    [
        (["a"], {"a", "ab", "abc"}, {"a", "ab", "abc"}),
        (["a", "c"], {"a", "ab", "bc", "abc"}, {"abc"}),
        (["a", "a"], {"a", "ab", "abc"}, {"a", "ab", "abc"}),
        (["z"], set(), set()),
        ([], set(), set(TAGS)),
        (("b",), {"ab", "bc", "abc"}, {"ab", "bc", "abc"}),
    ],
)
def test_it_matches_list_elements(tagged: None, wanted: Any, any_of: set[str], all_of: set[str]) -> None:
    threads = Thread.objects.all()
    assert set(threads.filter(tags__has_any_element=wanted).values_list("thread_id", flat=True)) == any_of
    assert set(threads.filter(tags__has_all_elements=wanted).values_list("thread_id", flat=True)) == all_of


@pytest.mark.parametrize("wanted", ["a", [1], [None], {"a": 1}])
def test_it_refuses_list_lookups_without_a_list_of_strings(tagged: None, wanted: Any) -> None:
    with pytest.raises(ValidationFailed):
        Thread.objects.filter(tags__has_any_element=wanted)
    with pytest.raises(ValidationFailed):
        Thread.objects.filter(tags__has_all_elements=wanted)
