"""The retention sweep: TTL expiry and keep-latest-N turn checkpoints into tombstones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from checkpoints.models import AuditEvent, Checkpoint, PendingWrite, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.retention import retention_sweep
from tests.factories import WorkspaceFactory, make_checkpoint, make_due_checkpoints, make_pending_write

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
NOTHING = {"expired": 0, "pruned": 0, "workspaces": 0}


def live_ids(**filters: object) -> list[str]:
    return list(
        Checkpoint.objects.filter(expired_at__isnull=True, **filters)
        .order_by("id")
        .values_list("checkpoint_id", flat=True)
    )


def test_it_tombstones_a_checkpoint_exactly_at_its_expires_at(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    saved = make_checkpoint(workspace, "t1", ttl_seconds=60, metadata={"k": "v"}, context={"c": 1})
    assert saved.expires_at == T0 + timedelta(seconds=60)

    time_machine.move_to(saved.expires_at - timedelta(microseconds=1), tick=False)
    assert retention_sweep() == NOTHING
    assert Checkpoint.objects.get(pk=saved.pk).state is not None

    time_machine.move_to(saved.expires_at, tick=False)
    assert retention_sweep() == {"expired": 1, "pruned": 0, "workspaces": 1}
    tombstone = Checkpoint.objects.get(pk=saved.pk)
    assert (tombstone.state, tombstone.context, tombstone.metadata) == (None, None, None)
    # Lineage and audit fields stay whole; expired_at is when it really expired, not when the sweep ran.
    assert tombstone.expired_at == saved.expires_at
    assert (
        tombstone.checkpoint_id,
        tombstone.parent_checkpoint_id,
        tombstone.checksum,
        tombstone.created_at,
    ) == (
        saved.checkpoint_id,
        saved.parent_checkpoint_id,
        saved.checksum,
        saved.created_at,
    )


def test_it_records_the_real_expiry_time_when_the_sweep_runs_late(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    saved = make_checkpoint(workspace, "t1", ttl_seconds=5)
    time_machine.move_to(T0 + timedelta(days=3), tick=False)
    retention_sweep()
    assert Checkpoint.objects.get(pk=saved.pk).expired_at == T0 + timedelta(seconds=5)


def test_it_never_expires_a_pinned_checkpoint(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    pinned = make_checkpoint(workspace, "t1", ttl_seconds=1, pinned=True)
    unpinned = make_checkpoint(workspace, "t1", ttl_seconds=1)
    time_machine.move_to(T0 + timedelta(days=3650), tick=False)
    assert retention_sweep()["expired"] == 1
    assert live_ids() == [pinned.checkpoint_id]
    assert Checkpoint.objects.get(pk=unpinned.pk).expired_at is not None


def test_it_deletes_the_pending_writes_of_tombstoned_checkpoints_only(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    doomed = make_checkpoint(workspace, "t1", ttl_seconds=10)
    kept = make_checkpoint(workspace, "t1")
    for target in (doomed, kept):
        make_pending_write(target, {"n": 1}, channel="messages", task_id="task-1")
    time_machine.move_to(T0 + timedelta(seconds=10), tick=False)
    retention_sweep()
    assert list(PendingWrite.objects.values_list("checkpoint_id", flat=True)) == [kept.checkpoint_id]


def test_it_keeps_exactly_the_newest_n_per_thread_and_namespace(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    root = [make_checkpoint(workspace, "t1", state={"n": n}) for n in range(5)]
    sub = [make_checkpoint(workspace, "t1", namespace="child:1", state={"n": n}) for n in range(3)]
    other_thread = [make_checkpoint(workspace, "t2", state={"n": n}) for n in range(2)]
    Workspace.objects.filter(pk=workspace.pk).update(keep_latest=2)

    time_machine.move_to(T0 + timedelta(minutes=1), tick=False)
    assert retention_sweep() == {"expired": 0, "pruned": 4, "workspaces": 1}
    assert live_ids(namespace="", thread__thread_id="t1") == [c.checkpoint_id for c in root[-2:]]
    assert live_ids(namespace="child:1") == [c.checkpoint_id for c in sub[-2:]]
    assert live_ids(thread__thread_id="t2") == [c.checkpoint_id for c in other_thread]
    # Pruned rows are tombstones as of the sweep (they had no expiry of their own).
    assert set(Checkpoint.objects.filter(expired_at__isnull=False).values_list("expired_at", flat=True)) == {
        T0 + timedelta(minutes=1)
    }


def test_it_never_prunes_a_pinned_checkpoint_and_counts_it_among_the_newest(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    oldest_pinned = make_checkpoint(workspace, "t1", pinned=True, state={"n": 0})
    middle = [make_checkpoint(workspace, "t1", state={"n": n}) for n in (1, 2)]
    newest_pinned = make_checkpoint(workspace, "t1", pinned=True, state={"n": 3})
    Workspace.objects.filter(pk=workspace.pk).update(keep_latest=2)

    assert retention_sweep()["pruned"] == 1
    # Newest two are newest_pinned and middle[1]; middle[0] goes; the old pinned one stays regardless.
    assert live_ids() == [oldest_pinned.checkpoint_id, middle[1].checkpoint_id, newest_pinned.checkpoint_id]


def test_it_applies_ttl_before_keep_latest_so_nothing_is_counted_twice(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    make_checkpoint(workspace, "t1", ttl_seconds=30)
    make_checkpoint(workspace, "t1")
    make_checkpoint(workspace, "t1", ttl_seconds=30)
    newest = make_checkpoint(workspace, "t1")
    Workspace.objects.filter(pk=workspace.pk).update(keep_latest=1)
    time_machine.move_to(T0 + timedelta(seconds=30), tick=False)
    assert retention_sweep() == {"expired": 2, "pruned": 1, "workspaces": 1}
    assert live_ids() == [newest.checkpoint_id]


def test_it_is_idempotent_a_second_sweep_finds_nothing_and_audits_nothing(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    make_due_checkpoints(workspace, ["t1"] * 3, time_machine, T0)
    assert retention_sweep()["expired"] == 3
    events = AuditEvent.objects.filter(action="retention.sweep").count()
    assert retention_sweep() == NOTHING
    assert AuditEvent.objects.filter(action="retention.sweep").count() == events == 1


def test_it_writes_one_audit_event_per_workspace_touched_with_its_counts(
    workspace: Workspace, other_workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    untouched = WorkspaceFactory.create(slug="quiet")
    time_machine.move_to(T0, tick=False)
    first = make_checkpoint(workspace, "t1", ttl_seconds=1)
    second = make_checkpoint(workspace, "t2", ttl_seconds=1)
    make_checkpoint(other_workspace, "t1", ttl_seconds=1)
    make_checkpoint(untouched, "t1")
    time_machine.move_to(T0 + timedelta(seconds=5), tick=False)

    assert retention_sweep(batch_size=1) == {"expired": 3, "pruned": 0, "workspaces": 2}
    events = {e.workspace.slug: e for e in AuditEvent.objects.filter(action="retention.sweep")}
    assert set(events) == {"acme", "globex"}
    assert events["acme"].details == {
        "expired": 2,
        "pruned": 0,
        "as_of": "2026-03-01T12:00:05.000000Z",
        "complete": True,
        "checkpoints": {
            "expired": [
                {"thread_id": "t1", "namespace": "", "checkpoint_id": first.checkpoint_id},
                {"thread_id": "t2", "namespace": "", "checkpoint_id": second.checkpoint_id},
            ],
            "pruned": [],
        },
    }
    assert events["globex"].details["expired"] == 1
    assert events["acme"].actor_type == AuditEvent.ActorType.SYSTEM
    assert events["acme"].actor_label == "retention"


def test_it_sweeps_one_workspace_when_asked_and_audits_in_the_callers_name(
    workspace: Workspace, other_workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    mine = make_checkpoint(workspace, "t1", ttl_seconds=1)
    theirs = make_checkpoint(other_workspace, "t1", ttl_seconds=1)
    time_machine.move_to(T0 + timedelta(seconds=1), tick=False)
    actor = Actor.system("operator")
    assert retention_sweep(workspace=workspace, actor=actor)["expired"] == 1
    assert Checkpoint.objects.get(pk=mine.pk).expired_at is not None
    assert Checkpoint.objects.get(pk=theirs.pk).expired_at is None
    assert AuditEvent.objects.get(action="retention.sweep").actor_label == "operator"


def test_it_processes_every_row_in_batches_with_a_query_count_independent_of_the_rows(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    make_due_checkpoints(workspace, [f"t{n % 3}" for n in range(7)], time_machine, T0)
    assert retention_sweep(batch_size=3) == {"expired": 7, "pruned": 0, "workspaces": 1}
    assert not Checkpoint.objects.filter(expired_at__isnull=True).exists()

    def queries_for(rows: int, thread: str) -> int:
        make_due_checkpoints(workspace, [thread] * rows, time_machine, T0 + timedelta(days=1))
        with CaptureQueriesContext(connection) as captured:
            assert retention_sweep(batch_size=100)["expired"] == rows
        return len(captured)

    assert queries_for(2, "few") == queries_for(40, "many")


def test_it_moves_the_head_back_and_bumps_the_threads_state_version(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    first = make_checkpoint(workspace, "t1")
    make_checkpoint(workspace, "t1", ttl_seconds=1)
    version = Thread.objects.get(thread_id="t1").state_version
    time_machine.move_to(T0 + timedelta(seconds=1), tick=False)
    retention_sweep()
    assert Thread.objects.get(thread_id="t1").state_version == version + 1
    assert live_ids() == [first.checkpoint_id]
