"""Every ModelAdmin (generated from the admin registry): changelist, search and change view answer 200;
lists never COUNT a whole table; payloads and the audit log are read-only; tenancy holds for staff."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.db import connection
from django.db.models import Model
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from checkpoints.models import ApiKey, AuditEvent, Checkpoint, Membership, PendingWrite, Workspace
from checkpoints.services.workspaces import api_key_create
from tests.dashboard.world import World, make_user

pytestmark = pytest.mark.django_db

REGISTRY = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


def _urls(model: type[Model]) -> tuple[str, str]:
    info = model._meta.app_label, model._meta.model_name
    return f"admin:{info[0]}_{info[1]}_changelist", f"admin:{info[0]}_{info[1]}_change"


@pytest.mark.parametrize(("model", "model_admin"), REGISTRY, ids=[m._meta.label for m, _ in REGISTRY])
def test_it_serves_changelist_search_and_change_view(
    admin_client: Client, everything: World, model: type[Model], model_admin: admin.ModelAdmin
) -> None:
    changelist, change = _urls(model)
    listing = admin_client.get(reverse(changelist))
    assert listing.status_code == 200
    obj = model._default_manager.order_by("pk").first()
    assert obj is not None, f"the fixture needs a {model._meta.label}"
    assert reverse(change, args=[obj.pk]) in listing.content.decode()
    assert admin_client.get(reverse(changelist), {"q": "run-1"}).status_code == 200
    assert admin_client.get(reverse(changelist), {"q": "<script>\x00"}).status_code == 200
    detail = admin_client.get(reverse(change, args=[obj.pk]))
    assert detail.status_code == 200


@pytest.mark.parametrize(("model", "model_admin"), REGISTRY, ids=[m._meta.label for m, _ in REGISTRY])
def test_it_never_counts_a_whole_table_on_a_changelist(
    admin_client: Client, everything: World, model: type[Model], model_admin: admin.ModelAdmin
) -> None:
    if model._meta.app_label != "checkpoints":
        pytest.skip("Django's own models are small")
    with CaptureQueriesContext(connection) as queries:
        assert admin_client.get(reverse(_urls(model)[0])).status_code == 200
    counts = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert counts, "the paginator counts"
    for sql in counts:
        assert re.search(r"\bLIMIT\b", sql, re.IGNORECASE), f"unbounded count: {sql}"
    for sql in [q["sql"].upper() for q in queries.captured_queries]:
        # Django's own date hierarchy scans the table (MIN/MAX, SELECT DISTINCT date_trunc); ours does not.
        assert "MIN(" not in sql and "MAX(" not in sql and "SELECT DISTINCT" not in sql, sql


def test_it_drills_down_by_date_from_the_calendar(admin_client: Client, world: World) -> None:
    changelist = reverse("admin:checkpoints_checkpoint_changelist")
    today = world.step2.created_at
    page = admin_client.get(changelist).content.decode()
    assert f"created_at__year={today.year}" in page
    by_year = admin_client.get(changelist, {"created_at__year": today.year}).content.decode()
    assert f"created_at__month={today.month}" in by_year and "created_at__month=12" in by_year
    by_day = admin_client.get(
        changelist,
        {"created_at__year": today.year, "created_at__month": today.month, "created_at__day": today.day},
    )
    assert by_day.status_code == 200
    assert world.step2.checkpoint_id in by_day.content.decode()
    elsewhere = admin_client.get(changelist, {"created_at__year": today.year - 3}).content.decode()
    assert world.step2.checkpoint_id not in elsewhere


def test_it_shows_checkpoint_payloads_read_only_with_the_integrity_check(
    admin_client: Client, world: World
) -> None:
    url = reverse("admin:checkpoints_checkpoint_change", args=[world.step2.pk])
    page = admin_client.get(url).content.decode()
    assert "checksum verified" in page
    assert "refactor billing" in page
    assert 'name="state"' not in page and "<textarea" not in page
    # A POST to the change view cannot alter the immutable record.
    response = admin_client.post(url, {"state": '{"forged": true}', "agent_id": "mallory"})
    assert response.status_code == 403
    world.step2.refresh_from_db()
    assert world.step2.agent_id == "planner" and "forged" not in (world.step2.state or "")
    Checkpoint.objects.filter(pk=world.step2.pk).update(state='{"forged":true}')
    assert "checksum mismatch" in admin_client.get(url).content.decode()


def test_it_never_adds_changes_or_deletes_audit_events(admin_client: Client, world: World) -> None:
    event = AuditEvent.objects.first()
    assert event is not None
    before = (AuditEvent.objects.count(), event.action)
    assert admin_client.get(reverse("admin:checkpoints_auditevent_add")).status_code == 403
    assert admin_client.post(reverse("admin:checkpoints_auditevent_add"), {"action": "x"}).status_code == 403
    change = reverse("admin:checkpoints_auditevent_change", args=[event.pk])
    assert admin_client.post(change, {"action": "forged"}).status_code == 403
    delete = reverse("admin:checkpoints_auditevent_delete", args=[event.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    listing = admin_client.get(reverse("admin:checkpoints_auditevent_changelist")).content.decode()
    assert "delete_selected" not in listing
    event.refresh_from_db()
    assert (AuditEvent.objects.count(), event.action) == before


def test_it_escapes_payloads_in_the_admin(admin_client: Client, world: World) -> None:
    from tests.factories import make_checkpoint

    hostile = make_checkpoint(
        world.workspace, "run-1", state={"<script>alert(1)</script>": "<img src=x onerror=alert(2)>"}
    )
    page = admin_client.get(
        reverse("admin:checkpoints_checkpoint_change", args=[hostile.pk])
    ).content.decode()
    assert "<script>alert(1)</script>" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_it_records_policy_changes_made_in_the_admin(admin_client: Client, world: World) -> None:
    url = reverse("admin:checkpoints_workspace_change", args=[world.workspace.pk])
    form = {
        "slug": world.workspace.slug,
        "name": "Renamed",
        "default_ttl_seconds": "3600",
        "keep_latest": "",
        "thread_idle_ttl_seconds": "",
        "tombstone_retention_seconds": "86400",
        "auto_summarize_every": "",
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
    }
    response = admin_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    world.workspace.refresh_from_db()
    assert (world.workspace.name, world.workspace.default_ttl_seconds) == ("Renamed", 3600)
    event = AuditEvent.objects.filter(action="retention.policy").get()
    assert event.actor_label == "user:root"
    assert event.details["after"]["default_ttl_seconds"] == 3600
    assert event.details["before"]["default_ttl_seconds"] is None


def test_it_shows_staff_only_the_rows_of_their_workspaces(
    client: Client, world: World, other_workspace: Workspace
) -> None:
    api_key_create(workspace=other_workspace, name="theirs")
    staff = make_user("ops", workspaces=(world.workspace,))
    staff.user_permissions.add(*Permission.objects.filter(content_type__app_label="checkpoints"))
    client.force_login(staff)
    keys = client.get(reverse("admin:checkpoints_apikey_changelist")).content.decode()
    assert "theirs" not in keys
    theirs = ApiKey.objects.get(name="theirs")
    assert client.get(reverse("admin:checkpoints_apikey_change", args=[theirs.pk])).status_code == 302
    workspaces = client.get(reverse("admin:checkpoints_workspace_changelist")).content.decode()
    assert other_workspace.slug not in workspaces
    # Only superusers grant access.
    assert client.get(reverse("admin:checkpoints_membership_add")).status_code == 403
    assert not Membership.objects.filter(workspace=other_workspace).exists()
    assert PendingWrite.objects.count() == 0


DATED = [(m, a) for m, a in REGISTRY if a.date_hierarchy]


@pytest.mark.parametrize(("model", "model_admin"), DATED, ids=[m._meta.label for m, _ in DATED])
@pytest.mark.parametrize(
    "query", ["__year=9999", "__year=9999&{f}__month=12", "__year=9999&{f}__month=12&{f}__day=31", "__year=0"]
)
def test_an_out_of_range_date_drill_down_drops_the_filter_instead_of_a_500(
    admin_client: Client, everything: World, model: type[Model], model_admin: admin.ModelAdmin, query: str
) -> None:
    field = model_admin.date_hierarchy
    url = f"{reverse(_urls(model)[0])}?{field}{query.format(f=field)}"
    response = admin_client.get(url)
    # The admin's answer to any bad lookup: a redirect to the unfiltered list flagged `?e=1`.
    assert response.status_code == 302, url
    assert response["Location"].endswith("?e=1")
    assert admin_client.get(response["Location"]).status_code == 200


def test_every_date_hierarchy_is_covered() -> None:
    assert len(DATED) >= 9
