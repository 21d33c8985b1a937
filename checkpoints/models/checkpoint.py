"""Checkpoints (immutable snapshots of execution state) and LangGraph pending writes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, ClassVar

from django.db import models
from django.db.models import OuterRef, Q
from django.utils import timezone

from checkpoints.integrity import PAYLOAD_FIELDS
from checkpoints.models.readable import READABLE
from checkpoints.models.thread import Thread
from checkpoints.models.value import unpack_loaded, unpacked_in_batches
from checkpoints.models.workspace import Workspace

# The model attribute behind an API field name where the two differ (everywhere else they are the same).
_ATTRIBUTES = {"parent_id": "parent_checkpoint_id"}


def model_attribute(field: str) -> str:
    """The Checkpoint attribute holding the API's `field` (thread_id excepted: it is the thread's)."""
    return _ATTRIBUTES.get(field, field)


class CheckpointQuerySet(models.QuerySet["Checkpoint"]):
    """Packed documents come back whole (docs/storage.md) from every public way of reading checkpoints —
    iteration (`list()`, `for`, `first()`, a slice), an index, `get()`, `iterator()` — one query for the parts
    of a batch; `values()` and `values_list()` give them as stored."""

    def __iter__(self) -> Iterator[Any]:
        rows = list(super().__iter__())
        unpack_loaded(rows)
        return iter(rows)

    def __getitem__(self, k: Any) -> Any:
        got = super().__getitem__(k)
        unpack_loaded(got if isinstance(got, list) else [got])
        return got

    def get(self, *args: Any, **kwargs: Any) -> Any:
        found = super().get(*args, **kwargs)
        unpack_loaded([found])
        return found

    def iterator(self, chunk_size: int | None = None) -> Iterator[Any]:
        return unpacked_in_batches(super().iterator(chunk_size))

    def for_workspace(self, workspace: Workspace) -> CheckpointQuerySet:
        return self.filter(workspace=workspace)

    def in_thread(self, workspace: Workspace, thread_id: str) -> CheckpointQuerySet:
        """The workspace's checkpoints of the thread with this public id.

        The thread's workspace is named too, although the checkpoint's already implies it: PostgreSQL then
        finds the thread on its unique (workspace, thread_id) index. Given only the checkpoint's workspace,
        it reads that index by thread_id alone, a cost that grows with the number of threads (measured by
        `manage.py bench`: 4.5 ms instead of 0.16 ms at 100,000 threads).
        """
        return self.filter(workspace=workspace, thread__workspace=workspace, thread__thread_id=thread_id)

    def live(self, now: datetime | None = None) -> CheckpointQuerySet:
        """Checkpoints readable right now: the rule `readable.READABLE` (its SQL form serves the static
        statements of `checkpoints.storage`)."""
        return self.filter(READABLE.q(now or timezone.now()))

    def due_for_tombstone(self, now: datetime | None = None) -> CheckpointQuerySet:
        """Expired checkpoints that still carry a payload (what the retention sweep turns into tombstones):
        not tombstones and not readable, written so that PostgreSQL reads them from `checkpoint_expiring`
        (`tests/models/test_readable_rule.py` holds it equal to that)."""
        now = now or timezone.now()
        return self.filter(expired_at__isnull=True, pinned=False, expires_at__lte=now)

    def tombstones(self) -> CheckpointQuerySet:
        return self.filter(expired_at__isnull=False)

    def by_agent_in_thread(self, agent_id: str) -> CheckpointQuerySet:
        """The outer thread's checkpoints by `agent_id`, for `Exists()` in a thread query. The workspace is
        named too, so PostgreSQL reads them from `checkpoint_ws_agent`."""
        return self.filter(workspace=OuterRef("workspace"), thread=OuterRef("pk"), agent_id=agent_id)

    def newest_first(self) -> CheckpointQuerySet:
        """Creation order, newest first (the primary key grows with every insert)."""
        return self.order_by("-id")

    def without_payload(self) -> CheckpointQuerySet:
        """Skip the (possibly large) JSON documents: for lists and trees that never show them."""
        return self.defer(*PAYLOAD_FIELDS)


class Checkpoint(models.Model):
    """An immutable checkpoint. Only expiry and pinning ever change on a live row.

    state, context and metadata hold canonical JSON text (see checkpoints.integrity): the exact bytes that
    were hashed, so restore re-hashes without re-encoding and serves them without re-serialising.
    They are null on tombstones.
    """

    class Framework(models.TextChoices):
        LANGGRAPH = "langgraph"
        CREWAI = "crewai"
        AUTOGEN = "autogen"
        CUSTOM = "custom"

    # No single-column indexes on the two foreign keys: each leads composite indexes below (ws_*, the
    # unique id, the timelines), and a planner short of statistics would pick the bare column over them.
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="checkpoints", db_index=False)
    namespace = models.CharField(max_length=255, blank=True, default="")
    checkpoint_id = models.CharField(max_length=128)
    # The parent's checkpoint_id in the same thread and namespace (hashed, so it is a string, not a FK:
    # a purged tombstone parent must not rewrite its children).
    parent_checkpoint_id = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001
    agent_id = models.CharField(max_length=255)
    framework = models.CharField(max_length=16, choices=Framework.choices, default=Framework.CUSTOM)
    schema_version = models.CharField(max_length=32, default="1.0")
    step_index = models.BigIntegerField(default=0)
    # Optional strings are null when absent: the hashed record tells "absent" from "empty".
    step_name = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    run_id = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    state = models.TextField(null=True, blank=True)  # noqa: DJ001
    context = models.TextField(null=True, blank=True)  # noqa: DJ001
    metadata = models.TextField(null=True, blank=True)  # noqa: DJ001
    handoff_target = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    handoff_from = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    # Who wrote it: "key:<prefix>" (an API key) or "user:<username>" (the dashboard); "" for rows written
    # before it was recorded. Provenance, not content: outside the checksum, kept by an idempotent retry.
    written_by = models.CharField(max_length=160, blank=True, default="")
    message_seq = models.BigIntegerField(default=0)
    checksum = models.CharField(max_length=64)
    size_bytes = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    pinned = models.BooleanField(default=False)
    expired_at = models.DateTimeField(null=True, blank=True, help_text="Set when the row became a tombstone.")

    objects = CheckpointQuerySet.as_manager()
    # Parts a packed document names that are not stored, found when it was loaded (docs/storage.md).
    missing_parts: tuple[str, ...] = ()

    class Meta:
        # Loading a deferred document goes through the base manager: it must fill packed parts in too.
        base_manager_name = "objects"
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["thread", "namespace", "checkpoint_id"], name="checkpoint_unique_id"
            ),
        ]
        indexes: ClassVar = [
            # Ascending on id, read backwards for newest-first: new rows land on the rightmost page, which
            # splits full; in descending order every insert split a page in half (docs/storage.md, "Indexes").
            # Head lookups and per-namespace timelines: newest live row first, no scan.
            models.Index(
                fields=["thread", "namespace", "id"],
                name="checkpoint_head",
                condition=Q(expired_at__isnull=True),
            ),
            models.Index(fields=["thread", "id"], name="checkpoint_thread_timeline"),
            models.Index(fields=["workspace", "id"], name="checkpoint_ws_timeline"),
            # The dashboard's activity and storage charts: one window of a workspace, grouped by hour or day.
            models.Index(fields=["workspace", "created_at"], name="checkpoint_ws_created"),
            models.Index(fields=["workspace", "agent_id", "id"], name="checkpoint_ws_agent"),
            models.Index(
                fields=["workspace", "handoff_target", "id"],
                name="checkpoint_ws_inbox",
                condition=Q(handoff_target__isnull=False),
            ),
            models.Index(fields=["workspace", "checkpoint_id"], name="checkpoint_ws_public_id"),
            models.Index(
                fields=["workspace", "run_id"], name="checkpoint_ws_run", condition=Q(run_id__isnull=False)
            ),
            models.Index(
                fields=["expires_at"],
                name="checkpoint_expiring",
                condition=Q(expired_at__isnull=True, expires_at__isnull=False, pinned=False),
            ),
            models.Index(
                fields=["expired_at"], name="checkpoint_tombstones", condition=Q(expired_at__isnull=False)
            ),
            # The storage chart's bytes erased per day: one window of a workspace's tombstones.
            models.Index(
                fields=["workspace", "expired_at"],
                name="checkpoint_ws_expired",
                condition=Q(expired_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.namespace or '-'}/{self.checkpoint_id}"

    @property
    def is_tombstone(self) -> bool:
        return self.expired_at is not None

    def is_readable(self, now: datetime | None = None) -> bool:
        """The rule of CheckpointQuerySet.live() (`readable.READABLE`), for a row already in hand."""
        return READABLE.holds(self, now or timezone.now())

    def effective_expired_at(self, now: datetime | None = None) -> datetime | None:
        """When the row stopped being readable: the tombstone time, or the passed expiry not yet swept."""
        if self.expired_at is not None:
            return self.expired_at
        if not self.is_readable(now):
            return self.expires_at
        return None

    def decoded(self, field: str) -> Any:
        """The decoded JSON of state, context or metadata (None on tombstones)."""
        text = getattr(self, field)
        return None if text is None else json.loads(text)


class PendingWrite(models.Model):
    """A LangGraph pending write. Keyed by checkpoint id: the checkpoint row may not exist yet."""

    # Indexed as the first column of pending_write_unique.
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="pending_writes", db_index=False
    )
    namespace = models.CharField(max_length=255, blank=True, default="")
    checkpoint_id = models.CharField(max_length=128)
    task_id = models.CharField(max_length=255)
    task_path = models.CharField(max_length=1024, blank=True, default="")
    idx = models.IntegerField()
    channel = models.CharField(max_length=255)
    type = models.CharField(max_length=64, blank=True, default="")
    value = models.TextField(
        help_text="Canonical JSON of the written value, or packed: its parts stored once (docs/storage.md)."
    )
    size_bytes = models.BigIntegerField(
        null=True, blank=True, help_text="UTF-8 bytes of the whole value when it is stored packed; else null."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["thread", "namespace", "checkpoint_id", "task_id", "idx"], name="pending_write_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.checkpoint_id}:{self.task_id}:{self.idx}"
