"""factory_boy factories. Checkpoints go through the save service so their checksums are real."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import factory
import time_machine

from checkpoints.models import Checkpoint, Thread, Workspace
from checkpoints.services.checkpoints import checkpoint_save, pending_writes_put


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workspace
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"ws-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class ThreadFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Thread

    workspace = factory.SubFactory(WorkspaceFactory)
    thread_id = factory.Sequence(lambda n: f"thread-{n}")


def make_checkpoint(workspace: Workspace, thread_id: str = "t1", **kwargs: Any) -> Checkpoint:
    """Save a checkpoint through the service (real checksum, parent defaults to the head)."""
    kwargs.setdefault("agent_id", "agent-1")
    kwargs.setdefault("state", {"step": 1})
    return checkpoint_save(workspace=workspace, thread_id=thread_id, **kwargs).checkpoint


def make_due_checkpoints(
    workspace: Workspace, thread_ids: Iterable[str], clock: time_machine.TimeMachineFixture, at: datetime
) -> None:
    """Save a checkpoint with a one-second TTL in each of `thread_ids` at `at`, then move `clock` on to
    one second later, when every one of them is due to expire."""
    clock.move_to(at, tick=False)
    for thread_id in thread_ids:
        make_checkpoint(workspace, thread_id, ttl_seconds=1)
    clock.move_to(at + timedelta(seconds=1), tick=False)


def make_pending_write(
    checkpoint: Checkpoint,
    value: Any = 1,
    *,
    channel: str = "c",
    task_id: str = "task",
    task_path: str = "",
    idx: int | None = None,
) -> None:
    """Store one pending write for a saved checkpoint through the service (at `idx`, default 0)."""
    write = {"channel": channel, "value": value} | ({} if idx is None else {"idx": idx})
    pending_writes_put(
        workspace=checkpoint.workspace,
        thread_id=checkpoint.thread.thread_id,
        namespace=checkpoint.namespace,
        checkpoint_id=checkpoint.checkpoint_id,
        task_id=task_id,
        task_path=task_path,
        writes=[write],
    )
