"""Agents as first-class: the handoffs view (from → to, when, which checkpoint, taken or pending)
and the agent column and filter of the thread list."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.models import Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_handoff
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

# session + user + workspace, then one page query.
HANDOFF_QUERIES = 4
THREAD_LIST_QUERIES = 4


def _handoffs(dash: Client, workspace: Workspace, **query: str) -> list[tuple[str, str, str]]:
    """(from, to, status) of each row, in page order."""
    html = dash.get(reverse("dashboard:handoffs", args=[workspace.slug]), query).content.decode()
    return re.findall(
        r'class="agent"[^>]*>([^<]+)</a> → <a class="agent"[^>]*>([^<]+)</a>'
        r'.*?data-status="(\w+)"',
        html,
        re.S,
    )


def _hand(workspace: Workspace, thread_id: str, source_agent: str, target: str) -> Any:
    source = make_checkpoint(workspace, thread_id, agent_id=source_agent)
    return checkpoint_handoff(source=source, target_agent_id=target, actor=Actor.system("test"))


def test_it_lists_handoffs_with_who_when_which_checkpoint_and_status(dash: Client, world: World) -> None:
    url = reverse("dashboard:handoffs", args=[world.workspace.slug])
    html = dash.get(url).content.decode()
    # The reviewer continued from the world's handoff (its next checkpoint has the handoff as parent).
    assert _handoffs(dash, world.workspace) == [("planner", "reviewer", "taken")]
    assert (
        world.handoff.checkpoint_id in html and world.step2.checkpoint_id in html
    )  # the handoff, its source
    assert world.handoff.created_at.strftime("%Y-%m-%d %H:%M:%S") in html
    assert "by reviewer in <a href" in html and world.tombstone.checkpoint_id in html
    fresh = _hand(world.workspace, "fresh", "writer", "editor")
    html = dash.get(url).content.decode()
    assert _handoffs(dash, world.workspace)[0] == ("writer", "editor", "pending")
    assert "in the inbox of editor" in html
    reply = make_checkpoint(world.workspace, "fresh", agent_id="editor", parent_id=fresh.checkpoint_id)
    assert _handoffs(dash, world.workspace)[0] == ("writer", "editor", "taken")
    assert reply.checkpoint_id in dash.get(url).content.decode()


def test_it_finds_a_handoff_by_agent_direction_status_and_thread(dash: Client, workspace: Workspace) -> None:
    _hand(workspace, "a", "planner", "coder")
    coder = _hand(workspace, "b", "coder", "tester")
    _hand(workspace, "c", "tester", "planner")
    make_checkpoint(workspace, "b", agent_id="tester", parent_id=coder.checkpoint_id)
    ws = workspace
    assert _handoffs(dash, ws, agent="coder") == [
        ("coder", "tester", "taken"),
        ("planner", "coder", "pending"),
    ]
    assert _handoffs(dash, ws, from_agent="tester") == [("tester", "planner", "pending")]
    assert _handoffs(dash, ws, to_agent="coder") == [("planner", "coder", "pending")]
    assert _handoffs(dash, ws, status="taken") == [("coder", "tester", "taken")]
    assert [h[0] for h in _handoffs(dash, ws, status="pending")] == ["tester", "planner"]
    assert _handoffs(dash, ws, thread="c") == [("tester", "planner", "pending")]
    assert _handoffs(dash, ws, agent="nobody") == []


def test_it_refuses_bad_handoff_filters_on_the_form(dash: Client, workspace: Workspace) -> None:
    response = dash.get(
        reverse("dashboard:handoffs", args=[workspace.slug]), {"status": "lost", "agent": "a\x00"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and "Select a valid choice" in html and "Null characters" in html


def test_it_pins_the_handoff_query_count(
    dash: Client, workspace: Workspace, django_assert_num_queries: Callable[..., Any]
) -> None:
    for n in range(55):
        _hand(workspace, f"t-{n}", f"agent-{n}", "reviewer")
    with django_assert_num_queries(HANDOFF_QUERIES):
        html = dash.get(reverse("dashboard:handoffs", args=[workspace.slug])).content.decode()
    assert html.count('data-status="pending"') == 50 and 'rel="next"' in html


def test_the_thread_list_shows_and_filters_by_agent(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    url = reverse("dashboard:threads", args=[world.workspace.slug])
    make_checkpoint(world.workspace, "other", agent_id="lonely")
    with django_assert_num_queries(THREAD_LIST_QUERIES):
        html = dash.get(url, {"agent": "reviewer"}).content.decode()
    rows = re.findall(r'<td class="agent"><a href="\?agent=([^"]+)"', html)
    assert rows == ["reviewer"]  # run-1 (its root head is the reviewer's pinned checkpoint); not the fork
    assert re.findall(r'<td class="agent"><a href="\?agent=([^"]+)"', dash.get(url).content.decode()) == [
        "lonely", "planner", "reviewer"
    ]  # fmt: skip
    assert re.findall(
        r"/threads/([^/]+)/\"><code class=\"sid\"", dash.get(url, {"agent": "lonely"}).content.decode()
    ) == ["other"]
