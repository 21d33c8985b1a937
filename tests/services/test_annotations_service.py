"""The annotation service: its rules, its audit events, and what happens to annotations when their thread or
checkpoint goes (thread delete, idle expiry, prune, tombstone purge)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from time_machine import TimeMachineFixture

from checkpoints.exceptions import NotFound, ValidationFailed
from checkpoints.models import Annotation, AuditEvent, Checkpoint, Thread, Workspace
from checkpoints.services.annotations import (
    annotation_create,
    annotation_delete,
    annotation_get,
    checkpoint_annotations,
    thread_annotations,
)
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire
from checkpoints.services.retention import threads_expire_idle, tombstones_purge
from checkpoints.services.threads import thread_delete, thread_prune
from tests.factories import make_checkpoint

pytestmark = pytest.mark.django_db

AUDITOR = Actor.system("auditor")
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock(time_machine: TimeMachineFixture) -> TimeMachineFixture:
    """The clock, stopped at T0."""
    time_machine.move_to(T0, tick=False)
    return time_machine


def _thread(checkpoint: Checkpoint) -> Thread:
    return Thread.objects.select_related("workspace").get(pk=checkpoint.thread_id)


def _assert_gone_with_one_checkpoint(action: str, counted: str = "checkpoints") -> None:
    """No annotation is left, and the audit event `action` counts the one checkpoint that went (in
    `details[counted]`), not the annotations that went with it."""
    assert not Annotation.objects.exists()
    assert AuditEvent.objects.get(action=action).details[counted] == 1


def test_it_creates_lists_and_deletes_auditing_each_write(workspace: Workspace) -> None:
    checkpoint = make_checkpoint(workspace, "t1", checkpoint_id="c1", agent_id="planner")
    thread = _thread(checkpoint)
    on_thread = annotation_create(thread=thread, actor=AUDITOR, comment="overall ok", verdict="correct")
    on_step = annotation_create(thread=thread, actor=AUDITOR, comment="bad", checkpoint=checkpoint)
    assert list(thread_annotations(thread=thread)) == [on_step, on_thread]
    assert checkpoint_annotations([checkpoint.pk, 999_999]) == {checkpoint.pk: [on_step]}
    assert checkpoint_annotations([]) == {}
    assert (on_step.actor_type, on_step.actor_label, on_step.verdict) == ("system", "auditor", "")

    found = annotation_get(workspace=workspace, thread=thread, annotation_id=on_step.annotation_id)
    annotation_delete(annotation=found, actor=AUDITOR)
    with pytest.raises(NotFound):
        annotation_delete(annotation=found, actor=AUDITOR)  # deleted meanwhile: audited once
    events = AuditEvent.objects.filter(target_type="annotation").order_by("id")
    assert [(e.action, e.target_id) for e in events] == [
        ("annotation.create", str(on_thread.annotation_id)),
        ("annotation.create", str(on_step.annotation_id)),
        ("annotation.delete", str(on_step.annotation_id)),
    ]
    assert events[2].details == {
        "thread_id": "t1",
        "checkpoint_id": "c1",
        "comment": "bad",
        "verdict": None,
        "author": "auditor",
    }
    assert list(Annotation.objects.all()) == [on_thread]


@pytest.mark.parametrize(
    ("comment", "verdict", "field"),
    [("", "", "comment"), ("x" * 5_001, "", "comment"), ("a\x00b", "", "comment"), ("x", "maybe", "verdict")],
)
def test_it_refuses_what_breaks_the_rules(
    workspace: Workspace, comment: str, verdict: str, field: str
) -> None:
    thread = _thread(make_checkpoint(workspace, "t1"))
    with pytest.raises(ValidationFailed) as error:
        annotation_create(thread=thread, actor=AUDITOR, comment=comment, verdict=verdict)
    assert field in error.value.details["fields"]
    assert (
        not Annotation.objects.exists() and not AuditEvent.objects.filter(target_type="annotation").exists()
    )


def test_it_refuses_a_checkpoint_of_another_thread(workspace: Workspace) -> None:
    thread = _thread(make_checkpoint(workspace, "t1"))
    elsewhere = make_checkpoint(workspace, "t2")
    with pytest.raises(ValidationFailed) as error:
        annotation_create(thread=thread, actor=AUDITOR, comment="x", checkpoint=elsewhere)
    assert error.value.details == {"fields": {"checkpoint_id": ["This checkpoint is not in the thread."]}}


def test_another_workspaces_annotation_is_not_found(workspace: Workspace, other_workspace: Workspace) -> None:
    thread = _thread(make_checkpoint(workspace, "t1"))
    annotation = annotation_create(thread=thread, actor=AUDITOR, comment="x")
    with pytest.raises(NotFound):
        annotation_get(workspace=other_workspace, thread=thread, annotation_id=annotation.annotation_id)


def test_deleting_the_thread_deletes_its_annotations(workspace: Workspace) -> None:
    checkpoint = make_checkpoint(workspace, "t1")
    thread = _thread(checkpoint)
    annotation_create(thread=thread, actor=AUDITOR, comment="x", checkpoint=checkpoint)
    annotation_create(thread=thread, actor=AUDITOR, comment="y")
    thread_delete(thread=thread, actor=AUDITOR)
    _assert_gone_with_one_checkpoint("thread.delete")


def test_idle_expiry_deletes_the_threads_annotations(workspace: Workspace, clock: TimeMachineFixture) -> None:
    checkpoint = make_checkpoint(workspace, "t1")
    Thread.objects.filter(pk=checkpoint.thread_id).update(
        ttl_seconds=60, expires_at=T0 + timedelta(seconds=60)
    )
    annotation_create(thread=_thread(checkpoint), actor=AUDITOR, comment="x", checkpoint=checkpoint)
    clock.move_to(T0 + timedelta(seconds=60), tick=False)
    assert threads_expire_idle() == 1
    _assert_gone_with_one_checkpoint("thread.expire")


def test_prune_and_purge_count_checkpoints_not_the_annotations_going_with_them(
    workspace: Workspace, clock: TimeMachineFixture
) -> None:
    old = make_checkpoint(workspace, "t1")
    make_checkpoint(workspace, "t1")
    thread = _thread(old)
    for n in range(3):
        annotation_create(thread=thread, actor=AUDITOR, comment=f"on old {n}", checkpoint=old)
    assert thread_prune(thread=thread, strategy="keep_latest", actor=AUDITOR) == 1
    _assert_gone_with_one_checkpoint("thread.prune")

    Workspace.objects.filter(pk=workspace.pk).update(tombstone_retention_seconds=100)
    doomed = make_checkpoint(workspace, "t2")
    annotation_create(thread=_thread(doomed), actor=AUDITOR, comment="a", checkpoint=doomed)
    annotation_create(thread=_thread(doomed), actor=AUDITOR, comment="b", checkpoint=doomed)
    checkpoint_expire(checkpoint=doomed, actor=AUDITOR)
    clock.move_to(T0 + timedelta(seconds=100), tick=False)
    assert tombstones_purge() == 1
    _assert_gone_with_one_checkpoint("retention.purge", counted="purged")
