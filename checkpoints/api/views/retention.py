"""The workspace's retention policy (`GET/PUT retention/`), its dry run (`POST retention/preview/`) and
"sweep now" as a tracked job (`POST retention/sweep/`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints.api.serializers.jobs import JobSerializer
from checkpoints.api.serializers.retention import (
    RetentionPolicySerializer,
    RetentionPolicyUpdateSerializer,
    RetentionPreviewRequestSerializer,
    RetentionPreviewSerializer,
)
from checkpoints.api.views.base import ReadingPostView, WorkspaceAPIView
from checkpoints.api.views.jobs import job_response
from checkpoints.models import ApiKey, Workspace
from checkpoints.services.retention import (
    retention_policy,
    retention_policy_update,
    retention_preview,
    retention_sweep_submit,
)


class RetentionPolicyView(WorkspaceAPIView):
    # Shortening a TTL or keep_latest deletes data at the next sweep: only admin keys may change the policy.
    required_scopes = {"PUT": ApiKey.Scope.ADMIN}

    @extend_schema(summary="The workspace's retention policy", responses=RetentionPolicySerializer)
    def get(self, request: Request) -> Response:
        return Response(retention_policy(self.workspace))

    @extend_schema(
        summary="Change the retention policy (admin scope; fields left out keep their value)",
        request=RetentionPolicyUpdateSerializer,
        responses=RetentionPolicySerializer,
    )
    def put(self, request: Request) -> Response:
        data = self.validated(RetentionPolicyUpdateSerializer)
        workspace = retention_policy_update(workspace=self.workspace, actor=self.actor, **data)
        return Response(retention_policy(workspace))


# A dry run changes nothing, so a read key may ask for it.
class RetentionPreviewView(ReadingPostView):
    @extend_schema(
        summary="Dry run: what the next sweep, purge and idle-thread expiry would do (changes nothing)",
        request=RetentionPreviewRequestSerializer,
        responses=RetentionPreviewSerializer,
    )
    def post(self, request: Request) -> Response:
        self.validated(RetentionPreviewRequestSerializer)
        # The policy as the jobs read it (the key's remembered workspace may lag a change made around
        # Cairn), so the preview lists exactly what they then do.
        workspace = Workspace.objects.get(pk=self.workspace.pk)
        return Response(retention_preview(workspace=workspace))


class RetentionSweepView(WorkspaceAPIView):
    @extend_schema(
        summary="Sweep the workspace now, as a job (202; poll the job for its counts)",
        request=RetentionPreviewRequestSerializer,
        responses={202: JobSerializer},
    )
    def post(self, request: Request) -> Response:
        self.validated(RetentionPreviewRequestSerializer)
        return job_response(retention_sweep_submit(workspace=self.workspace, actor=self.actor))
