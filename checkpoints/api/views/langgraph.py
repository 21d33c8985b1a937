"""Endpoints the SDK's LangGraph saver needs beyond the REST contract (see checkpoints.services.langgraph):
saving with unchanged channels inherited from the parent, listing checkpoints with their pending writes in
LangGraph's order, several tasks' pending writes in one request, and deleting by run."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints.api.filters import ThreadCheckpointFilterSet
from checkpoints.api.pagination import PAGE_PARAMS
from checkpoints.api.renderers import json_array, json_object, written_response
from checkpoints.api.serializers.checkpoints import CheckpointSerializer, pending_write_representation
from checkpoints.api.serializers.langgraph import (
    LangGraphCheckpointSaveSerializer,
    LangGraphTuplePageSerializer,
    LangGraphWritesSerializer,
    RunsDeleteSerializer,
)
from checkpoints.api.views.base import USER_PARAM, WorkspaceAPIView
from checkpoints.api.views.checkpoints import (
    INCLUDE_STATE_PARAM,
    CheckpointSavingView,
    page_representation,
)
from checkpoints.models import Checkpoint
from checkpoints.services.checkpoints import SaveResult
from checkpoints.services.langgraph import (
    checkpoints_delete_for_runs,
    langgraph_checkpoint_save,
    langgraph_tuples,
    langgraph_writes_put,
)
from checkpoints.storage.checkpoint_pages import pending_writes_of

TUPLE_PARAMS = [
    OpenApiParameter("thread_id", str, description="One thread; omit for the whole workspace."),
    OpenApiParameter("namespace", str, description="One namespace; omit for every namespace."),
    OpenApiParameter("checkpoint_id", str, description="Only this checkpoint."),
    OpenApiParameter("before", str, description="Only checkpoint ids below this one (LangGraph's `before`)."),
    OpenApiParameter("metadata", str, description="JSON object the metadata must contain."),
    OpenApiParameter("run_id", str),
]


class LangGraphCheckpointsView(WorkspaceAPIView):
    @extend_schema(
        operation_id="langgraph_checkpoints_list",
        summary="LangGraph checkpoints with their pending writes, newest checkpoint id first",
        parameters=[*TUPLE_PARAMS, *PAGE_PARAMS],
        responses=LangGraphTuplePageSerializer,
    )
    def get(self, request: Request) -> HttpResponse:
        params = request.query_params
        tuples = langgraph_tuples(
            workspace=self.workspace,
            thread_id=params.get("thread_id") or None,
            namespace=self.query_namespace(),
            checkpoint_id=params.get("checkpoint_id") or None,
            before=params.get("before") or None,
        )
        # The thread is langgraph_tuples' to find: of the filters, only `metadata` and `run_id` are this
        # operation's (TUPLE_PARAMS), so `get_tuple`, which names a thread and a checkpoint, is one statement.
        page = self.page(tuples, ["-checkpoint_id", "-id"], ThreadCheckpointFilterSet)
        writes = pending_writes_of(page.results)

        def pending(checkpoint: Checkpoint) -> list[tuple[str, str]]:
            key = (checkpoint.thread_id, checkpoint.namespace, checkpoint.checkpoint_id)
            rows = writes.get(key, [])
            return [("pending_writes", json_array(pending_write_representation(w) for w in rows))]

        results = page_representation(page.results, include_state=True, more=pending)
        return page.written(results)


class LangGraphCheckpointSaveView(CheckpointSavingView):
    @extend_schema(
        operation_id="langgraph_checkpoints_save",
        summary="Save a LangGraph checkpoint; unchanged channels may be inherited from the parent",
        request=LangGraphCheckpointSaveSerializer,
        parameters=[INCLUDE_STATE_PARAM],
        responses={201: CheckpointSerializer, 200: CheckpointSerializer},
    )
    def post(self, request: Request, thread_id: str) -> HttpResponse:
        return self.save_from_body(LangGraphCheckpointSaveSerializer, thread_id)

    def store(self, thread_id: str, arguments: dict[str, Any]) -> SaveResult:
        inherit = arguments.pop("inherit", None)
        return langgraph_checkpoint_save(
            workspace=self.workspace, thread_id=thread_id, arguments=arguments, inherit=inherit
        )


class LangGraphWritesView(WorkspaceAPIView):
    @extend_schema(
        operation_id="langgraph_writes_put",
        summary="Store several tasks' pending writes on one thread, in order (each as the writes endpoint)",
        request=LangGraphWritesSerializer,
        parameters=[USER_PARAM],
        responses={201: inline_serializer("LangGraphWritesStored", {"tasks": serializers.IntegerField()})},
    )
    def post(self, request: Request, thread_id: str) -> HttpResponse:
        data = self.validated(LangGraphWritesSerializer)
        stored = langgraph_writes_put(
            workspace=self.workspace, thread_id=thread_id, tasks=data["tasks"], user_id=self.query_user_id()
        )
        return written_response(json_object([("tasks", str(stored))]), status.HTTP_201_CREATED)


class LangGraphRunsDeleteView(WorkspaceAPIView):
    @extend_schema(
        operation_id="langgraph_runs_delete",
        summary="Delete the checkpoints of runs (they become tombstones; their pending writes go)",
        request=RunsDeleteSerializer,
        responses={200: inline_serializer("RunsDeleted", {"deleted": serializers.IntegerField()})},
    )
    def post(self, request: Request) -> Response:
        data = self.validated(RunsDeleteSerializer)
        deleted = checkpoints_delete_for_runs(
            workspace=self.workspace, run_ids=data["run_ids"], actor=self.actor
        )
        return Response({"deleted": deleted}, status=status.HTTP_200_OK)
