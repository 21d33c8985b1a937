"""The checks compiled from the hot write serializers (docs/performance.md): for any body, either they
refer it to DRF (None) or they give exactly DRF's validated data, and DRF's refusals are always referred;
bodies a client really sends take the compiled path."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkpoints.api.compiled_validation import compiled
from checkpoints.api.serializers.checkpoints import (
    CheckpointCreateSerializer,
    CheckpointStateSerializer,
    CheckpointTtlSerializer,
    PendingWritesCreateSerializer,
)
from checkpoints.api.serializers.langgraph import LangGraphCheckpointSaveSerializer
from tests.conftest import ApiClient

CHECKSUM = "ab" * 32
SAVE = {
    "checkpoint_id": "c-1",
    "namespace": "",
    "agent_id": "agent",
    "framework": "langgraph",
    "schema_version": "1",
    "step_index": 3,
    "step_name": "plan",
    "run_id": None,
    "state": {"messages": [{"role": "user", "content": "hi"}]},
    "context": {"k": [1, 2]},
    "metadata": {"source": "loop"},
    "ttl_seconds": 60,
    "pinned": False,
    "checksum": CHECKSUM,
    "created_at": "2026-11-26T10:00:00.123456Z",
}
LANGGRAPH_SAVE = {**SAVE, "parent_id": "c-0", "inherit": {"checkpoint_id": "c-0", "channels": {"a": "1.0"}}}
WRITES = {
    "task_id": "task",
    "task_path": "~__pregel_pull, work",
    "writes": [
        {"channel": "messages", "value": [{"content": "x"}], "idx": 0},
        {"channel": "step", "value": 5, "type": "json", "idx": 1},
        {"channel": "branch:to:work", "value": None, "idx": -1},
    ],
}
BODIES: list[tuple[type[Any], dict[str, Any]]] = [
    (CheckpointCreateSerializer, {**SAVE, "parent_id": "c-0"}),
    (CheckpointStateSerializer, SAVE),
    (LangGraphCheckpointSaveSerializer, LANGGRAPH_SAVE),
    (PendingWritesCreateSerializer, WRITES),
]

# Values that trip one rule or another of some field.
ODD_VALUES = st.sampled_from(
    [
        None,
        "",
        " ",
        " agent",
        "agent ",
        "a\x00b",
        "\ud800",
        "é",
        "x" * 256,
        "x" * 129,
        "has space",
        "AB" * 32,
        "ab" * 31,
        "2026-11-26T10:00:00",
        "2026-11-26T10:00:00+02:00",
        "not a time",
        "langgraph",
        "custom",
        "json",
        0,
        -1,
        2**31,
        2**63,
        -(2**63),
        1.5,
        True,
        False,
        [],
        ["a"],
        {},
        {"a": 1},
        {"a": True},
    ]
)


def _drf(serializer_class: type[Any], body: Any) -> dict[str, Any] | None:
    serializer = serializer_class(data=body)
    return dict(serializer.validated_data) if serializer.is_valid() else None


def _agrees(serializer_class: type[Any], body: Any) -> None:
    fast = compiled(serializer_class)(copy.deepcopy(body))
    expected = _drf(serializer_class, copy.deepcopy(body))
    if expected is None:
        assert fast is None, f"DRF refuses {body!r}, the compiled check accepted it as {fast!r}"
    elif fast is not None:
        assert fast == expected
        assert list(fast) == list(expected)  # the same keys in the same order


@pytest.mark.parametrize(
    ("serializer_class", "body"), BODIES, ids=lambda value: getattr(value, "__name__", "")
)
def test_a_clients_body_takes_the_compiled_path_with_drfs_result(
    serializer_class: type[Any], body: Any
) -> None:
    fast = compiled(serializer_class)(copy.deepcopy(body))
    assert fast is not None
    assert fast == _drf(serializer_class, copy.deepcopy(body))


def test_serializers_that_do_not_ask_for_it_always_go_to_drf() -> None:
    assert compiled(CheckpointTtlSerializer)({"ttl_seconds": 5}) is None


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_for_any_change_to_a_body_it_refers_or_agrees_with_drf(data: st.DataObject) -> None:
    serializer_class, valid = data.draw(st.sampled_from(BODIES))
    body = copy.deepcopy(valid)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        # The body itself, or an object nested in it (a write, the inherit object).
        nested = (
            [item for item in body.get("writes", []) if isinstance(item, dict)]
            if isinstance(body.get("writes"), list)
            else []
        )
        if isinstance(body.get("inherit"), dict):
            nested.append(body["inherit"])
        target = data.draw(st.sampled_from([body, *nested]))
        key = data.draw(st.sampled_from([*target, "unknown", "checksum", "created_at", "writes", "idx"]))
        action = data.draw(st.sampled_from(["set", "drop"]))
        if action == "drop":
            target.pop(key, None)
        else:
            target[key] = data.draw(ODD_VALUES)
    _agrees(serializer_class, body)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(BODIES), st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.none())))
def test_a_body_that_is_not_an_object_is_referred(case: tuple[type[Any], Any], body: Any) -> None:
    serializer_class, _valid = case
    assert compiled(serializer_class)(body) is None


def test_the_writes_list_limits_are_drfs() -> None:
    empty = {**WRITES, "writes": []}
    too_many = {**WRITES, "writes": [{"channel": "c", "value": 1, "idx": n} for n in range(1001)]}
    for body in (empty, too_many):
        assert compiled(PendingWritesCreateSerializer)(body) is None
        assert _drf(PendingWritesCreateSerializer, body) is None


PART = "compiled_validation"  # checkpoints.parts: the API test below runs with it on and off


@pytest.mark.django_db
@pytest.mark.usefixtures("part_on_and_off")
def test_a_save_answers_the_same_with_the_compiled_check_on_and_off(api: ApiClient) -> None:
    body = {key: value for key, value in SAVE.items() if key not in ("checksum", "created_at")}
    saved = api.post("/api/v1/threads/t-compiled/checkpoints/", body)
    assert saved.status_code == 201, saved.content
    answer = saved.json()
    shown = ("checkpoint_id", "framework", "step_index", "step_name", "pinned")
    assert {key: answer[key] for key in shown} == {
        "checkpoint_id": "c-1",
        "framework": "langgraph",
        "step_index": 3,
        "step_name": "plan",
        "pinned": False,
    }
    assert answer["state"] == SAVE["state"] and answer["metadata"] == SAVE["metadata"]
    refused = api.post(
        "/api/v1/threads/t-compiled/checkpoints/", {"agent_id": " a", "state": {}, "pinned": 1}
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["details"]["fields"] == {
        "agent_id": ["Leading or trailing whitespace is not allowed."],
        "pinned": ["Must be a valid boolean."],
    }
