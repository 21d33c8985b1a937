"""Threads (a unit of agent work for an end user) and their messages."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from django.db import models
from django.db.models import Count, F, Func, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from checkpoints.models.constraints import empty_or_positive
from checkpoints.models.workspace import Workspace

# Client-chosen ids (thread_id, checkpoint_id, message_id) are URL-safe (docs/threads.md).
CLIENT_ID_PATTERN = r"[A-Za-z0-9._:-]{1,128}"


def empty_scope() -> dict[str, list[str]]:
    return {"graph_nodes": [], "tags": []}


class HeadMoved:
    """The bump of `Thread.state_version` that every write which may move a head makes, in its own
    statement or transaction (the head cache keys on the version, docs/architecture.md). Stated once and
    built two ways: the ORM's update (`update`) and the assignment for a static statement (`sql`)."""

    field = "state_version"
    step = 1

    @classmethod
    def update(cls) -> dict[str, Any]:
        """For `Thread.objects.filter(...).update(**HeadMoved.update())`."""
        return {cls.field: F(cls.field) + cls.step}

    @classmethod
    def sql(cls) -> str:
        """For a static `UPDATE` of the thread table (no alias)."""
        return f"{cls.field} = {cls.field} + {cls.step}"

    @classmethod
    def applied(cls, thread: Thread) -> None:
        """The same bump on a row in hand, as the update leaves it."""
        thread.state_version += cls.step


class ByteLength(Func):
    """Length in bytes of a text column (UTF-8): OCTET_LENGTH on PostgreSQL, a BLOB cast on SQLite."""

    function = "OCTET_LENGTH"
    output_field = models.BigIntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        return self.as_sql(
            compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))", **extra_context
        )


def write_bytes() -> Coalesce:
    """An expression: the UTF-8 bytes of a pending write's whole value (`size_bytes` when it is stored
    packed, else its text's)."""
    return Coalesce("size_bytes", ByteLength("value"))


def _sum_per_thread(queryset: models.QuerySet[Any], expression: Any) -> Coalesce:
    """A correlated subquery summing `expression` over `queryset`'s rows of the outer thread (0 if none)."""
    total = queryset.filter(thread=OuterRef("pk")).order_by().values("thread").annotate(total=expression)
    return Coalesce(Subquery(total.values("total")), Value(0), output_field=models.BigIntegerField())


class ThreadQuerySet(models.QuerySet["Thread"]):
    def for_workspace(self, workspace: Workspace) -> ThreadQuerySet:
        return self.filter(workspace=workspace)

    def for_user(self, user_id: str | None) -> ThreadQuerySet:
        """Only `user_id`'s threads; None means no user condition (every thread of the workspace).

        There is no default user: "" selects the threads that have no user, it is not a wildcard.
        """
        return self if user_id is None else self.filter(user_id=user_id)

    def with_fork_source(self) -> ThreadQuerySet:
        """Annotate `forked_from_thread_id`, the public id of the fork source (None once it is deleted)."""
        return self.annotate(forked_from_thread_id=F("forked_from__thread_id"))

    def with_stats(self, now: datetime | None = None) -> ThreadQuerySet:
        """Annotate message_count, checkpoint_count (readable now), storage_bytes and head (the root
        namespace's head checkpoint_id or None), as correlated subqueries: one query for any number of rows.

        storage_bytes is what `thread_storage` reports as the total: payloads of checkpoints that still have
        one, pending write values, and messages.
        """
        # Imported here: the checkpoint models import this module.
        from checkpoints.models.checkpoint import Checkpoint, PendingWrite

        now = now or timezone.now()
        checkpoints = Checkpoint.objects.all()
        head = checkpoints.filter(thread=OuterRef("pk"), namespace="").live(now).order_by("-id")
        return self.with_fork_source().annotate(
            message_count=_sum_per_thread(Message.objects.all(), Count("pk")),
            checkpoint_count=_sum_per_thread(checkpoints.live(now), Count("pk")),
            storage_bytes=(
                _sum_per_thread(checkpoints.filter(expired_at__isnull=True), Sum("size_bytes"))
                + _sum_per_thread(PendingWrite.objects.all(), Sum(write_bytes()))
                + _sum_per_thread(Message.objects.all(), Sum("size_bytes"))
            ),
            head=Subquery(head.values("checkpoint_id")[:1]),
        )


