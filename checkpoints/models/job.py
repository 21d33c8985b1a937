"""Background jobs (summaries, sweeps, prunes, exports) as rows the API and dashboard can show."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.utils import timezone

from checkpoints.ids import uuid7
from checkpoints.models.workspace import Workspace


class JobQuerySet(models.QuerySet["Job"]):
    def for_workspace(self, workspace: Workspace) -> JobQuerySet:
        return self.filter(workspace=workspace)

    def newest_first(self) -> JobQuerySet:
        return self.order_by("-id")


class Job(models.Model):
    """A unit of background work. Created in the request's transaction, enqueued on commit."""

    class Kind(models.TextChoices):
        SUMMARIZE = "summarize"
        SWEEP = "sweep"
        PRUNE = "prune"
        EXPORT = "export"
        PACK = "pack"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="jobs")
    job_id = models.UUIDField(default=uuid7, unique=True, editable=False)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    celery_task_id = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["workspace", "-id"], name="job_ws_newest"),
            models.Index(fields=["workspace", "created_at"], name="job_ws_created"),  # the activity chart
            models.Index(fields=["workspace", "status", "-id"], name="job_ws_status"),
            models.Index(fields=["status", "started_at"], name="job_status_started"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.job_id} ({self.status})"
