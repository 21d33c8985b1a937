"""`GET jobs/` and `GET jobs/{job_id}/`: background jobs of the workspace and their outcome."""

from __future__ import annotations

import uuid

import django_filters
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints.api.filters import filter_queryset
from checkpoints.api.pagination import KeysetPage
from checkpoints.api.serializers.jobs import JobPageSerializer, JobSerializer, job_representation
from checkpoints.api.views.base import WorkspaceAPIView
from checkpoints.models import Job
from checkpoints.services.jobs import job_get


class JobFilterSet(django_filters.FilterSet):
    """`kind` and `status` are repeatable (`?status=queued&status=running`); an unknown value is a 400."""

    kind = django_filters.MultipleChoiceFilter(choices=Job.Kind.choices)
    status = django_filters.MultipleChoiceFilter(choices=Job.Status.choices)

    class Meta:
        model = Job
        fields: list[str] = []


class JobListView(WorkspaceAPIView):
    @extend_schema(
        operation_id="jobs_list",
        summary="Jobs of the workspace, newest first",
        parameters=[
            OpenApiParameter("kind", str, many=True, enum=Job.Kind.values),
            OpenApiParameter("status", str, many=True, enum=Job.Status.values),
            OpenApiParameter("limit", int, description="Page size, 1-500 (default 50)."),
            OpenApiParameter("cursor", str, description="Opaque cursor from `next` or `previous`."),
        ],
        responses=JobPageSerializer,
    )
    def get(self, request: Request) -> Response:
        queryset = filter_queryset(
            JobFilterSet, request.query_params, Job.objects.for_workspace(self.workspace)
        )
        page = KeysetPage(request, queryset, ["-id"])
        return Response(page.envelope([job_representation(job) for job in page.results]))


class JobDetailView(WorkspaceAPIView):
    @extend_schema(summary="One job: status, attempts, result or error", responses=JobSerializer)
    def get(self, request: Request, job_id: uuid.UUID) -> Response:
        return Response(job_representation(job_get(workspace=self.workspace, job_id=job_id)))
