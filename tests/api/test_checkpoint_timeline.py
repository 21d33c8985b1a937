"""Timelines: a thread's (newest first, filters, `before`, cursor pages both ways), the workspace-wide one
(incl. an agent's handoff inbox and dates), and restore by id alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from checkpoints.models import Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoint_reads import checkpoint_get
from checkpoints.services.checkpoints import checkpoint_handoff
from tests.api.errors import assert_not_found
from tests.conftest import ApiClient
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

CPS = "/api/v1/threads/t1/checkpoints/"
T0 = datetime(2026, 2, 1, tzinfo=UTC)


def _ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.content
    return [c["checkpoint_id"] for c in response.json()["results"]]


@pytest.fixture
def timeline(workspace: Workspace) -> None:
    """t1: c0..c5 in the root namespace one minute apart (alternating agents, run ids and metadata), s0..s1
    in "sub"; t2: x0."""
    for n in range(6):
        with time_machine.travel(T0 + timedelta(minutes=n), tick=False):
            make_checkpoint(
                workspace,
                "t1",
                checkpoint_id=f"c{n}",
                agent_id=f"agent-{n % 2}",
                step_name="plan" if n < 3 else "act",
                run_id=f"run-{n // 3}",
                framework="langgraph" if n == 5 else "custom",
                metadata={"n": n, "even": n % 2 == 0, "tags": ["x", f"t{n}"], "nested": {"k": n % 3}},
            )
    with time_machine.travel(T0 + timedelta(minutes=10), tick=False):
        make_checkpoint(workspace, "t1", checkpoint_id="s0", namespace="sub")
        make_checkpoint(workspace, "t1", checkpoint_id="s1", namespace="sub")
        make_checkpoint(workspace, "t2", checkpoint_id="x0", agent_id="agent-0")


def test_it_lists_newest_first_across_namespaces(api: ApiClient, timeline: None) -> None:
    assert _ids(api.get(CPS)) == ["s1", "s0", "c5", "c4", "c3", "c2", "c1", "c0"]


def test_it_lists_one_namespace(api: ApiClient, timeline: None) -> None:
    assert _ids(api.get(CPS, {"namespace": ""})) == ["c5", "c4", "c3", "c2", "c1", "c0"]
    assert _ids(api.get(CPS, {"namespace": "sub"})) == ["s1", "s0"]
    assert _ids(api.get(CPS, {"namespace": "none"})) == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"agent_id": "agent-1"}, ["c5", "c3", "c1"]),
        ({"step_name": "plan"}, ["c2", "c1", "c0"]),
        ({"run_id": "run-1"}, ["c5", "c4", "c3"]),
        ({"framework": "langgraph"}, ["c5"]),
        ({"metadata": '{"even": true}'}, ["c4", "c2", "c0"]),
        ({"metadata": '{"n": 3.0}'}, ["c3"]),
        ({"metadata": '{"tags": ["t2"]}'}, ["c2"]),
        ({"metadata": '{"tags": ["x"], "nested": {"k": 0}}'}, ["c3", "c0"]),
        ({"metadata": "{}"}, ["c5", "c4", "c3", "c2", "c1", "c0"]),
        ({"before": "c3", "namespace": ""}, ["c2", "c1", "c0"]),
        ({"before": "c3", "agent_id": "agent-0"}, ["c2", "c0"]),
        ({"created_after": (T0 + timedelta(minutes=4)).isoformat(), "namespace": ""}, ["c5", "c4"]),
        ({"created_before": (T0 + timedelta(minutes=2)).isoformat()}, ["c1", "c0"]),
    ],
)
def test_it_filters_the_timeline(
    api: ApiClient, timeline: None, query: dict[str, str], expected: list[str]
) -> None:
    assert _ids(api.get(CPS, {"namespace": "", **query})) == expected


def test_it_omits_payloads_unless_asked(api: ApiClient, timeline: None) -> None:
    lean = api.get(CPS, {"limit": 1}).json()["results"][0]
    assert "state" not in lean and "context" not in lean and "metadata" not in lean
    full = api.get(CPS, {"limit": "1", "include_state": "true"}).json()["results"][0]
    assert full["state"] == {"step": 1} and full["context"] == {} and full["metadata"] == {}


def test_it_pages_forwards_and_backwards_with_cursors(api: ApiClient, timeline: None) -> None:
    first = api.get(CPS, {"limit": 3}).json()
    assert [c["checkpoint_id"] for c in first["results"]] == ["s1", "s0", "c5"]
    assert first["previous"] is None
    second = api.get(first["next"]).json()
    assert [c["checkpoint_id"] for c in second["results"]] == ["c4", "c3", "c2"]
    third = api.get(second["next"]).json()
    assert [c["checkpoint_id"] for c in third["results"]] == ["c1", "c0"]
    assert third["next"] is None
    back = api.get(third["previous"]).json()
    assert [c["checkpoint_id"] for c in back["results"]] == ["c4", "c3", "c2"]
    start = api.get(back["previous"]).json()
    assert [c["checkpoint_id"] for c in start["results"]] == ["s1", "s0", "c5"]
    assert start["previous"] is None
    # Links keep the filters they were made with.
    filtered = api.get(CPS, {"limit": "2", "agent_id": "agent-0"}).json()
    assert _ids(api.get(filtered["next"])) == ["c0"]


def test_it_does_not_skip_or_repeat_rows_saved_between_pages(
    api: ApiClient, timeline: None, workspace: Workspace
) -> None:
    first = api.get(CPS, {"limit": 4}).json()
    make_checkpoint(workspace, "t1", checkpoint_id="late")
    rest = api.get(first["next"]).json()
    assert [c["checkpoint_id"] for c in first["results"] + rest["results"]] == [
        "s1", "s0", "c5", "c4", "c3", "c2", "c1", "c0",
    ]  # fmt: skip


def test_it_answers_404_for_the_timeline_of_an_unknown_thread(api: ApiClient) -> None:
    assert_not_found(api.get("/api/v1/threads/nope/checkpoints/"), "Thread 'nope' not found.")


def test_it_refuses_an_ambiguous_before_anchor(api: ApiClient, workspace: Workspace) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="dup")
    make_checkpoint(workspace, "t1", checkpoint_id="dup", namespace="sub")
    response = api.get(CPS, {"before": "dup"})
    assert response.json()["error"]["details"]["fields"] == {"before": ["Ambiguous: give the namespace."]}
    assert api.get(CPS, {"before": "dup", "namespace": "sub"}).status_code == 200


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, ["x0", "s1", "s0", "c5", "c4", "c3", "c2", "c1", "c0"]),
        ({"agent_id": "agent-0"}, ["x0", "c4", "c2", "c0"]),
        ({"agent_id": "agent-1", "namespace": "sub"}, ["s1", "s0"]),
        ({"thread_id": "t2"}, ["x0"]),
        ({"thread_id": "t1", "namespace": "sub"}, ["s1", "s0"]),
        ({"framework": "langgraph"}, ["c5"]),
        ({"created_after": (T0 + timedelta(minutes=5)).isoformat()}, ["x0", "s1", "s0", "c5"]),
        ({"created_before": (T0 + timedelta(minutes=1)).isoformat()}, ["c0"]),
        (
            {
                "created_after": (T0 + timedelta(minutes=1)).isoformat(),
                "created_before": (T0 + timedelta(minutes=3)).isoformat(),
            },
            ["c2", "c1"],
        ),
        ({"metadata": '{"n": 4}'}, ["c4"]),
        ({"thread_id": "nope"}, []),
    ],
)
def test_it_filters_the_workspace_timeline(
    api: ApiClient, timeline: None, query: dict[str, str], expected: list[str]
) -> None:
    assert _ids(api.get("/api/v1/checkpoints/", query)) == expected


def test_it_lists_an_agents_inbox(api: ApiClient, timeline: None, workspace: Workspace) -> None:
    for source in ("c1", "x0"):
        thread = "t1" if source == "c1" else "t2"
        checkpoint = checkpoint_get(workspace=workspace, thread_id=thread, checkpoint_id=source)
        checkpoint_handoff(source=checkpoint, target_agent_id="reviewer", actor=Actor.system())
    inbox = api.get("/api/v1/checkpoints/", {"handoff_target": "reviewer"}).json()["results"]
    assert [(c["thread_id"], c["parent_id"], c["handoff_from"]) for c in inbox] == [
        ("t2", "x0", "agent-0"),
        ("t1", "c1", "agent-1"),
    ]


def test_it_pages_the_workspace_timeline(api: ApiClient, timeline: None) -> None:
    seen: list[str] = []
    url: str | None = "/api/v1/checkpoints/?limit=4"
    while url:
        page = api.get(url).json()
        seen += [c["checkpoint_id"] for c in page["results"]]
        url = page["next"]
    assert seen == ["x0", "s1", "s0", "c5", "c4", "c3", "c2", "c1", "c0"]


def test_it_restores_by_id_alone(api: ApiClient, timeline: None) -> None:
    response = api.get("/api/v1/checkpoints/c3/")
    assert response.status_code == 200
    assert response["X-Checksum-Verified"] == "true"
    assert (response.json()["thread_id"], response.json()["checkpoint_id"]) == ("t1", "c3")
    assert response.json()["metadata"]["n"] == 3


def test_it_answers_ambiguous_id_when_copies_exist_in_several_threads(
    api: ApiClient, workspace: Workspace
) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="copied")
    make_checkpoint(workspace, "t2", checkpoint_id="copied")
    response = api.get("/api/v1/checkpoints/copied/")
    assert response.status_code == 409
    assert response.json()["error"] == {
        "code": "ambiguous_id",
        "message": "Checkpoint 'copied' exists in several places; name the thread and namespace.",
        "details": {
            "candidates": [{"thread_id": "t1", "namespace": ""}, {"thread_id": "t2", "namespace": ""}]
        },
    }
    # Named by thread, each copy restores.
    assert api.get("/api/v1/threads/t2/checkpoints/copied/").status_code == 200


def test_it_answers_ambiguous_id_for_one_id_in_two_namespaces_unless_one_is_named(
    api: ApiClient, workspace: Workspace
) -> None:
    make_checkpoint(workspace, "t1", checkpoint_id="n", namespace="a", state={"ns": "a"})
    make_checkpoint(workspace, "t1", checkpoint_id="n", namespace="b", state={"ns": "b"})
    assert api.get(f"{CPS}n/").json()["error"]["code"] == "ambiguous_id"
    assert api.get(f"{CPS}n/", {"namespace": "b"}).json()["state"] == {"ns": "b"}


def test_it_answers_404_by_id_for_an_unknown_checkpoint(api: ApiClient) -> None:
    response = api.get("/api/v1/checkpoints/nope/")
    assert_not_found(response, "Checkpoint 'nope' not found.")
