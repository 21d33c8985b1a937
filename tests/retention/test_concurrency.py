"""Sweeps racing each other and racing writers, on PostgreSQL with one connection per thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from checkpoints.exceptions import Gone
from checkpoints.models import AuditEvent, Checkpoint, Thread, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_set_ttl
from checkpoints.services.retention import retention_sweep, threads_expire_idle
from tests.factories import WorkspaceFactory, make_checkpoint

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def run_together(*jobs: Callable[[], Any]) -> list[Any]:
    """Run the callables at the same moment, each in a thread with its own database connection."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)
    errors: list[BaseException] = []

    def run(index: int, job: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = job()
        except BaseException as exc:  # surfaced in the test thread below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    return results


def pinning(
    saved: list[Checkpoint], acknowledged: list[int], *, refused: tuple[type[Exception], ...]
) -> Callable[[], None]:
    """A writer that pins each checkpoint in turn, recording in `acknowledged` the pk of each pin that
    succeeded (a pin refused with one of `refused` is skipped: the other side got there first)."""

    def pin_all() -> None:
        for checkpoint in saved:
            try:
                checkpoint_set_ttl(checkpoint=checkpoint, actor=Actor.system("test"), pinned=True)
            except refused:
                continue
            acknowledged.append(checkpoint.pk)

    return pin_all


def test_it_two_concurrent_sweeps_tombstone_every_row_exactly_once() -> None:
    workspaces = [WorkspaceFactory.create(slug=f"ws{n}") for n in range(3)]
    Workspace.objects.filter(slug="ws2").update(keep_latest=1)
    for n in range(150):
        make_checkpoint(workspaces[n % 3], f"t{n % 25}", ttl_seconds=60, state={"n": n})
    # Live extras beyond keep_latest=1 in ws2: every thread there ends with one live checkpoint.
    for n in range(40):
        make_checkpoint(workspaces[2], f"k{n % 8}", state={"k": n})
    later = timezone.now() + timedelta(minutes=5)

    first, second = run_together(
        lambda: retention_sweep(now=later, batch_size=7), lambda: retention_sweep(now=later, batch_size=7)
    )

    assert first["expired"] + second["expired"] == 150
    assert first["pruned"] + second["pruned"] == 40 - 8
    assert not Checkpoint.objects.filter(expired_at__isnull=True, expires_at__isnull=False).exists()
    assert Checkpoint.objects.filter(workspace=workspaces[2], expired_at__isnull=True).count() == 8
    # The audit trail adds up to the same totals: nothing counted twice, nothing missed.
    events = AuditEvent.objects.filter(action="retention.sweep")
    assert sum(e.details["expired"] for e in events) == 150
    assert sum(e.details["pruned"] for e in events) == 32
    assert retention_sweep(now=later) == {"expired": 0, "pruned": 0, "workspaces": 0}


def test_it_a_sweep_racing_writers_that_pin_never_deadlocks_or_tombstones_a_pinned_row() -> None:
    workspace = WorkspaceFactory.create(slug="acme")
    saved = [make_checkpoint(workspace, f"t{n % 10}", ttl_seconds=3600, state={"n": n}) for n in range(60)]
    later = timezone.now() + timedelta(hours=2)
    pinned: list[int] = []
    pin_all = pinning(saved, pinned, refused=(Gone,))  # Gone: the sweep got there first

    sweep_counts, _ = run_together(lambda: retention_sweep(now=later, batch_size=5), pin_all)

    rows = Checkpoint.objects.filter(pk__in=[c.pk for c in saved])
    assert not rows.filter(pinned=True, expired_at__isnull=False).exists()
    assert rows.filter(expired_at__isnull=False).count() == sweep_counts["expired"]
    assert rows.filter(pinned=True).count() == len(pinned)
    assert sweep_counts["expired"] + len(pinned) == 60


def test_it_two_concurrent_idle_expiries_delete_and_audit_each_thread_once() -> None:
    workspace = WorkspaceFactory.create(slug="acme")
    for n in range(30):
        make_checkpoint(workspace, f"idle-{n}")
    Workspace.objects.filter(pk=workspace.pk).update(thread_idle_ttl_seconds=60)
    later = timezone.now() + timedelta(minutes=5)

    first, second = run_together(
        lambda: threads_expire_idle(now=later), lambda: threads_expire_idle(now=later)
    )

    assert first + second == 30
    assert not Thread.objects.exists()
    assert AuditEvent.objects.filter(action="thread.expire").count() == 30
    assert (
        len(set(AuditEvent.objects.filter(action="thread.expire").values_list("target_id", flat=True))) == 30
    )


@pytest.mark.parametrize("order", ["forward", "backward"])
def test_it_an_idle_expiry_racing_pins_never_deletes_a_checkpoint_whose_pin_was_acknowledged(
    order: str,
) -> None:
    workspace = WorkspaceFactory.create(slug="acme")
    Workspace.objects.filter(pk=workspace.pk).update(thread_idle_ttl_seconds=60)
    saved = [make_checkpoint(workspace, f"t{n}", state={"n": n}) for n in range(40)]
    if order == "backward":
        saved.reverse()
    # A pin touches its thread, but at the real time: by `later` the workspace rule alone would delete it
    # again. Only the pin keeps the thread.
    later = timezone.now() + timedelta(minutes=5)
    acknowledged: list[int] = []
    # Refused, not acknowledged, when the expiry deleted the thread first.
    pin_all = pinning(saved, acknowledged, refused=(Thread.DoesNotExist, Checkpoint.DoesNotExist, Gone))

    deleted, _ = run_together(lambda: threads_expire_idle(now=later), pin_all)

    kept = Checkpoint.objects.filter(pk__in=acknowledged, pinned=True, expired_at__isnull=True)
    assert kept.count() == len(acknowledged)
    assert Thread.objects.count() == len(acknowledged) == 40 - deleted
    # A later expiry keeps every thread that holds a pin.
    assert threads_expire_idle(now=later + timedelta(days=1)) == 0


def test_it_an_idle_expiry_skips_a_thread_while_a_pin_is_being_written_and_then_keeps_it() -> None:
    workspace = WorkspaceFactory.create(slug="acme")
    Workspace.objects.filter(pk=workspace.pk).update(thread_idle_ttl_seconds=60)
    saved = make_checkpoint(workspace, "t1", state={"keep": True})
    later = timezone.now() + timedelta(minutes=5)
    pin_written, expiry_done = threading.Event(), threading.Event()

    def pin() -> None:
        with transaction.atomic():  # the pin holds the thread's row lock until it commits
            checkpoint_set_ttl(checkpoint=saved, actor=Actor.system("test"), pinned=True)
            pin_written.set()
            assert expiry_done.wait(timeout=30)

    def expire() -> int:
        assert pin_written.wait(timeout=30)
        try:
            return threads_expire_idle(now=later)
        finally:
            expiry_done.set()

    _, deleted = run_together(pin, expire)

    assert deleted == 0  # the thread was locked: skipped, not waited for
    assert threads_expire_idle(now=later) == 0  # committed: the pin keeps it
    row = Checkpoint.objects.get(pk=saved.pk)
    assert row.pinned and row.expired_at is None
