"""Job response shapes: `GET jobs/`, `GET jobs/{id}/`, and every endpoint answering 202
(docs/retention.md)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from checkpoints.api.output import OutputSerializer
from checkpoints.api.pagination import page_serializer
from checkpoints.models import Job
from checkpoints.services.jobs import job_actor

# Internal bookkeeping kept in params (who asked, with database ids): rendered as `requested_by` instead.
_INTERNAL_PARAMS = {"requested_by"}


class JobSerializer(OutputSerializer):
    """The API shape of a job."""

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

    @staticmethod
    def value_params(job: Job, context: dict[str, Any]) -> dict[str, Any]:
        params = job.params if isinstance(job.params, dict) else {}
        return {key: value for key, value in params.items() if key not in _INTERNAL_PARAMS}

    @staticmethod
    def value_requested_by(job: Job, context: dict[str, Any]) -> str:
        return job_actor(job).label


JobPageSerializer = page_serializer("JobPageSerializer", JobSerializer)
