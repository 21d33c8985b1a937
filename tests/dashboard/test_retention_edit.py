"""Editing the retention policy in the dashboard: human units, a preview of the unsaved policy through the
preview service, the API's bounds with errors inline, and an audited save with before and after."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from checkpoints.models import AuditEvent, Thread, Workspace
from checkpoints.services.retention import retention_policy
from tests.dashboard.world import World
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

# session + user + workspace + a count and a sample per rule in force (no tombstone purge in this policy),
# and for the store items past their TTL.
PREVIEW_QUERIES = 3 + 6 + 2
OFF = {
    f"{name}_{part}": ""
    for name in ("default_ttl_seconds", "thread_idle_ttl_seconds", "tombstone_retention_seconds")
    for part in (0, 1)
}


def url(world: World) -> str:
    return reverse("dashboard:retention-edit", args=[world.workspace.slug])


def policy_form(**values: str) -> dict[str, str]:
    return {**OFF, "keep_latest": "", "auto_summarize_every": "", **values}


def counts(html: str) -> list[int]:
    return [int(n) for n in re.findall(r"data-rule-count>(\d+)<", html)]


def test_it_shows_the_saved_policy_in_human_units(dash: Client, world: World) -> None:
    Workspace.objects.filter(pk=world.workspace.pk).update(
        default_ttl_seconds=30 * 86_400, thread_idle_ttl_seconds=7_200, keep_latest=3
    )
    html = dash.get(url(world)).content.decode()
    assert re.search(r'name="default_ttl_seconds_0" value="30"', html)
    assert re.search(r'<option value="days" selected>days</option>', html)
    assert re.search(r'name="thread_idle_ttl_seconds_0" value="2"', html)
    assert re.search(r'<option value="hours" selected>hours</option>', html)
    assert 'name="keep_latest" value="3"' in html
    assert "2592000" not in html


def test_it_previews_the_unsaved_policy_and_changes_nothing(
    dash: Client, world: World, django_assert_num_queries: Callable[..., Any]
) -> None:
    old = make_checkpoint(world.workspace, "quiet", state={"n": 1})
    Thread.objects.filter(pk=old.thread_id).update(updated_at=timezone.now() - timedelta(days=3))
    before = retention_policy(world.workspace)
    events = AuditEvent.objects.count()
    form = policy_form(
        keep_latest="1", thread_idle_ttl_seconds_0="2", thread_idle_ttl_seconds_1="days", preview="1"
    )
    with django_assert_num_queries(PREVIEW_QUERIES):
        response = dash.post(url(world), form)
    html = response.content.decode()
    assert response.status_code == 200 and "data-policy-preview" in html
    expired, pruned, purged, idle, store_items = counts(html)
    assert (expired, purged, store_items) == (0, 0, 0)
    assert pruned == 5 + 1  # run-1 keeps its newest (pinned) of 6 live in "" and 1 of 2 in "tools"
    assert idle == 1  # "quiet", untouched for 3 days; the world's threads were written just now
    assert "quiet" in html
    # The form keeps the values previewed, and nothing was saved or audited.
    assert 'name="keep_latest" value="1"' in html
    world.workspace.refresh_from_db()
    assert retention_policy(world.workspace) == before and AuditEvent.objects.count() == events


def test_it_saves_the_policy_with_an_audited_before_and_after(dash: Client, world: World) -> None:
    form = policy_form(
        default_ttl_seconds_0="30",
        default_ttl_seconds_1="days",
        keep_latest="5",
        tombstone_retention_seconds_0="12",
        tombstone_retention_seconds_1="hours",
    )
    response = dash.post(url(world), form)
    assert response.status_code == 302 and response["Location"] == "/dashboard/w/acme/retention/"
    world.workspace.refresh_from_db()
    assert retention_policy(world.workspace) == {
        "default_ttl_seconds": 2_592_000,
        "keep_latest": 5,
        "thread_idle_ttl_seconds": None,
        "tombstone_retention_seconds": 43_200,
        "auto_summarize_every": None,
    }
    event = AuditEvent.objects.get(action="retention.policy")
    assert event.actor_label == "user:alice" and event.details["before"]["keep_latest"] is None
    assert event.details["after"]["default_ttl_seconds"] == 2_592_000
    assert "Retention policy saved." in dash.get(response["Location"]).content.decode()
    # Saving the same values again changes nothing and writes no second event.
    again = dash.post(url(world), form)
    assert "nothing changed" in dash.get(again["Location"]).content.decode()
    assert AuditEvent.objects.filter(action="retention.policy").count() == 1


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        (
            {"default_ttl_seconds_0": "3651", "default_ttl_seconds_1": "days"},
            "default_ttl_seconds",
            "At most",
        ),
        (
            {"thread_idle_ttl_seconds_0": "0", "thread_idle_ttl_seconds_1": "hours"},
            "thread_idle_ttl_seconds",
            "greater than or equal to 1",
        ),
        ({"keep_latest": "0"}, "keep_latest", "greater than or equal to 1"),
        ({"keep_latest": "2147483648"}, "keep_latest", "less than or equal to 2147483647"),
        ({"auto_summarize_every": "x"}, "auto_summarize_every", "whole number"),
        (
            {"tombstone_retention_seconds_0": "1" * 5000, "tombstone_retention_seconds_1": "days"},
            "tombstone_retention_seconds",
            "whole number",
        ),
        (
            {"default_ttl_seconds_0": "5", "default_ttl_seconds_1": "weeks"},
            "default_ttl_seconds",
            "Select a valid choice",
        ),
    ],
)
@pytest.mark.parametrize("intent", [{}, {"preview": "1"}])
def test_it_refuses_values_outside_the_apis_bounds_inline(
    dash: Client, world: World, values: dict[str, str], field: str, message: str, intent: dict[str, str]
) -> None:
    response = dash.post(url(world), policy_form(**values, **intent))
    html = response.content.decode()
    assert response.status_code == 400
    error = html.split(f'data-error-for="{field}">')[1].split("</div>")[0]
    assert message in error
    assert not AuditEvent.objects.filter(action="retention.policy").exists()


def test_its_bounds_are_the_apis(dash: Client, world: World) -> None:
    most = settings.CAIRN_MAX_TTL_SECONDS
    ok = dash.post(url(world), policy_form(default_ttl_seconds_0=str(most), default_ttl_seconds_1="seconds"))
    assert ok.status_code == 302
    over = dash.post(
        url(world), policy_form(default_ttl_seconds_0=str(most + 1), default_ttl_seconds_1="seconds")
    )
    assert over.status_code == 400
    world.workspace.refresh_from_db()
    assert world.workspace.default_ttl_seconds == most


def test_the_retention_page_links_the_editor(dash: Client, world: World) -> None:
    html = dash.get(reverse("dashboard:retention", args=[world.workspace.slug])).content.decode()
    assert f'href="{url(world)}"' in html
