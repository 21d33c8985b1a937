"""Findings: an auditor's comment and optional verdict on a checkpoint or a whole thread (docs/dashboard.md,
"Findings")."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import GreaterThanOrEqual, LessThanOrEqual
from django.utils import timezone

from checkpoints.ids import uuid7
from checkpoints.integrity import PAYLOAD_FIELDS
from checkpoints.models.audit import AuditEvent
from checkpoints.models.checkpoint import Checkpoint
from checkpoints.models.thread import Thread
from checkpoints.models.workspace import Workspace

MAX_COMMENT_CHARS = 5_000


class AnnotationQuerySet(models.QuerySet["Annotation"]):
    def for_workspace(self, workspace: Workspace) -> AnnotationQuerySet:
        return self.filter(workspace=workspace)

    def for_thread(self, thread: Thread) -> AnnotationQuerySet:
        """The thread's annotations, on the thread itself and on its checkpoints."""
        return self.filter(thread=thread)

    def newest_first(self) -> AnnotationQuerySet:
        """By `annotation_thread_newest` within one thread."""
        return self.order_by("-created_at", "-id")

    def checkpoint_pks(self, verdict: str | None = None) -> models.QuerySet[Annotation, Any]:
        """The primary keys of the checkpoints these annotations are on (only those with `verdict` when it is
        given), for `pk__in=` in a checkpoint query; by `annotation_ws_verdict` within a workspace."""
        queryset = self.filter(checkpoint__isnull=False)
        if verdict is not None:
            queryset = queryset.filter(verdict=verdict)
        return queryset.values("checkpoint_id")

    def for_display(self) -> AnnotationQuerySet:
        """With the checkpoint's public id and namespace, which the API and the dashboard show (a join, not
        a query), without its documents."""
        return self.select_related("checkpoint").defer(*(f"checkpoint__{name}" for name in PAYLOAD_FIELDS))


class Annotation(models.Model):
    """A finding: who said what about a checkpoint (or, without one, about the thread). Created and deleted
    through checkpoints.services.annotations, which audits both."""

    class Verdict(models.TextChoices):
        CORRECT = "correct"
        WRONG = "wrong"
        NEEDS_REVIEW = "needs_review"

    # Both lead composite indexes below; no single-column index on either.
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="annotations", db_index=False
    )
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="annotations", db_index=False)
    # Null: the annotation is on the thread. The index serves the timeline's badges (checkpoint_id IN ...).
    checkpoint = models.ForeignKey(
        Checkpoint, null=True, blank=True, on_delete=models.CASCADE, related_name="annotations"
    )
    annotation_id = models.UUIDField(default=uuid7, unique=True, editable=False)
    comment = models.TextField(max_length=MAX_COMMENT_CHARS)
    verdict = models.CharField(max_length=16, choices=Verdict.choices, blank=True, default="")
    # Who wrote it, as audit events record their actor (checkpoints.services.audit.Actor).
    actor_type = models.CharField(max_length=16, choices=AuditEvent.ActorType.choices)
    actor_label = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = AnnotationQuerySet.as_manager()

    class Meta:
        constraints: ClassVar = [
            models.CheckConstraint(
                condition=Q(verdict__in=["", "correct", "wrong", "needs_review"]),
                name="annotation_verdict_known",
            ),
            models.CheckConstraint(
                condition=Q(
                    GreaterThanOrEqual(Length("comment"), 1),
                    LessThanOrEqual(Length("comment"), MAX_COMMENT_CHARS),
                ),
                name="annotation_comment_length",
            ),
        ]
        indexes: ClassVar = [
            models.Index(fields=["thread", "-created_at", "-id"], name="annotation_thread_newest"),
            # The dashboard's search by verdict: the workspace's annotated checkpoints of one verdict.
            models.Index(fields=["workspace", "verdict", "checkpoint"], name="annotation_ws_verdict"),
        ]

    def __str__(self) -> str:
        return f"{self.verdict or 'comment'} {self.annotation_id} by {self.actor_label}"
