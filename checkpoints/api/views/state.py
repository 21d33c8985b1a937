"""`threads/{id}/state/`: the head checkpoint, read through the cache; saving a new head with If-Match."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request

from checkpoints.api.serializers.checkpoints import CheckpointSerializer, CheckpointStateSerializer
from checkpoints.api.views.base import USER_PARAM
from checkpoints.api.views.checkpoints import INCLUDE_STATE_PARAM, CheckpointSavingView, verified_response
from checkpoints.exceptions import NotFound, ValidationFailed
from checkpoints.services.checkpoint_reads import thread_get
from checkpoints.services.checkpoints import UNSET, SaveResult, Unset, checkpoint_save
from checkpoints.storage.state_cache import head_read_through

ROOT_NAMESPACE_PARAM = OpenApiParameter("namespace", str, description="Default: the root namespace.")
IF_MATCH_PARAM = OpenApiParameter(
    "If-Match",
    str,
    location=OpenApiParameter.HEADER,
    description='The checkpoint_id you believe is the head (quotes optional, "*" = any head); 412 otherwise.',
)


class ThreadStateView(CheckpointSavingView):
    @extend_schema(
        summary="The head checkpoint of a namespace, with its state",
        parameters=[ROOT_NAMESPACE_PARAM, USER_PARAM],
        responses={200: CheckpointSerializer},
    )
    def get(self, request: Request, thread_id: str) -> HttpResponse:
        thread = thread_get(workspace=self.workspace, thread_id=thread_id, user_id=self.query_user_id())
        namespace = self.query_namespace() or ""
        head = head_read_through(thread, namespace, timezone.now())
        if head is None:
            raise NotFound(f"Thread {thread_id!r} has no checkpoint in namespace {namespace!r}.")
        return verified_response(head)

    @extend_schema(
        summary="Save a new head (parent = the current head)",
        request=CheckpointStateSerializer,
        parameters=[ROOT_NAMESPACE_PARAM, USER_PARAM, IF_MATCH_PARAM, INCLUDE_STATE_PARAM],
        responses={201: CheckpointSerializer, 200: CheckpointSerializer},
    )
    def put(self, request: Request, thread_id: str) -> HttpResponse:
        return self.save_from_body(CheckpointStateSerializer, thread_id)

    def store(self, thread_id: str, arguments: dict[str, Any]) -> SaveResult:
        return checkpoint_save(
            workspace=self.workspace,
            thread_id=thread_id,
            expected_head=self._expected_head(),
            user_id=self.query_user_id(),
            **arguments,
        )

    def _expected_head(self) -> tuple[str, ...] | Unset:
        """`If-Match`: `*`, or a comma-separated list of `"<checkpoint_id>"` (quotes and W/ optional; any one
        may be the head); absent = no precondition."""
        if_match = self.request.headers.get("If-Match")
        if if_match is None:
            return UNSET
        expected = tuple(
            tag for part in if_match.split(",") if (tag := part.strip().removeprefix("W/").strip('"'))
        )
        if not expected:
            raise ValidationFailed("If-Match is empty.", {"fields": {"If-Match": ["Empty."]}})
        return expected
