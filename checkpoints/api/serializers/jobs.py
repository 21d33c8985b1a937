"""Job response shapes (SPEC section 5: `GET jobs/`, `GET jobs/{id}/`, and every endpoint answering 202)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rest_framework import serializers

from checkpoints.integrity import format_timestamp
from checkpoints.models import Job
from checkpoints.services.jobs import job_actor

# Internal bookkeeping kept in params (who asked, with database ids): rendered as `requested_by` instead.
_INTERNAL_PARAMS = {"requested_by"}


def _timestamp(value: datetime | None) -> str | None:
    return format_timestamp(value) if value is not None else None


def job_representation(job: Job) -> dict[str, Any]:
    """The API shape of a job."""
    params = job.params if isinstance(job.params, dict) else {}
    return {
        "job_id": str(job.job_id),
        "kind": job.kind,
        "status": job.status,
        "params": {key: value for key, value in params.items() if key not in _INTERNAL_PARAMS},
        "requested_by": job_actor(job).label,
        "result": job.result,
        "error": job.error or None,
        "attempts": job.attempts,
        "created_at": _timestamp(job.created_at),
        "started_at": _timestamp(job.started_at),
        "finished_at": _timestamp(job.finished_at),
    }


class JobSerializer(serializers.Serializer):
    """The job representation, declared for the OpenAPI schema (views render with `job_representation`)."""

    job_id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=Job.Kind.choices)
    status = serializers.ChoiceField(
        choices=Job.Status.choices, help_text="queued -> running -> succeeded | failed."
    )
    params = serializers.DictField(help_text="What the job was asked to do.")
    requested_by = serializers.CharField(help_text="The API key, user or system process that asked.")
    result = serializers.JSONField(allow_null=True, help_text="Set when the job succeeded.")
    error = serializers.CharField(allow_null=True, help_text="Set when the job failed: why.")
    attempts = serializers.IntegerField(help_text="How many times a worker started it.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class JobPageSerializer(serializers.Serializer):
    results = JobSerializer(many=True)
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
