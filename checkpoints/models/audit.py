"""The append-only audit log: every destructive or branching operation writes one event."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from checkpoints.models.workspace import ApiKey, Workspace


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def for_workspace(self, workspace: Workspace) -> AuditEventQuerySet:
        return self.filter(workspace=workspace)

    def newest_first(self) -> AuditEventQuerySet:
        return self.order_by("-id")

    def naming_agent(self, agent_id: str) -> AuditEventQuerySet:
        """Events that name `agent_id` (handoff from/to, the agent of the checkpoint acted on), through the
        `audit_agent_ws` index of AuditEventAgent."""
        # The workspace condition on the joined rows lets the planner seek (workspace, agent) in the index.
        return self.filter(agents__agent_id=agent_id, agents__workspace_id=models.F("workspace_id"))


class AuditEvent(models.Model):
    """Who did what to which object, when. Rows are inserted, never updated."""

    class ActorType(models.TextChoices):
        USER = "user"
        API_KEY = "api_key"
        SYSTEM = "system"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="audit_events")
    actor_type = models.CharField(max_length=16, choices=ActorType.choices)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_api_key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Kept even when the user or key is deleted, so the log stays readable.
    actor_label = models.CharField(max_length=255)
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64, blank=True, default="")
    target_id = models.CharField(max_length=512, blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["workspace", "-id"], name="audit_ws_newest"),
            models.Index(fields=["workspace", "action", "-id"], name="audit_ws_action"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.target_type}:{self.target_id} by {self.actor_label}"


class AuditEventAgent(models.Model):
    """One agent an audit event names, so the audit log filters by agent through an index instead of
    reading every event's details. Written with the event by audit_record (checkpoints.services.audit)."""

    # Both foreign keys lead composite indexes below; no single-column index on either.
    event = models.ForeignKey(AuditEvent, on_delete=models.CASCADE, related_name="agents", db_index=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    agent_id = models.CharField(max_length=255)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["event", "agent_id"], name="audit_agent_unique"),
        ]
        indexes: ClassVar = [
            models.Index(fields=["workspace", "agent_id", "-event"], name="audit_agent_ws"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} in event {self.event_id}"
