"""Tombstone purge and idle-thread expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from checkpoints.models import AuditEvent, Checkpoint, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire
from checkpoints.services.retention import threads_expire_idle, tombstones_purge
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def test_it_purges_tombstones_once_their_retention_has_passed(
    workspace: Workspace, other_workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    Workspace.objects.filter(pk=workspace.pk).update(tombstone_retention_seconds=100)
    time_machine.move_to(T0, tick=False)
    doomed = make_checkpoint(workspace, "t1")
    checkpoint_expire(checkpoint=doomed, actor=Actor.system("test"))
    live = make_checkpoint(workspace, "t1")
    theirs = make_checkpoint(other_workspace, "t1")  # default retention: 30 days
    checkpoint_expire(checkpoint=theirs, actor=Actor.system("test"))

    time_machine.move_to(T0 + timedelta(seconds=100) - timedelta(microseconds=1), tick=False)
    assert tombstones_purge() == 0
    time_machine.move_to(T0 + timedelta(seconds=100), tick=False)
    assert tombstones_purge() == 1
    assert set(Checkpoint.objects.values_list("pk", flat=True)) == {live.pk, theirs.pk}
    event = AuditEvent.objects.get(action="retention.purge")
    assert (event.workspace_id, event.details["purged"]) == (workspace.pk, 1)

    assert tombstones_purge() == 0  # idempotent
    assert AuditEvent.objects.filter(action="retention.purge").count() == 1


def test_it_never_purges_a_workspace_that_keeps_tombstones_forever(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    Workspace.objects.filter(pk=workspace.pk).update(tombstone_retention_seconds=None)
    time_machine.move_to(T0, tick=False)
    kept = make_checkpoint(workspace, "t1")
    checkpoint_expire(checkpoint=kept, actor=Actor.system("test"))
    time_machine.move_to(T0 + timedelta(days=3650), tick=False)
    assert tombstones_purge() == 0
    assert Checkpoint.objects.get(pk=kept.pk).expired_at is not None
    assert not AuditEvent.objects.filter(action="retention.purge").exists()


def test_it_purges_in_batches(workspace: Workspace, time_machine: time_machine.TimeMachineFixture) -> None:
    time_machine.move_to(T0, tick=False)
    for n in range(5):
        checkpoint_expire(checkpoint=make_checkpoint(workspace, f"t{n}"), actor=Actor.system("test"))
    time_machine.move_to(T0 + timedelta(days=31), tick=False)
    assert tombstones_purge(batch_size=2) == 5
    assert not Checkpoint.objects.exists()
    assert AuditEvent.objects.get(action="retention.purge").details["purged"] == 5


def set_idle_ttl(thread_id: str, seconds: int) -> None:
    Thread.objects.filter(thread_id=thread_id).update(ttl_seconds=seconds)


def test_it_deletes_a_thread_exactly_when_its_idle_expiry_passes(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    make_checkpoint(workspace, "t1")
    set_idle_ttl("t1", 60)
    make_checkpoint(workspace, "t1")  # a write sets expires_at = now + ttl
    assert Thread.objects.get(thread_id="t1").expires_at == T0 + timedelta(seconds=60)

    time_machine.move_to(T0 + timedelta(seconds=60) - timedelta(microseconds=1), tick=False)
    assert threads_expire_idle() == 0
    time_machine.move_to(T0 + timedelta(seconds=60), tick=False)
    assert threads_expire_idle() == 1
    assert not Thread.objects.filter(thread_id="t1").exists()
    assert not Checkpoint.objects.exists()  # everything under it went with it
    event = AuditEvent.objects.get(action="thread.expire")
    assert (event.target_type, event.target_id, event.actor_label) == ("thread", "t1", "retention")
    assert event.details["checkpoints"] == 2
    assert threads_expire_idle() == 0  # idempotent


def test_it_applies_the_workspace_idle_ttl_but_never_to_pinned_threads(
    workspace: Workspace, other_workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    Workspace.objects.filter(pk=workspace.pk).update(thread_idle_ttl_seconds=3600)
    time_machine.move_to(T0, tick=False)
    for thread_id in ("idle", "pinned", "busy"):
        make_checkpoint(workspace, thread_id)
    make_checkpoint(other_workspace, "idle")  # no idle policy there
    Thread.objects.filter(thread_id="pinned").update(pinned=True)
    time_machine.move_to(T0 + timedelta(minutes=59), tick=False)
    make_checkpoint(workspace, "busy")  # touched: its idle clock restarts

    time_machine.move_to(T0 + timedelta(hours=1), tick=False)
    assert threads_expire_idle() == 1
    remaining = set(Thread.objects.values_list("workspace__slug", "thread_id"))
    assert remaining == {("acme", "pinned"), ("acme", "busy"), ("globex", "idle")}

    time_machine.move_to(T0 + timedelta(days=400), tick=False)
    assert threads_expire_idle() == 1  # busy, eventually; pinned never
    assert set(Thread.objects.values_list("thread_id", flat=True)) == {"pinned", "idle"}