class Thread(models.Model):
    """Groups an agent's checkpoints and messages. `thread_id` is the public id, unique per workspace."""

    # Indexed as the first column of thread_unique_id and the thread_ws_* indexes.
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="threads", db_index=False)
    thread_id = models.CharField(max_length=128)
    user_id = models.CharField(max_length=255, blank=True, default="", help_text="The end user; free string.")
    name = models.CharField(max_length=255, blank=True, default="")
    tags = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    scope = models.JSONField(default=empty_scope, blank=True, help_text="Medallion scope for summaries.")
    ttl_seconds = models.PositiveBigIntegerField(null=True, blank=True, help_text="Idle expiry.")
    expires_at = models.DateTimeField(null=True, blank=True)
    pinned = models.BooleanField(default=False)
    forked_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks"
    )
    forked_from_checkpoint_id = models.CharField(max_length=128, blank=True, default="")
    forked_from_namespace = models.CharField(max_length=255, blank=True, default="")
    # The last message seq handed out; messages take the next ones under a row lock (gapless:
    # docs/threads.md).
    last_message_seq = models.BigIntegerField(default=0)
    # The last message seq folded into the thread's medallion (summaries start after it).
    last_summarized_seq = models.BigIntegerField(default=0)
    # Bumped in the same transaction as every write that can move a head; the state cache keys on it, so a
    # cached head can never be older than the database.
    state_version = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ThreadQuerySet.as_manager()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["workspace", "thread_id"], name="thread_unique_id"),
            empty_or_positive("ttl_seconds", "thread_ttl_positive"),
        ]
        indexes: ClassVar = [
            # Nothing here holds updated_at: every save sets it, and a HOT update needs no indexed column
            # to change (docs/storage.md, "Indexes").
            models.Index(fields=["workspace", "-created_at", "-id"], name="thread_ws_created"),
            models.Index(fields=["workspace", "user_id"], name="thread_ws_user"),
            models.Index(
                fields=["expires_at"],
                name="thread_expiring",
                condition=Q(expires_at__isnull=False, pinned=False),
            ),
        ]

    def __str__(self) -> str:
        return self.thread_id


# A message's fields that no list or answer shows: the stored search text, a second copy of the content.
NEVER_RENDERED = ("search_text",)


class MessageQuerySet(models.QuerySet["Message"]):
    def for_workspace(self, workspace: Workspace) -> MessageQuerySet:
        return self.filter(thread__workspace=workspace)

    def for_display(self) -> MessageQuerySet:
        """Skip what is never rendered (`NEVER_RENDERED`)."""
        return self.defer(*NEVER_RENDERED)

    def with_thread_id(self) -> MessageQuerySet:
        """Annotate `thread_public_id` without loading the thread rows (workspace-wide lists)."""
        return self.annotate(thread_public_id=F("thread__thread_id"))


class Message(models.Model):
    """One conversation message. `seq` is strictly increasing and gapless per thread in commit order."""

    class Role(models.TextChoices):
        SYSTEM = "system"
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"

    # Indexed as the first column of message_unique_seq and message_unique_id.
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="messages", db_index=False)
    seq = models.BigIntegerField()
    message_id = models.CharField(max_length=128)
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True, default="")
    content_blocks = models.JSONField(null=True, blank=True)
    tool_calls = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=128, blank=True, default="")
    name = models.CharField(max_length=255, blank=True, default="")
    usage = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # The searchable text (content + text parts of content_blocks), Unicode-normalised and case-folded by
    # checkpoints.services.search. Indexed by pg_trgm on PostgreSQL and an FTS5 trigram table on SQLite;
    # never rendered. Written once, by messages_append.
    search_text = models.TextField(blank=True, default="", editable=False)
    # UTF-8 bytes of what the client sent (text fields + canonical JSON), for storage accounting.
    size_bytes = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = MessageQuerySet.as_manager()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["thread", "seq"], name="message_unique_seq"),
            models.UniqueConstraint(fields=["thread", "message_id"], name="message_unique_id"),
        ]
        indexes: ClassVar = [
            # The dashboard's activity chart: messages of a time window (messages carry no workspace column;
            # the window's rows are joined to their threads).
            models.Index(fields=["created_at"], name="message_created"),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}#{self.seq}"
