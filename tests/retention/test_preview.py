"""The dry run reports exactly what the sweep, the purge and the idle-thread expiry then do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from checkpoints.models import AuditEvent, Checkpoint, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire
from checkpoints.services.retention import (
    retention_preview,
    retention_sweep,
    threads_expire_idle,
    tombstones_purge,
)
from tests.factories import make_checkpoint, make_due_checkpoints

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def refs(queryset: object) -> set[tuple[str, str, str]]:
    return {(c.thread.thread_id, c.namespace, c.checkpoint_id) for c in queryset}  # type: ignore[attr-defined]


def sample_refs(rule: dict[str, object]) -> set[tuple[str, str, str]]:
    return {(s["thread_id"], s["namespace"], s["checkpoint_id"]) for s in rule["sample"]}  # type: ignore[attr-defined]


@pytest.fixture
def busy_workspace(
    workspace: Workspace, other_workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> Workspace:
    """A workspace where every rule has work, next to another workspace whose rows must not show up."""
    Workspace.objects.filter(pk=workspace.pk).update(
        keep_latest=2, thread_idle_ttl_seconds=3600, tombstone_retention_seconds=600
    )
    workspace.refresh_from_db()
    time_machine.move_to(T0, tick=False)
    old = make_checkpoint(workspace, "old-thread", state={"n": 0})  # idle for > 1 h by the end
    checkpoint_expire(checkpoint=old, actor=Actor.system("test"))  # a tombstone > 600 s old by the end
    for _ in range(4):
        make_checkpoint(other_workspace, "theirs", ttl_seconds=1)
    time_machine.move_to(T0 + timedelta(minutes=50), tick=False)
    for n in range(4):
        make_checkpoint(workspace, "busy", state={"n": n})  # 2 beyond keep_latest
    make_checkpoint(workspace, "busy", namespace="sub", ttl_seconds=60, state={"n": "x"})  # expires
    time_machine.move_to(T0 + timedelta(minutes=70), tick=False)
    return workspace


def test_it_reports_each_rule_with_counts_and_samples_and_changes_nothing(busy_workspace: Workspace) -> None:
    before = list(Checkpoint.objects.order_by("pk").values_list("pk", "expired_at", "state"))
    preview = retention_preview(workspace=busy_workspace)
    assert preview["as_of"] == "2026-03-01T13:10:00.000000Z"
    assert preview["policy"] == {
        "default_ttl_seconds": None,
        "keep_latest": 2,
        "thread_idle_ttl_seconds": 3600,
        "tombstone_retention_seconds": 600,
        "auto_summarize_every": None,
    }
    assert {rule: preview[rule]["count"] for rule in ("expired", "pruned", "purged", "idle_threads")} == {
        "expired": 1,
        "pruned": 2,
        # The old tombstone, and the expired checkpoint: its tombstone will be 19 minutes old (> 600 s).
        "purged": 2,
        "idle_threads": 1,
    }
    assert preview["idle_threads"]["sample"] == [{"thread_id": "old-thread"}]
    assert list(Checkpoint.objects.order_by("pk").values_list("pk", "expired_at", "state")) == before
    assert not AuditEvent.objects.filter(action__startswith="retention.").exists()


def test_it_matches_what_the_sweep_purge_and_idle_expiry_then_do(busy_workspace: Workspace) -> None:
    preview = retention_preview(workspace=busy_workspace)
    live_before = set(Checkpoint.objects.filter(expired_at__isnull=True).values_list("pk", flat=True))

    counts = retention_sweep(workspace=busy_workspace)
    assert (counts["expired"], counts["pruned"]) == (preview["expired"]["count"], preview["pruned"]["count"])
    swept = Checkpoint.objects.filter(pk__in=live_before, expired_at__isnull=False).select_related("thread")
    assert refs(swept) == sample_refs(preview["expired"]) | sample_refs(preview["pruned"])

    purgeable = sample_refs(preview["purged"])
    before_purge = refs(Checkpoint.objects.select_related("thread"))
    assert tombstones_purge() == preview["purged"]["count"]
    assert before_purge - refs(Checkpoint.objects.select_related("thread")) == purgeable

    assert threads_expire_idle() == preview["idle_threads"]["count"]
    assert not Thread.objects.filter(workspace=busy_workspace, thread_id="old-thread").exists()

    # Everything previewed is done: a preview now finds nothing left in any rule.
    after = retention_preview(workspace=busy_workspace)
    assert [after[rule]["count"] for rule in ("expired", "pruned", "purged", "idle_threads")] == [0, 0, 0, 0]


def test_it_caps_samples_but_counts_everything(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    make_due_checkpoints(workspace, [f"t{n}" for n in range(25)], time_machine, T0)
    preview = retention_preview(workspace=workspace)
    assert preview["expired"]["count"] == 25
    assert len(preview["expired"]["sample"]) == 20
