"""The audit log's agent filter: events naming an agent (handoff from/to, the agent of a checkpoint
expired, re-timed or forked from), through the indexed AuditEventAgent rows; the exports honour it;
another workspace's events never show."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from checkpoints.dashboard import audit_export
from checkpoints.models import AuditEvent, AuditEventAgent, Workspace
from checkpoints.services.audit import Actor, agents_named, audit_record
from checkpoints.services.checkpoints import checkpoint_handoff
from tests.dashboard.world import World, build_world
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

# session + user + workspace + the page of events (the agent filter is a join on an index, not a query)
# + the agents the page's events name (one prefetch for the page, whatever its length).
AUDIT_PAGE_QUERIES = 5


def actions_for(dash: Client, workspace: Workspace, **params: str) -> list[str]:
    response = dash.get(reverse("dashboard:audit", args=[workspace.slug]), params)
    assert response.status_code == 200
    return re.findall(r'<code class="action">([^<]+)</code>', response.content.decode())


def test_it_filters_the_audit_log_by_the_agents_an_event_names(dash: Client, world: World) -> None:
    # reviewer: handed to it, and its checkpoints expired (the tombstone) and pinned.
    assert actions_for(dash, world.workspace, agent="reviewer") == [
        "checkpoint.ttl",
        "checkpoint.expire",
        "checkpoint.handoff",
    ]
    # planner: handed off from it, and the checkpoint the fork started from is its.
    assert actions_for(dash, world.workspace, agent="planner") == ["checkpoint.fork", "checkpoint.handoff"]
    assert actions_for(dash, world.workspace, agent="search") == []
    assert actions_for(dash, world.workspace, agent="review") == []  # exact ids, not a substring
    # Combined with the other filters.
    assert actions_for(dash, world.workspace, agent="reviewer", action="checkpoint.handoff") == [
        "checkpoint.handoff"
    ]


def test_it_indexes_the_agents_when_the_event_is_written(world: World) -> None:
    handoff = AuditEvent.objects.get(workspace=world.workspace, action="checkpoint.handoff")
    assert sorted(handoff.agents.values_list("agent_id", flat=True)) == ["planner", "reviewer"]
    update = audit_record(
        workspace=world.workspace, actor=Actor.system("t"), action="thread.update", details={"fields": []}
    )
    assert update.agents.count() == 0
    assert agents_named({"from_agent": "a", "to_agent": "a", "agent_id": ""}, ["b", "a" * 300]) == [
        "a",
        "a" * 255,
        "b",
    ]


def test_it_shows_the_agent_filter_and_keeps_the_query_count_flat(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    url = reverse("dashboard:audit", args=[world.workspace.slug])
    with django_assert_num_queries(AUDIT_PAGE_QUERIES):
        html = dash.get(url, {"agent": "reviewer"}).content.decode()
    assert 'name="agent" value="reviewer"' in html
    assert "Exact agent id: handoffs from or to it" in html
    source = make_checkpoint(world.workspace, "run-1", agent_id="reviewer", state={"n": 0})
    for n in range(30):
        checkpoint_handoff(source=source, target_agent_id=f"helper-{n}", actor=Actor.system("t"))
    with django_assert_num_queries(AUDIT_PAGE_QUERIES):
        html = dash.get(url, {"agent": "reviewer"}).content.decode()
    assert html.count("checkpoint.handoff</code>") == 31
    assert html.count("data-agent-link>helper-") == 30  # each event's agents, from the one prefetch


def test_it_refuses_an_over_long_agent_with_a_400(dash: Client, world: World) -> None:
    response = dash.get(reverse("dashboard:audit", args=[world.workspace.slug]), {"agent": "a" * 300})
    assert response.status_code == 200  # the filter form's error is shown on the page, as for every filter
    assert "Ensure this value has at most 255 characters (it has 300)." in response.content.decode()
    export = dash.get(
        reverse("dashboard:audit-export-csv", args=[world.workspace.slug]), {"agent": "a" * 300}
    )
    assert export.status_code == 400


def test_it_exports_only_the_events_of_the_agent(dash: Client, world: World) -> None:
    response = dash.get(
        reverse("dashboard:audit-export-csv", args=[world.workspace.slug]), {"agent": "planner"}
    )
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))  # type: ignore[attr-defined]
    assert [row["action"] for row in rows] == ["checkpoint.fork", "checkpoint.handoff"]


def test_it_never_shows_another_workspaces_events_for_the_same_agent(
    dash: Client, world: World, other_workspace: Workspace
) -> None:
    build_world(other_workspace)
    assert AuditEventAgent.objects.filter(workspace=other_workspace, agent_id="reviewer").count() == 3
    assert actions_for(dash, world.workspace, agent="reviewer") == [
        "checkpoint.ttl",
        "checkpoint.expire",
        "checkpoint.handoff",
    ]
    other = reverse("dashboard:audit", args=[other_workspace.slug])
    assert dash.get(other, {"agent": "reviewer"}).status_code == 404


def test_the_checkpoint_page_links_its_agent_to_the_filtered_audit_log(dash: Client, world: World) -> None:
    url = reverse("dashboard:checkpoint", args=[world.workspace.slug, "run-1", world.handoff.checkpoint_id])
    html = dash.get(url, {"ns": ""}).content.decode()
    link = re.search(r'<a class="small" href="([^"]+)" data-agent-audit>', html)
    assert link is not None and link.group(1) == f"/dashboard/w/{world.workspace.slug}/audit/?agent=reviewer"
    assert "checkpoint.handoff" in actions_for(dash, world.workspace, agent="reviewer")


WORLD_AGENTS = {
    "checkpoint.fork": ["planner"],
    "checkpoint.ttl": ["reviewer"],
    "checkpoint.expire": ["reviewer"],
    "checkpoint.handoff": ["planner", "reviewer"],
}


def agents_by_action(html: str) -> dict[str, list[str]]:
    """Each row's action → the agents of its Agents cell."""
    rows = re.findall(r'<code class="action">([^<]+)</code></td>\s*<td class="agents">(.*?)</td>', html, re.S)
    return {action: re.findall(r"data-agent-link>([^<]+)</a>", cell) for action, cell in rows}


