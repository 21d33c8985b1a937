"""Bulk operations act on every row matching the changelist's filter — all of them, not one page of 50, in
as many batches as it takes — through the services, so each row is audited. The batch is made small here
(`BULK_BATCH`), so a few hundred rows cross several pages and several batches."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from checkpoints.admin import base as admin_base
from checkpoints.models import ApiKey, AuditEvent, Checkpoint, Thread, Workspace
from checkpoints.services.checkpoints import checkpoint_compute_checksum
from checkpoints.services.workspaces import api_key_create
from tests.dashboard.world import make_user
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

BATCH = 60
MANY = 3 * BATCH + 7  # several pages of 50 and several batches, the last one short


@pytest.fixture(autouse=True)
def _small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin_base, "BULK_BATCH", BATCH)


def bulk_checkpoints(workspace: Workspace, thread_id: str, count: int) -> Thread:
    """`count` live checkpoints with real checksums, inserted in bulk (saving them one by one is slow)."""
    thread = Thread.objects.create(workspace=workspace, thread_id=thread_id)
    now = timezone.now()
    rows = []
    for n in range(count):
        row = Checkpoint(
            workspace=workspace,
            thread=thread,
            checkpoint_id=f"c{n:05d}",
            agent_id="bulk",
            state=f'{{"n":{n}}}',
            context="{}",
            metadata="{}",
            size_bytes=10,
            created_at=now,
        )
        row.checksum = checkpoint_compute_checksum(row)
        rows.append(row)
    Checkpoint.objects.bulk_create(rows, batch_size=500)
    return thread


def test_it_expires_every_matching_checkpoint_not_just_one_page(
    admin_client: Client, workspace: Workspace
) -> None:
    bulk_checkpoints(workspace, "bulk", MANY)
    bystander = make_checkpoint(workspace, "other-thread", state={"keep": True})
    pinned = make_checkpoint(workspace, "bulk", state={"pinned": True}, pinned=True)
    url = reverse("admin:checkpoints_checkpoint_bulk", args=["expire"]) + "?q=bulk"

    confirm = admin_client.get(url)
    assert confirm.status_code == 200
    assert f"{MANY + 1} checkpoints</strong> match" in confirm.content.decode()
    listing = admin_client.get(reverse("admin:checkpoints_checkpoint_changelist"), {"q": "bulk"})
    assert len(listing.context["cl"].result_list) == 50  # one page shows 50 ...

    response = admin_client.post(url)  # ... the operation takes all of them
    assert response.status_code == 302
    assert Checkpoint.objects.filter(thread__thread_id="bulk", expired_at__isnull=False).count() == MANY
    assert Checkpoint.objects.filter(thread__thread_id="bulk", state__isnull=False).count() == 1
    expired = AuditEvent.objects.filter(action="checkpoint.expire", actor_label="user:root")
    assert expired.count() == MANY
    bystander.refresh_from_db()
    pinned.refresh_from_db()
    assert bystander.is_readable() and pinned.is_readable()
    message = str(next(iter(admin_client.get(response["Location"]).context["messages"])))
    assert f"{MANY} checkpoints done, 1 skipped" in message


def test_it_revokes_every_matching_key_with_the_select_all_action(
    admin_client: Client, workspace: Workspace
) -> None:
    ApiKey.objects.bulk_create(
        [
            ApiKey(workspace=workspace, name=f"batch-{n}", prefix=f"b{n:07d}", secret_hash="0" * 64)
            for n in range(MANY)
        ]
    )
    keeper, _ = api_key_create(workspace=workspace, name="keeper")
    changelist = reverse("admin:checkpoints_apikey_changelist")
    first = ApiKey.objects.filter(name__startswith="batch-").order_by("pk").first()
    assert first is not None
    response = admin_client.post(
        f"{changelist}?q=batch",
        # Django's "select all N": one visible row is ticked, select_across extends it to every match.
        {"action": "bulk_revoke", "select_across": "1", "index": "0", "_selected_action": [str(first.pk)]},
    )
    assert response.status_code == 302
    assert ApiKey.objects.filter(name__startswith="batch-", revoked_at__isnull=False).count() == MANY
    assert AuditEvent.objects.filter(action="apikey.revoke").count() == MANY
    keeper.refresh_from_db()
    assert keeper.revoked_at is None


def test_it_deletes_every_matching_thread_through_the_service(
    admin_client: Client, workspace: Workspace
) -> None:
    for n in range(60):
        make_checkpoint(workspace, f"user7-thread-{n}", state={"n": n})
    Thread.objects.filter(thread_id__startswith="user7-").update(user_id="user-7")
    make_checkpoint(workspace, "someone-else", state={"n": 0})
    url = reverse("admin:checkpoints_thread_bulk", args=["delete"]) + "?q=user-7"
    assert admin_client.post(url).status_code == 302
    assert not Thread.objects.filter(user_id="user-7").exists()
    assert not Checkpoint.objects.filter(thread__user_id="user-7").exists()
    assert Thread.objects.filter(thread_id="someone-else").exists()
    assert AuditEvent.objects.filter(action="thread.delete").count() == 60


def test_it_refuses_bulk_operations_without_the_permission(client: Client, workspace: Workspace) -> None:
    bulk_checkpoints(workspace, "bulk", 5)
    viewer = make_user("viewer", workspaces=(workspace,))
    viewer.user_permissions.add(Permission.objects.get(codename="view_checkpoint"))
    client.force_login(viewer)
    assert client.get(reverse("admin:checkpoints_checkpoint_changelist")).status_code == 200
    assert client.post(reverse("admin:checkpoints_checkpoint_bulk", args=["expire"])).status_code == 403
    assert not Checkpoint.objects.filter(expired_at__isnull=False).exists()


def test_it_applies_the_current_filters_only(
    admin_client: Client, workspace: Workspace, other_workspace: Workspace
) -> None:
    bulk_checkpoints(workspace, "mine", 30)
    bulk_checkpoints(other_workspace, "theirs", 30)
    url = reverse("admin:checkpoints_checkpoint_bulk", args=["expire"]) + f"?workspace={workspace.slug}"
    assert admin_client.post(url).status_code == 302
    assert Checkpoint.objects.filter(workspace=workspace, expired_at__isnull=False).count() == 30
    assert not Checkpoint.objects.filter(workspace=other_workspace, expired_at__isnull=False).exists()
    assert AuditEvent.objects.filter(workspace=other_workspace).count() == 0


def test_it_marks_matching_medallions_stale_with_a_revision_each(
    admin_client: Client, workspace: Workspace
) -> None:
    from tests.dashboard.world import build_world

    world = build_world(workspace)
    url = reverse("admin:checkpoints_medallion_bulk", args=["stale"]) + "?status__exact=active"
    assert admin_client.post(url).status_code == 302
    world.medallion.refresh_from_db()
    assert world.medallion.status == "stale" and world.medallion.version == 3
    event = AuditEvent.objects.filter(action="medallion.update").order_by("-id").first()
    assert event is not None and event.actor_label == "user:root"
    assert event.details["status"] == ["active", "stale"]
