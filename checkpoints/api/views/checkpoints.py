"""Checkpoint endpoints: save, timeline, restore, expire, TTL, handoff, diff, lineage, pending writes,
the workspace-wide timeline and restore by id alone."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints.api.filters import CheckpointFilterSet, ThreadCheckpointFilterSet
from checkpoints.api.pagination import LIMIT_PARAM, PAGE_PARAMS, parse_limit
from checkpoints.api.renderers import RawJSON, json_array, json_object, written_response
from checkpoints.api.serializers.checkpoints import (
    CheckpointCreateSerializer,
    CheckpointHandoffSerializer,
    CheckpointPageSerializer,
    CheckpointSerializer,
    CheckpointTtlSerializer,
    DiffSerializer,
    PendingWriteListSerializer,
    PendingWritesCreateSerializer,
    checkpoint_representation,
    pending_write_representation,
)
from checkpoints.api.views.base import USER_PARAM, WorkspaceAPIView
from checkpoints.exceptions import Gone, ValidationFailed
from checkpoints.models import Checkpoint
from checkpoints.routes import checkpoint_url
from checkpoints.services.checkpoint_reads import (
    checkpoint_diff,
    checkpoint_field_changes,
    checkpoint_get,
    checkpoint_get_by_id,
    checkpoint_lineage,
    checkpoint_timeline,
    ensure_intact,
    pending_writes_ensure_target_readable,
    pending_writes_for,
    thread_get,
    workspace_timeline,
)
from checkpoints.services.checkpoints import (
    UNSET,
    SaveResult,
    checkpoint_expire,
    checkpoint_handoff,
    checkpoint_save,
    checkpoint_set_ttl,
    pending_writes_put,
)

NAMESPACE_PARAM = OpenApiParameter(
    "namespace", str, description="Checkpoint namespace; omit to search every namespace of the thread."
)
SAVE_NAMESPACE_PARAM = OpenApiParameter(
    "namespace", str, description="Namespace to save into (or `namespace` in the body; they must agree)."
)
INCLUDE_STATE_PARAM = OpenApiParameter(
    "include_state", bool, description="Include state, context and metadata."
)
BEFORE_PARAM = OpenApiParameter(
    "before", str, description="Only checkpoints created before this checkpoint_id."
)
TOMBSTONES_PARAM = OpenApiParameter(
    "include_tombstones", bool, description="Also list expired checkpoints (payloads null)."
)


def checkpoint_gone(checkpoint: Checkpoint) -> Gone:
    """410 with the tombstone in `details.checkpoint`, so lineage and audits stay whole for the client too."""
    return Gone(
        f"Checkpoint {checkpoint.checkpoint_id!r} has expired.",
        {"checkpoint": checkpoint_representation(checkpoint, include_state=True, now=timezone.now())},
    )


def verified_response(checkpoint: Checkpoint, *, include_state: bool = True) -> HttpResponse:
    """A restore: 410 if unreadable, 409 if the re-hash disagrees, else 200 + X-Checksum-Verified."""
    now = timezone.now()
    if not checkpoint.is_readable(now):
        raise checkpoint_gone(checkpoint)
    ensure_intact(checkpoint)
    return written_response(
        checkpoint_representation(checkpoint, include_state=include_state, now=now),
        headers={"X-Checksum-Verified": "true", "ETag": f'"{checkpoint.checkpoint_id}"'},
    )


def page_representation(
    checkpoints: list[Checkpoint],
    *,
    include_state: bool,
    more: Callable[[Checkpoint], Iterable[tuple[str, str]]] | None = None,
) -> list[RawJSON]:
    """A list page (with `more`, more members for each checkpoint). Payloads are only served verified: a page
    holding an altered row is a 409 naming it."""
    now = timezone.now()
    if include_state:
        for checkpoint in checkpoints:
            if checkpoint.is_readable(now):
                ensure_intact(checkpoint)
    return [
        checkpoint_representation(c, include_state=include_state, now=now, more=more(c) if more else ())
        for c in checkpoints
    ]


def saved_response(result: SaveResult, *, include_state: bool) -> HttpResponse:
    body = checkpoint_representation(result.checkpoint, include_state=include_state, now=timezone.now())
    code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
    return written_response(body, code, headers={"Location": checkpoint_url(result.checkpoint)})


def save_arguments(data: dict[str, Any], query_namespace: str | None, *, written_by: str) -> dict[str, Any]:
    """Map validated input to checkpoint_save keywords (absent optional fields stay absent), with who writes
    it (the request's `Actor.writer`).

    The namespace may come from the body or from `?namespace=` (default: the root namespace ""); both
    given and different is a 400 rather than a guess.
    """
    arguments = dict(data)
    if "ttl_seconds" not in arguments:
        arguments["ttl_seconds"] = UNSET
    if "parent_id" not in arguments:
        arguments["parent_id"] = UNSET
    body_namespace = arguments.get("namespace")
    if body_namespace is not None and query_namespace is not None and body_namespace != query_namespace:
        message = "The body and ?namespace= name different namespaces."
        raise ValidationFailed(message, {"fields": {"namespace": [message]}})
    arguments["namespace"] = body_namespace if body_namespace is not None else query_namespace or ""
    arguments["written_by"] = written_by
    return arguments


# A view that saves one checkpoint from its body (`POST checkpoints/`, `PUT state/`, the LangGraph save);
# `store` is the save service call. (A comment, not a docstring: the OpenAPI document would show it.)
class CheckpointSavingView(WorkspaceAPIView):
    def save_from_body(self, serializer_class: type[Any], thread_id: str) -> HttpResponse:
        # Every input is checked before the save: a 400 must never answer a save that was committed.
        include_state = self.query_bool("include_state", default=True)
        data = self.validated(serializer_class)
        arguments = save_arguments(data, self.query_namespace(), written_by=self.actor.writer)
        return saved_response(self.store(thread_id, arguments), include_state=include_state)

    def store(self, thread_id: str, arguments: dict[str, Any]) -> SaveResult:
        return checkpoint_save(
            workspace=self.workspace, thread_id=thread_id, user_id=self.query_user_id(), **arguments
        )


class ThreadCheckpointsView(CheckpointSavingView):
    filterset_class = ThreadCheckpointFilterSet

    @extend_schema(
        operation_id="threads_checkpoints_list",
        summary="Timeline of a thread, newest first",
        parameters=[
            USER_PARAM,
            NAMESPACE_PARAM,
            INCLUDE_STATE_PARAM,
            BEFORE_PARAM,
            TOMBSTONES_PARAM,
            *PAGE_PARAMS,
        ],
        responses=CheckpointPageSerializer,
    )
    def get(self, request: Request, thread_id: str) -> HttpResponse:
        thread = thread_get(workspace=self.workspace, thread_id=thread_id, user_id=self.query_user_id())
        include_state = self.query_bool("include_state")
        timeline = checkpoint_timeline(
            thread=thread,
            namespace=self.query_namespace(),
            include_tombstones=self.query_bool("include_tombstones"),
            include_state=include_state,
            before=request.query_params.get("before") or None,
        )
        page = self.page(timeline, ["-id"])
        for checkpoint in page.results:
            checkpoint.thread = thread  # one thread for the whole page: no join, no query per row
        return page.written(page_representation(page.results, include_state=include_state))

    @extend_schema(
        summary="Save a checkpoint (creates the thread if missing)",
        request=CheckpointCreateSerializer,
        responses={201: CheckpointSerializer, 200: CheckpointSerializer},
        parameters=[USER_PARAM, SAVE_NAMESPACE_PARAM, INCLUDE_STATE_PARAM],
    )
    def post(self, request: Request, thread_id: str) -> HttpResponse:
        return self.save_from_body(CheckpointCreateSerializer, thread_id)


class CheckpointResourceView(WorkspaceAPIView):
    """Base of every `threads/{thread_id}/checkpoints/{checkpoint_id}/...` view (no handlers of its own, so
    sub-resources answer 405 to the methods they do not define). The checkpoint is looked up before the body
    is validated: a missing (or another workspace's) checkpoint is a 404 whatever the body."""

    def _get(self, thread_id: str, checkpoint_id: str) -> Checkpoint:
        return checkpoint_get(
            workspace=self.workspace,
            thread_id=thread_id,
            checkpoint_id=checkpoint_id,
            namespace=self.query_namespace(),
            user_id=self.query_user_id(),
        )

    def _get_readable(self, thread_id: str, checkpoint_id: str) -> Checkpoint:
        checkpoint = self._get(thread_id, checkpoint_id)
        if not checkpoint.is_readable(timezone.now()):
            raise checkpoint_gone(checkpoint)
        return checkpoint


class CheckpointDetailView(CheckpointResourceView):
    @extend_schema(
        summary="Restore a checkpoint (re-hashed; X-Checksum-Verified: true)",
        parameters=[USER_PARAM, NAMESPACE_PARAM],
        responses={200: CheckpointSerializer},
    )
    def get(self, request: Request, thread_id: str, checkpoint_id: str) -> HttpResponse:
        return verified_response(self._get(thread_id, checkpoint_id))

    @extend_schema(
        summary="Expire a checkpoint now (it becomes a tombstone)",
        parameters=[USER_PARAM, NAMESPACE_PARAM],
        responses={204: None},
    )
    def delete(self, request: Request, thread_id: str, checkpoint_id: str) -> HttpResponse:
        checkpoint_expire(checkpoint=self._get_readable(thread_id, checkpoint_id), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CheckpointTtlView(CheckpointResourceView):
    @extend_schema(
        summary="Set, extend or clear the expiry; pin or unpin",
        request=CheckpointTtlSerializer,
        parameters=[USER_PARAM, NAMESPACE_PARAM],
        responses={200: CheckpointSerializer},
    )
    def post(self, request: Request, thread_id: str, checkpoint_id: str) -> HttpResponse:
        checkpoint = self._get_readable(thread_id, checkpoint_id)
        data = self.validated(CheckpointTtlSerializer)
        updated = checkpoint_set_ttl(
            checkpoint=checkpoint,
            actor=self.actor,
            ttl_seconds=data.get("ttl_seconds", UNSET),
            pinned=data.get("pinned", UNSET),
        )
        return written_response(checkpoint_representation(updated, include_state=False, now=timezone.now()))


class CheckpointHandoffView(CheckpointResourceView):
    @extend_schema(
        summary="Hand the state to another agent (a child checkpoint owned by the target)",
        request=CheckpointHandoffSerializer,
        parameters=[USER_PARAM, NAMESPACE_PARAM],
        responses={201: CheckpointSerializer},
    )
    def post(self, request: Request, thread_id: str, checkpoint_id: str) -> HttpResponse:
        source = self._get_readable(thread_id, checkpoint_id)
        data = self.validated(CheckpointHandoffSerializer)
        handed = checkpoint_handoff(
            source=source,
            target_agent_id=data["target_agent_id"],
            actor=self.actor,
            context=data.get("context", UNSET),
            ttl_seconds=data.get("ttl_seconds", UNSET),
        )
        return saved_response(SaveResult(handed, created=True), include_state=True)


class CheckpointDiffView(CheckpointResourceView):
    @extend_schema(
        summary="RFC 6902 JSON Patch from another checkpoint (default: the parent) to this one",
        parameters=[
            USER_PARAM,
            NAMESPACE_PARAM,
            OpenApiParameter("against", str, description="checkpoint_id to diff from (default: the parent)."),
            OpenApiParameter(
                "against_thread_id", str, description="Thread of `against` (default: this one)."
            ),
            OpenApiParameter(
                "against_namespace", str, description="Namespace of `against` (default: this one)."
            ),
        ],
        responses={200: DiffSerializer},
    )
    def get(self, request: Request, thread_id: str, checkpoint_id: str) -> HttpResponse:
        checkpoint = self._get_readable(thread_id, checkpoint_id)
        params = request.query_params
        against_id = params.get("against") or checkpoint.parent_checkpoint_id
        against = None
        if against_id:
            against = checkpoint_get(
                workspace=self.workspace,
                thread_id=params.get("against_thread_id") or thread_id,
                checkpoint_id=against_id,
                namespace=params.get("against_namespace", checkpoint.namespace),
                # The user scope covers every thread the request reaches, not only the one in the path.
                user_id=self.query_user_id(),
            )
            if not against.is_readable(timezone.now()):
                raise checkpoint_gone(against)
        patch = checkpoint_diff(checkpoint=checkpoint, against=against)
        body = {
            "checkpoint_id": checkpoint.checkpoint_id,
            "against": against_id,
            "against_thread_id": against.thread.thread_id if against else None,
            "changed_fields": checkpoint_field_changes(checkpoint=checkpoint, against=against),
            "patch": patch,
        }
        return Response(body)


class CheckpointLineageView(CheckpointResourceView):
    @extend_schema(
        summary="Ancestors up to the root, nearest first (tombstones included, with expired_at set)",
        parameters=[USER_PARAM, NAMESPACE_PARAM, LIMIT_PARAM],
        responses={200: CheckpointPageSerializer},
    )
    def get(self, request: Request, thread_id: str, checkpoint_id: str) -> HttpResponse:
        checkpoint = self._get(thread_id, checkpoint_id)
        ancestors, has_more = checkpoint_lineage(checkpoint=checkpoint, limit=parse_limit(request))
        now = timezone.now()
        next_url = None
        if has_more and ancestors:
            # The next page of ancestors is the lineage of the last ancestor shown.
            limit = {"limit": request.query_params["limit"]} if "limit" in request.query_params else {}
            next_url = request.build_absolute_uri(
                checkpoint_url(ancestors[-1], "api:checkpoint-lineage", limit)
            )
        results = [checkpoint_representation(a, include_state=False, now=now) for a in ancestors]
        return Response({"results": results, "next": next_url, "previous": None})


class CheckpointWritesView(WorkspaceAPIView):
    @extend_schema(
        summary="LangGraph pending writes of a checkpoint (which may not exist yet)",
        parameters=[
            USER_PARAM,
            OpenApiParameter("namespace", str, description="Default: the root namespace."),
        ],
        responses={200: PendingWriteListSerializer},
    )
    def get(self, request: Request, thread_id: str, checkpoint_id: str) -> HttpResponse:
        thread = thread_get(workspace=self.workspace, thread_id=thread_id, user_id=self.query_user_id())
        namespace = self.query_namespace() or ""
        pending_writes_ensure_target_readable(thread=thread, namespace=namespace, checkpoint_id=checkpoint_id)
        writes = pending_writes_for(thread=thread, namespace=namespace, checkpoint_id=checkpoint_id)
        return Response(
            {"results": [pending_write_representation(w) for w in writes], "next": None, "previous": None}
        )

    @extend_schema(
        summary="Store pending writes (creates the thread if missing; the checkpoint may not exist yet)",
        request=PendingWritesCreateSerializer,
        parameters=[
            USER_PARAM,
            OpenApiParameter("namespace", str, description="Default: the root namespace."),
        ],
        responses={201: PendingWriteListSerializer},
    )
    def post(self, request: Request, thread_id: str, checkpoint_id: str) -> HttpResponse:
        data = self.validated(PendingWritesCreateSerializer)
        namespace = self.query_namespace() or ""
        # What is stored for the task now (earlier ordinary writes win over a retry's).
        writes = pending_writes_put(
            workspace=self.workspace,
            thread_id=thread_id,
            namespace=namespace,
            checkpoint_id=checkpoint_id,
            task_id=data["task_id"],
            task_path=data.get("task_path", ""),
            writes=data["writes"],
            user_id=self.query_user_id(),
        )
        results = json_array(pending_write_representation(w) for w in writes)
        body = json_object([("results", results), ("next", "null"), ("previous", "null")])
        return written_response(body, status.HTTP_201_CREATED)


class WorkspaceCheckpointsView(WorkspaceAPIView):
    filterset_class = CheckpointFilterSet

    @extend_schema(
        operation_id="checkpoints_list",
        summary="Workspace-wide timeline (filter by agent, thread, handoff inbox, framework, dates)",
        parameters=[OpenApiParameter("namespace", str), INCLUDE_STATE_PARAM, TOMBSTONES_PARAM, *PAGE_PARAMS],
        responses=CheckpointPageSerializer,
    )
    def get(self, request: Request) -> HttpResponse:
        include_state = self.query_bool("include_state")
        timeline = workspace_timeline(
            workspace=self.workspace,
            namespace=self.query_namespace(),
            include_tombstones=self.query_bool("include_tombstones"),
            include_state=include_state,
        )
        page = self.page(timeline, ["-id"])
        return page.written(page_representation(page.results, include_state=include_state))


class CheckpointByIdView(WorkspaceAPIView):
    @extend_schema(
        summary="Restore by checkpoint_id alone (409 ambiguous_id if copies exist in several threads)",
        responses={200: CheckpointSerializer},
    )
    def get(self, request: Request, checkpoint_id: str) -> HttpResponse:
        return verified_response(checkpoint_get_by_id(workspace=self.workspace, checkpoint_id=checkpoint_id))