def test_it_shows_the_agents_each_event_names_linked_to_their_audit_events(
    dash: Client, world: World
) -> None:
    url = reverse("dashboard:audit", args=[world.workspace.slug])
    html = dash.get(url, {"action": "checkpoint.*"}).content.decode()
    assert '<th scope="col">Agents</th>' in html
    assert agents_by_action(html) == WORLD_AGENTS
    link = (
        '<a class="agent" href="/dashboard/w/acme/audit/?agent=planner" title="Audit events naming planner"'
    )
    assert link in html
    # An event that names no agent says so; one whose agent id needs escaping is escaped and encoded.
    medallions = dash.get(url, {"action": "medallion.*"}).content.decode()
    assert agents_by_action(medallions) == {"medallion.update": [], "medallion.create": []}
    assert medallions.count('<td class="agents"><span class="muted">—</span></td>') == 2
    odd = make_checkpoint(world.workspace, "run-1", agent_id='ops & "qa"/1', state={"n": 1})
    checkpoint_handoff(source=odd, target_agent_id="reviewer", actor=Actor.system("t"))
    page = dash.get(url, {"agent": 'ops & "qa"/1'}).content.decode()
    assert agents_by_action(page) == {"checkpoint.handoff": ["ops &amp; &quot;qa&quot;/1", "reviewer"]}
    assert 'href="/dashboard/w/acme/audit/?agent=ops%20%26%20%22qa%22/1"' in page


def test_the_overview_shows_the_agents_of_its_recent_events(dash: Client, world: World) -> None:
    html = dash.get(reverse("dashboard:overview", args=[world.workspace.slug])).content.decode()
    recent = html.split('<table class="table events">')[1].split("</table>")[0]
    assert agents_by_action(recent)["checkpoint.handoff"] == ["planner", "reviewer"]


def test_the_exports_carry_the_agents_each_event_names(dash: Client, world: World) -> None:
    slug = world.workspace.slug
    response = dash.get(reverse("dashboard:audit-export-csv", args=[slug]), {"action": "checkpoint.*"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))  # type: ignore[attr-defined]
    assert list(rows[0]) == list(audit_export.COLUMNS) and "agents" in audit_export.COLUMNS
    assert {row["action"]: json.loads(row["agents"]) for row in rows} == WORLD_AGENTS
    response = dash.get(reverse("dashboard:audit-export-json", args=[slug]), {"agent": "reviewer"})
    events = json.loads(b"".join(response.streaming_content))["events"]  # type: ignore[attr-defined]
    assert {event["action"]: event["agents"] for event in events} == {
        action: agents for action, agents in WORLD_AGENTS.items() if "reviewer" in agents
    }
    medallions = dash.get(reverse("dashboard:audit-export-json", args=[slug]), {"action": "medallion.*"})
    assert [e["agents"] for e in json.loads(b"".join(medallions.streaming_content))["events"]] == [[], []]  # type: ignore[attr-defined]
