"""`threads/{id}/state/`: the head checkpoint, read through the cache; saving a new head with If-Match."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints.api.serializers.checkpoints import CheckpointSerializer, CheckpointStateSerializer
from checkpoints.api.views.base import USER_PARAM, WorkspaceAPIView
from checkpoints.api.views.checkpoints import (
    INCLUDE_STATE_PARAM,
    save_arguments,
    saved_response,
    verified_response,
)
from checkpoints.exceptions import NotFound, ValidationFailed
from checkpoints.services.checkpoint_reads import checkpoint_head, thread_get
from checkpoints.services.checkpoints import UNSET, Unset, checkpoint_save
from checkpoints.services.state_cache import head_cache_get, head_cache_put

ROOT_NAMESPACE_PARAM = OpenApiParameter("namespace", str, description="Default: the root namespace.")
IF_MATCH_PARAM = OpenApiParameter(
    "If-Match",
    str,
    location=OpenApiParameter.HEADER,
    description='The checkpoint_id you believe is the head (quotes optional, "*" = any head); 412 otherwise.',
)


class ThreadStateView(WorkspaceAPIView):
    @extend_schema(
        summary="The head checkpoint of a namespace, with its state",
        parameters=[ROOT_NAMESPACE_PARAM, USER_PARAM],
        responses={200: CheckpointSerializer},
    )
    def get(self, request: Request, thread_id: str) -> Response:
        thread = thread_get(workspace=self.workspace, thread_id=thread_id, user_id=self.query_user_id())
        namespace = self.query_namespace() or ""
        now = timezone.now()
        head = head_cache_get(thread, namespace, now)
        if head is None:
            head = checkpoint_head(thread=thread, namespace=namespace, now=now)
            if head is None:
                raise NotFound(f"Thread {thread_id!r} has no checkpoint in namespace {namespace!r}.")
            head_cache_put(thread, namespace, head)
        return verified_response(head)

    @extend_schema(
        summary="Save a new head (parent = the current head)",
        request=CheckpointStateSerializer,
        parameters=[ROOT_NAMESPACE_PARAM, USER_PARAM, IF_MATCH_PARAM, INCLUDE_STATE_PARAM],
        responses={201: CheckpointSerializer, 200: CheckpointSerializer},
    )
    def put(self, request: Request, thread_id: str) -> Response:
        # Every input is checked before the save: a 400 must never answer a save that was committed.
        include_state = self.query_bool("include_state", default=True)
        data = self.validated(CheckpointStateSerializer)
        result = checkpoint_save(
            workspace=self.workspace,
            thread_id=thread_id,
            expected_head=self._expected_head(),
            user_id=self.query_user_id(),
            **save_arguments(data, self.query_namespace(), written_by=self.actor.writer),
        )
        return saved_response(result, include_state=include_state)

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
