"""`GET jobs/` and `GET jobs/{job_id}/`: background jobs of the workspace and their outcome."""

from __future__ import annotations

import uuid

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints.api.filters import JobFilterSet
from checkpoints.api.pagination import PAGE_PARAMS, KeysetPage
from checkpoints.api.serializers.jobs import JobPageSerializer, JobSerializer
from checkpoints.api.views.base import WorkspaceAPIView
from checkpoints.models import Job
from checkpoints.services.jobs import job_get


def job_response(job: Job) -> Response:
    """202 with the job; Location is where to poll."""
    location = reverse("api:job-detail", kwargs={"job_id": job.job_id})
    return Response(
        JobSerializer.render(job), status=status.HTTP_202_ACCEPTED, headers={"Location": location}
    )


class JobListView(WorkspaceAPIView):
    filterset_class = JobFilterSet

    @extend_schema(
        operation_id="jobs_list",
        summary="Jobs of the workspace, newest first",
        parameters=PAGE_PARAMS,
        responses=JobPageSerializer,
    )
    def get(self, request: Request) -> Response:
        queryset = self.filter_queryset(Job.objects.for_workspace(self.workspace))
        page = KeysetPage(request, queryset, ["-id"])
        return Response(page.envelope(JobSerializer.render_many(page.results)))


class JobDetailView(WorkspaceAPIView):
    @extend_schema(summary="One job: status, attempts, result or error", responses=JobSerializer)
    def get(self, request: Request, job_id: uuid.UUID) -> Response:
        return Response(JobSerializer.render(job_get(workspace=self.workspace, job_id=job_id)))
