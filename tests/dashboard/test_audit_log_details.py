"""The audit log page: details in full behind a disclosure, targets linked to their pages, the grouped
action picker with prefixes, the checkpoints a sweep touched, and a pinned query count."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from checkpoints.dashboard.audit_actions import AUDIT_ACTIONS
from checkpoints.models import AuditEvent, Checkpoint
from checkpoints.services import retention
from checkpoints.services.audit import Actor, audit_record
from checkpoints.services.retention import retention_sweep
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

# session + user + workspace + the page of events + the agents they name (one query for the whole page,
# tests/dashboard/test_audit_agent_filter.py): the links and details cost no query.
AUDIT_PAGE_QUERIES = 5
SERVICES = Path(__file__).resolve().parents[2] / "checkpoints" / "services"


def audit_page(dash: Client, world: World, **params: str) -> str:
    response = dash.get(reverse("dashboard:audit", args=[world.workspace.slug]), params)
    assert response.status_code == 200
    return str(response.content.decode())


def test_it_shows_long_details_whole_behind_a_disclosure(dash: Client, world: World) -> None:
    tail = "the end of a long detail " + "z" * 20
    audit_record(
        workspace=world.workspace,
        actor=Actor.system("ops"),
        action="thread.update",
        target_type="thread",
        target_id="run-1",
        details={"note": "x" * 600, "tail": tail},
    )
    page = audit_page(dash, world, actor="ops")
    row = page.split("<tbody>")[1].split("</tr>")[0]
    summary = re.search(r"<summary><code>(.*?)</code></summary>", row, re.S)
    assert summary is not None and summary.group(1).endswith("…")  # the summary line is short...
    assert tail not in summary.group(1)
    assert (
        "<details data-event-details>" in row and tail in row
    )  # ...and the whole document is one click away


def test_it_links_each_target_to_its_page(dash: Client, world: World) -> None:
    page = audit_page(dash, world)
    slug = world.workspace.slug
    links = set(re.findall(r'<a href="([^"]+)" data-target-link>', page))
    checkpoint = reverse("dashboard:checkpoint", args=[slug, "run-1", world.handoff.checkpoint_id])
    assert f"{checkpoint}?ns=" in links  # the handoff: a checkpoint target
    assert reverse("dashboard:thread", args=[slug, "run-1-fork"]) in links  # the fork: a thread target
    medallion = reverse("dashboard:medallion", args=[slug, world.medallion.medallion_id])
    assert medallion in links


def test_it_does_not_link_targets_that_are_gone(dash: Client, world: World) -> None:
    audit_record(
        workspace=world.workspace,
        actor=Actor.system(),
        action="thread.delete",
        target_type="thread",
        target_id="gone-thread",
    )
    page = audit_page(dash, world, action="thread.delete")
    assert "<code>gone-thread</code>" in page
    assert "data-target-link" not in page


def test_it_picks_actions_by_group_and_prefix(dash: Client, world: World) -> None:
    page = audit_page(dash, world)
    picker = page.split('<select name="action"')[1].split("</select>")[0]
    assert '<optgroup label="checkpoint">' in picker
    assert '<option value="checkpoint.*">checkpoint.* (all 7)</option>' in picker
    assert '<option value="retention.sweep">retention.sweep</option>' in picker

    def actions(**params: str) -> set[str]:
        return set(re.findall(r'<code class="action">([^<]+)</code>', audit_page(dash, world, **params)))

    assert actions(action="checkpoint.*") == {
        "checkpoint.fork",
        "checkpoint.ttl",
        "checkpoint.expire",
        "checkpoint.handoff",
    }
    assert actions(action="medallion.*") == {"medallion.create", "medallion.update"}
    assert actions(action="checkpoint.fork") == {"checkpoint.fork"}
    # A value typed into the URL stays selected (shown under "Typed").
    typed = audit_page(dash, world, action="checkpoint")
    assert '<option value="checkpoint" selected>checkpoint</option>' in typed


def test_its_action_list_names_every_action_the_services_record() -> None:
    recorded = set()
    for path in SERVICES.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.keyword)
                and node.arg == "action"
                and isinstance(node.value, ast.Constant)
            ):
                recorded.add(node.value.value)
    listed = {action for actions in AUDIT_ACTIONS.values() for action in actions}
    assert recorded and recorded == listed
    assert all(action.startswith(f"{group}.") for group, names in AUDIT_ACTIONS.items() for action in names)


def test_it_links_the_checkpoints_a_sweep_touched(dash: Client, world: World) -> None:
    due = [make_checkpoint(world.workspace, f"old-{n}", state={"n": n}, ttl_seconds=60) for n in range(3)]
    Checkpoint.objects.filter(pk__in=[c.pk for c in due]).update(expires_at=timezone.now() - timedelta(1))
    retention_sweep(workspace=world.workspace)
    page = audit_page(dash, world, action="retention.sweep")
    swept = re.findall(r'<a href="([^"]+)" data-swept>', page)
    slug = world.workspace.slug
    assert swept == [
        reverse("dashboard:checkpoint", args=[slug, c.thread.thread_id, c.checkpoint_id]) + "?ns="
        for c in due
    ]
    for checkpoint in due:
        assert dash.get(f"/dashboard/w/{slug}/threads/{checkpoint.thread.thread_id}/").status_code == 200


def test_a_sweep_names_at_most_its_bound_of_checkpoints_but_counts_them_all(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "SWEEP_AUDIT_IDS", 2)
    due = [make_checkpoint(world.workspace, "old", state={"n": n}, ttl_seconds=60) for n in range(5)]
    Checkpoint.objects.filter(pk__in=[c.pk for c in due]).update(expires_at=timezone.now() - timedelta(1))
    retention_sweep(workspace=world.workspace, batch_size=2)
    event = AuditEvent.objects.get(action="retention.sweep")
    assert event.details["expired"] == 5
    named = [ref["checkpoint_id"] for ref in event.details["checkpoints"]["expired"]]
    assert named == [due[0].checkpoint_id, due[1].checkpoint_id]


def test_it_pins_the_audit_log_query_count(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    url = reverse("dashboard:audit", args=[world.workspace.slug])
    with django_assert_num_queries(AUDIT_PAGE_QUERIES):
        dash.get(url)
    for n in range(60):
        audit_record(
            workspace=world.workspace,
            actor=Actor.system(),
            action="checkpoint.ttl",
            target_type="checkpoint",
            target_id=f"run-1//{world.step2.checkpoint_id}",
            details={"n": n},
        )
    with django_assert_num_queries(AUDIT_PAGE_QUERIES):
        page = dash.get(url).content.decode()
    assert page.count('<code class="action">') == 50
    assert (
        page.count(f'href="/dashboard/w/acme/threads/run-1/checkpoints/{world.step2.checkpoint_id}/?ns="')
        == 50
    )
