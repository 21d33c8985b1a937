"""Diff: an RFC 6902 JSON Patch that turns the `against` document ({state, context, metadata}) into this
checkpoint's, against the parent by default, any checkpoint, or one in another thread."""

from __future__ import annotations

import json
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkpoints.models import Workspace
from checkpoints.services.checkpoint_reads import checkpoint_diff, checkpoint_get
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

CPS = "/api/v1/threads/t1/checkpoints/"


def _document(api: ApiClient, thread: str, checkpoint_id: str) -> dict[str, Any]:
    body = api.get(f"/api/v1/threads/{thread}/checkpoints/{checkpoint_id}/").json()
    return {name: body[name] for name in ("state", "context", "metadata")}


def _strict(value: Any) -> str:
    """Type-strict equality key (1, 1.0 and true differ). -0.0 and 0.0 are one JSON number, as in RFC 6902."""

    def normal(item: Any) -> Any:
        if isinstance(item, float):
            return item + 0.0
        if isinstance(item, list):
            return [normal(i) for i in item]
        if isinstance(item, dict):
            return {k: normal(v) for k, v in item.items()}
        return item

    return json.dumps(normal(value), sort_keys=True)


def _assert_patch_applies(
    api: ApiClient, diff: dict[str, Any], source: dict[str, Any], target: dict[str, Any]
) -> None:
    patched = jsonpatch.apply_patch(source, diff["patch"])
    assert _strict(patched) == _strict(target)


PAIRS: list[tuple[Any, Any]] = [
    ({"n": 1}, {"n": 2}),
    ({"n": 1}, {"n": True}),
    ({"n": 1}, {"n": 1.0}),
    ({"n": 0}, {"n": False}),
    ({"l": [1, 2, 3]}, {"l": [3, 1]}),
    ({"l": [1, True]}, {"l": [True, 1]}),
    ({"a": {"b": {"c": [1, {"d": None}]}}}, {"a": {"b": {"c": [1, {"d": 0}], "e": []}}}),
    ({"k/with~specials": 1}, {"k/with~specials": 2, "~0": "x"}),
    ({"s": "決定"}, {"s": "🧗", "big": 2**80}),
    ([1, 2], {"now": "an object"}),
    ({}, {"added": {"deep": [[], {}]}}),
]


@pytest.mark.parametrize(("before", "after"), PAIRS)
def test_it_diffs_against_the_parent_by_default(
    api: ApiClient, workspace: Workspace, before: Any, after: Any
) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="p", state=before, metadata={"v": 1})
    make_checkpoint(workspace, "t1", checkpoint_id="c", state=after, context={"ctx": True}, metadata={"v": 2})

    response = api.get(f"{CPS}c/diff/")

    assert response.status_code == 200
    diff = response.json()
    assert (diff["checkpoint_id"], diff["against"], diff["against_thread_id"]) == ("c", "p", "t1")
    _assert_patch_applies(api, diff, _document(api, "t1", "p"), _document(api, "t1", "c"))


def test_it_diffs_a_root_against_an_empty_document(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="root", state={"n": 1})
    diff = api.get(f"{CPS}root/diff/").json()
    assert diff["against"] is None and diff["against_thread_id"] is None
    assert sorted(op["path"] for op in diff["patch"]) == ["/context", "/metadata", "/state"]
    _assert_patch_applies(api, diff, {}, _document(api, "t1", "root"))


def test_it_diffs_against_any_checkpoint_of_the_thread(api: ApiClient, workspace: Workspace) -> None:
    for n in range(4):
        make_checkpoint(workspace, "t1", checkpoint_id=f"c{n}", state={"n": n, "log": list(range(n))})
    diff = api.get(f"{CPS}c1/diff/", {"against": "c3"}).json()
    assert diff["against"] == "c3"
    _assert_patch_applies(api, diff, _document(api, "t1", "c3"), _document(api, "t1", "c1"))
    same = api.get(f"{CPS}c2/diff/", {"against": "c2"}).json()
    assert same["patch"] == []


def test_it_diffs_across_threads_and_namespaces(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="mine", state={"plan": ["a", "b"]})
    make_checkpoint(workspace, "t2", checkpoint_id="theirs", namespace="sub", state={"plan": ["a"]})
    diff = api.get(
        f"{CPS}mine/diff/", {"against": "theirs", "against_thread_id": "t2", "against_namespace": "sub"}
    ).json()
    assert diff["against_thread_id"] == "t2"
    _assert_patch_applies(api, diff, _document(api, "t2", "theirs"), _document(api, "t1", "mine"))
    missing_namespace = api.get(f"{CPS}mine/diff/", {"against": "theirs", "against_thread_id": "t2"})
    # Without against_namespace the id is looked up in this checkpoint's namespace ("" here): not there.
    assert missing_namespace.status_code == 404


def test_it_lists_the_record_fields_that_changed_with_before_and_after(
    api: ApiClient, workspace: Workspace
) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="plan", agent_id="planner", step_index=1, step_name="plan")
    make_checkpoint(workspace, "t1", checkpoint_id="code", agent_id="coder", step_index=2, step_name="plan")

    diff = api.get(f"{CPS}code/diff/").json()

    assert diff["changed_fields"] == [
        {"field": "agent_id", "before": "planner", "after": "coder"},
        {"field": "step_index", "before": 1, "after": 2},
        {"field": "parent_id", "before": None, "after": "plan"},
    ]
    unchanged = api.get(f"{CPS}code/diff/", {"against": "code"}).json()
    assert unchanged["changed_fields"] == [] and unchanged["patch"] == []


def test_a_root_lists_every_field_it_has_as_added(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="root", agent_id="a", step_index=0, namespace="sub")
    diff = api.get(f"{CPS}root/diff/", {"namespace": "sub"}).json()
    assert {change["field"]: (change["before"], change["after"]) for change in diff["changed_fields"]} == {
        "agent_id": (None, "a"),
        "step_index": (None, 0),
        "namespace": (None, "sub"),
    }


def test_it_answers_404_for_an_unknown_against(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="c")
    response = api.get(f"{CPS}c/diff/", {"against": "nope"})
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "Checkpoint 'nope' not found."


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4)
    ),
    max_leaves=15,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=json_values, after=json_values)
def test_it_produces_a_patch_that_rebuilds_the_target_for_any_json(
    workspace: Workspace, before: Any, after: Any
) -> None:
    # state may be any JSON but null, so the generated value is wrapped
    source = make_checkpoint(workspace, "prop", state={"v": before}, parent_id=None)
    target = make_checkpoint(workspace, "prop", state={"v": after}, parent_id=source.checkpoint_id)
    patch = checkpoint_diff(
        checkpoint=checkpoint_get(workspace=workspace, thread_id="prop", checkpoint_id=target.checkpoint_id),
        against=checkpoint_get(workspace=workspace, thread_id="prop", checkpoint_id=source.checkpoint_id),
    )
    source_document = {"state": {"v": before}, "context": {}, "metadata": {}}
    # Through JSON, as a client receives it.
    patched = jsonpatch.apply_patch(source_document, json.loads(json.dumps(patch)))
    assert _strict(patched) == _strict({"state": {"v": after}, "context": {}, "metadata": {}})
