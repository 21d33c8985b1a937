"""Threads (a unit of agent work for an end user) and their messages."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import Q
from django.utils import timezone

from checkpoints.models.workspace import Workspace

# Client-chosen ids (thread_id, checkpoint_id, message_id) are URL-safe: SPEC section 2.
CLIENT_ID_PATTERN = r"[A-Za-z0-9._:-]{1,128}"


def empty_scope() -> dict[str, list[str]]:
    return {"graph_nodes": [], "tags": []}


class ThreadQuerySet(models.QuerySet["Thread"]):
    def for_workspace(self, workspace: Workspace) -> ThreadQuerySet:
        return self.filter(workspace=workspace)


class Thread(models.Model):
    """Groups an agent's checkpoints and messages. `thread_id` is the public id, unique per workspace."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="threads")
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
    # The last message seq handed out; messages take the next ones under a row lock (gapless, SPEC 2).
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
            models.CheckConstraint(
                condition=Q(ttl_seconds__isnull=True) | Q(ttl_seconds__gt=0), name="thread_ttl_positive"
            ),
        ]
        indexes: ClassVar = [
            models.Index(fields=["workspace", "-updated_at", "-id"], name="thread_ws_updated"),
            models.Index(fields=["workspace", "-created_at", "-id"], name="thread_ws_created"),
            models.Index(
                fields=["workspace", "user_id", "-updated_at", "-id"], name="thread_ws_user_updated"
            ),
            models.Index(
                fields=["expires_at"],
                name="thread_expiring",
                condition=Q(expires_at__isnull=False, pinned=False),
            ),
        ]

    def __str__(self) -> str:
        return self.thread_id


class MessageQuerySet(models.QuerySet["Message"]):
    def for_workspace(self, workspace: Workspace) -> MessageQuerySet:
        return self.filter(thread__workspace=workspace)


class Message(models.Model):
    """One conversation message. `seq` is strictly increasing and gapless per thread in commit order."""

    class Role(models.TextChoices):
        SYSTEM = "system"
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="messages")
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
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = MessageQuerySet.as_manager()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["thread", "seq"], name="message_unique_seq"),
            models.UniqueConstraint(fields=["thread", "message_id"], name="message_unique_id"),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}#{self.seq}"
