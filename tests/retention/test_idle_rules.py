"""Which rule deletes an idle thread: pins keep it, the thread's own idle expiry replaces the workspace's,
and the preview, the expiry and the displayed date agree (docs/retention.md)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import call_command

from checkpoints.models import AuditEvent, Checkpoint, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire, checkpoint_set_ttl
from checkpoints.services.idle_expiry import idle_threads, with_idle_expiry
from checkpoints.services.messages import messages_append
from checkpoints.services.retention import retention_preview, retention_sweep, threads_expire_idle
from checkpoints.services.threads import thread_create
from tests.factories import make_checkpoint, make_pending_write

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
DAY = timedelta(days=1)
ACTOR = Actor.system("test")


def set_policy(workspace: Workspace, idle_seconds: int | None) -> None:
    Workspace.objects.filter(pk=workspace.pk).update(thread_idle_ttl_seconds=idle_seconds)
    workspace.refresh_from_db()


def remaining() -> set[str]:
    return set(Thread.objects.values_list("thread_id", flat=True))


def test_a_thread_holding_a_pinned_checkpoint_outlives_the_workspace_idle_rule(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    set_policy(workspace, 1)
    kept = make_checkpoint(workspace, "kept", state={"keep": "me"})
    checkpoint_set_ttl(checkpoint=kept, actor=ACTOR, pinned=True)
    make_checkpoint(workspace, "plain")

    time_machine.move_to(T0 + DAY, tick=False)
    call_command("sweep_expired", "--all", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert threads_expire_idle() == 0

    assert remaining() == {"kept"}
    row = Checkpoint.objects.get(pk=kept.pk)
    assert row.pinned and row.expired_at is None and row.is_readable(T0 + DAY)
    assert row.state is not None


def test_a_thread_holding_a_pinned_checkpoint_in_another_namespace_is_kept_too(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    set_policy(workspace, 60)
    make_checkpoint(workspace, "t1")
    sub = make_checkpoint(workspace, "t1", namespace="sub")
    checkpoint_set_ttl(checkpoint=sub, actor=ACTOR, pinned=True)
    time_machine.move_to(T0 + DAY, tick=False)
    assert threads_expire_idle() == 0
    # Unpinned, its idle clock (restarted by the unpin, a write) applies again.
    checkpoint_set_ttl(checkpoint=sub, actor=ACTOR, pinned=False)
    time_machine.move_to(T0 + DAY + timedelta(seconds=60), tick=False)
    assert threads_expire_idle() == 1
    assert remaining() == set()


def test_a_tombstone_that_was_pinned_keeps_nothing(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    set_policy(workspace, 60)
    gone = make_checkpoint(workspace, "t1")
    checkpoint_expire(checkpoint=gone, actor=ACTOR)
    # A tombstone is no pin even if its row says pinned (only live pinned checkpoints keep a thread).
    Checkpoint.objects.filter(pk=gone.pk).update(pinned=True)
    time_machine.move_to(T0 + timedelta(seconds=60), tick=False)
    assert threads_expire_idle() == 1


@pytest.mark.parametrize("workspace_idle", [1, 7 * 86400])
def test_a_thread_with_its_own_longer_idle_expiry_outlives_the_workspace_rule(
    workspace: Workspace, workspace_idle: int, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    set_policy(workspace, workspace_idle)
    thread_create(workspace=workspace, actor=ACTOR, thread_id="audited", ttl_seconds=90 * 86400)
    make_checkpoint(workspace, "audited")
    make_checkpoint(workspace, "ordinary")

    time_machine.move_to(T0 + 8 * DAY, tick=False)
    call_command("sweep_expired", "--all", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert remaining() == {"audited"}

    time_machine.move_to(T0 + 90 * DAY - timedelta(microseconds=1), tick=False)
    assert threads_expire_idle() == 0
    time_machine.move_to(T0 + 90 * DAY, tick=False)
    assert threads_expire_idle() == 1
    assert remaining() == set()
    event = AuditEvent.objects.get(action="thread.expire", target_id="audited")
    assert event.details["expiry_source"] == "thread"
    assert event.details["idle_ttl_seconds"] == 90 * 86400


def test_a_thread_with_its_own_shorter_idle_expiry_goes_at_its_own_date(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    set_policy(workspace, 7 * 86400)
    thread_create(workspace=workspace, actor=ACTOR, thread_id="short", ttl_seconds=3600)
    make_checkpoint(workspace, "ordinary")

    time_machine.move_to(T0 + timedelta(hours=1), tick=False)
    assert threads_expire_idle() == 1
    assert remaining() == {"ordinary"}
    time_machine.move_to(T0 + 7 * DAY, tick=False)
    assert threads_expire_idle() == 1
    event = AuditEvent.objects.get(action="thread.expire", target_id="ordinary")
    assert (event.details["expiry_source"], event.details["idle_ttl_seconds"]) == ("workspace", 7 * 86400)


def test_the_preview_lists_exactly_the_threads_the_expiry_then_deletes(
    workspace: Workspace, other_workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    time_machine.move_to(T0, tick=False)
    set_policy(workspace, 7 * 86400)
    set_policy(other_workspace, 86400)
    thread_create(workspace=workspace, actor=ACTOR, thread_id="own-long", ttl_seconds=90 * 86400)
    thread_create(workspace=workspace, actor=ACTOR, thread_id="own-short", ttl_seconds=3600)
    thread_create(workspace=workspace, actor=ACTOR, thread_id="pinned-thread", pinned=True)
    for thread_id in ("by-workspace", "holds-pin", "own-long", "own-short"):
        make_checkpoint(workspace, thread_id)
    checkpoint_set_ttl(checkpoint=make_checkpoint(workspace, "holds-pin"), actor=ACTOR, pinned=True)
    make_checkpoint(other_workspace, "theirs")
    time_machine.move_to(T0 + 3 * DAY, tick=False)
    make_checkpoint(workspace, "recent")

    time_machine.move_to(T0 + 8 * DAY, tick=False)
    preview = retention_preview(workspace=workspace)
    listed = {s["thread_id"] for s in preview["idle_threads"]["sample"]}
    assert listed == {"by-workspace", "own-short"}
    assert preview["idle_threads"]["count"] == 2

    before = remaining()
    assert threads_expire_idle() == 3  # and "theirs", in the other workspace
    deleted = before - remaining()
    assert deleted - {"theirs"} == listed
    assert retention_preview(workspace=workspace)["idle_threads"] == {"count": 0, "sample": []}
    assert retention_sweep() == {"expired": 0, "pruned": 0, "workspaces": 0}


# Every combination of the rules, each thread a case: what the display says is what the expiry does.
CASES = list(
    itertools.product(
        [None, 60, 7200],  # the thread's own idle expiry
        [False, True],  # the thread pinned
        ["none", "pinned", "pinned-tombstone"],  # a checkpoint kept or not
        [0, 30, 90, 10_000],  # seconds since the last write
    )
)


@pytest.mark.parametrize("workspace_idle", [None, 1, 120, 3600])
def test_the_displayed_date_the_preview_and_the_expiry_agree_on_every_combination(
    workspace: Workspace, workspace_idle: int | None, time_machine: time_machine.TimeMachineFixture
) -> None:
    set_policy(workspace, workspace_idle)
    for n, (own_ttl, pinned, checkpoint, idle_for) in enumerate(CASES):
        time_machine.move_to(T0 - timedelta(seconds=idle_for), tick=False)
        thread_id = f"c{n}"
        thread_create(
            workspace=workspace, actor=ACTOR, thread_id=thread_id, ttl_seconds=own_ttl, pinned=pinned
        )
        if checkpoint != "none":
            saved = make_checkpoint(workspace, thread_id, pinned=True)
            if checkpoint == "pinned-tombstone":
                Checkpoint.objects.filter(pk=saved.pk).update(expired_at=T0 - timedelta(days=400))
    time_machine.move_to(T0, tick=False)

    shown = {
        t.thread_id: (t.effective_expires_at, t.expiry_source)  # type: ignore[attr-defined]
        for t in with_idle_expiry(Thread.objects.all())
    }
    for n, (own_ttl, pinned, checkpoint, idle_for) in enumerate(CASES):
        last_write = T0 - timedelta(seconds=idle_for)
        expected: tuple[datetime | None, str | None]
        if pinned or checkpoint == "pinned":
            expected = (None, "pinned")
        elif own_ttl:
            expected = (last_write + timedelta(seconds=own_ttl), "thread")
        elif workspace_idle:
            expected = (last_write + timedelta(seconds=workspace_idle), "workspace")
        else:
            expected = (None, None)
        assert shown[f"c{n}"] == expected, CASES[n]
    # The same with the workspace's policy given as an object (the preview's way).
    assert {
        t.thread_id: (t.effective_expires_at, t.expiry_source)  # type: ignore[attr-defined]
        for t in with_idle_expiry(Thread.objects.all(), workspace=workspace)
    } == shown

    due = {thread_id for thread_id, (date, _) in shown.items() if date is not None and date <= T0}
    assert set(idle_threads(now=T0).values_list("thread_id", flat=True)) == due
    preview = retention_preview(workspace=workspace, now=T0)["idle_threads"]
    assert preview["count"] == len(due)
    assert threads_expire_idle(now=T0) == len(due)
    assert remaining() == set(shown) - due


@pytest.mark.django_db(transaction=True)  # outside a transaction, so PostgreSQL takes the hot path
def test_every_kind_of_write_restarts_the_threads_own_idle_clock(
    workspace: Workspace, time_machine: time_machine.TimeMachineFixture
) -> None:
    """On PostgreSQL, outside a transaction, saves, pending writes and appends take the hot path's own SQL
    (`storage.append_sql`); the date it writes is the one `expires_after` gives and the expiry acts on."""
    time_machine.move_to(T0, tick=False)
    set_policy(workspace, 60)  # shorter than the thread's own: it does not apply
    thread_create(workspace=workspace, actor=ACTOR, thread_id="t1", ttl_seconds=3600)
    minute = timedelta(minutes=1)
    writes = [
        lambda: make_checkpoint(workspace, "t1"),
        lambda: make_pending_write(Checkpoint.objects.get(thread__thread_id="t1")),
        lambda: messages_append(workspace=workspace, thread_id="t1", messages=[{"role": "user"}]),
        lambda: checkpoint_set_ttl(
            checkpoint=Checkpoint.objects.get(thread__thread_id="t1"), actor=ACTOR, ttl_seconds=30
        ),
    ]
    for n, write in enumerate(writes, start=1):
        time_machine.move_to(T0 + 10 * n * minute, tick=False)
        write()
        thread = with_idle_expiry(Thread.objects.filter(thread_id="t1")).get()
        expected = T0 + 10 * n * minute + timedelta(hours=1)
        assert (thread.expires_at, thread.effective_expires_at, thread.expiry_source) == (  # type: ignore[attr-defined]
            expected,
            expected,
            "thread",
        ), n
    time_machine.move_to(T0 + 100 * minute - timedelta(microseconds=1), tick=False)
    assert threads_expire_idle() == 0
    time_machine.move_to(T0 + 100 * minute, tick=False)
    assert threads_expire_idle() == 1
