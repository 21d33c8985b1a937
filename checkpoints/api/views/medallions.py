"""Medallion endpoints: scope queries, agent-written medallions, `checkpoint` (create-or-update as a job,
optionally waited for), detail / edit / delete, revisions, and summarising a thread."""

from __future__ import annotations

import math
import time
from typing import Any

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints import medallion_schema as schema
from checkpoints.api.fields import ClientIdField, JSONObjectField, StrictCharField, StrictSerializer
from checkpoints.api.pagination import PAGE_PARAMS, KeysetPage, OffsetPage
from checkpoints.api.serializers import medallions as shapes
from checkpoints.api.serializers.jobs import JobSerializer
from checkpoints.api.views.base import ReadingPostView, WorkspaceAPIView
from checkpoints.api.views.jobs import job_response
from checkpoints.exceptions import ValidationFailed
from checkpoints.models import Job, Medallion
from checkpoints.numbers import parse_whole_number
from checkpoints.services.checkpoint_reads import thread_get
from checkpoints.services.medallion_reads import (
    medallion_get,
    medallion_revisions,
    medallions_for_scope,
    scope_from_query,
)
from checkpoints.services.medallion_summaries import thread_summarize_submit
from checkpoints.services.medallion_vectors import medallions_search
from checkpoints.services.medallions import (
    medallion_checkpoint_submit,
    medallion_create,
    medallion_delete,
    medallion_update,
    parse_input,
)

MAX_WAIT_SECONDS = 30
MAX_QUERY_CHARS = 4000
_FINISHED = (Job.Status.SUCCEEDED, Job.Status.FAILED)


def medallion_url(medallion: Medallion) -> str:
    return reverse("api:medallion-detail", kwargs={"medallion_id": str(medallion.medallion_id)})


def _query_list(request: Request, name: str) -> list[str]:
    """A repeatable and/or comma-separated query parameter (`?tags=a&tags=b,c`)."""
    return [part for value in request.query_params.getlist(name) for part in value.split(",")]


def _statuses(request: Request) -> tuple[str, ...]:
    return statuses_from(_query_list(request, "status"))


def statuses_from(given: list[str]) -> tuple[str, ...]:
    """The statuses asked for (default active; `any` is all of them)."""
    wanted = given or [Medallion.Status.ACTIVE]
    if "any" in wanted:
        return tuple(schema.STATUSES)
    unknown = [s for s in wanted if s not in schema.STATUSES]
    if unknown:
        raise ValidationFailed(
            f"status must be one of {', '.join(schema.STATUSES)} (or any).", {"status": unknown[:5]}
        )
    return tuple(dict.fromkeys(wanted))


def _wait_seconds(request: Request) -> float:
    raw = request.query_params.get("wait")
    if raw is None:  # present but empty is not a number either
        return 0.0
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= MAX_WAIT_SECONDS:  # NaN fails this too
        raise ValidationFailed(
            f"wait must be a number of seconds from 0 to {MAX_WAIT_SECONDS}.", {"wait": raw}
        )
    return seconds


def _wait_for(job: Job, seconds: float) -> Job:
    """Poll the job row until it finishes or `seconds` pass (each read sees the worker's commits)."""
    deadline = time.monotonic() + seconds
    delay = 0.05
    while True:
        job.refresh_from_db()
        remaining = deadline - time.monotonic()
        if job.status in _FINISHED or remaining <= 0:
            return job
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.5)


class MedallionCheckpointSerializer(StrictSerializer):
    scope = JSONObjectField()
    evidence = JSONObjectField()
    thread_id = ClientIdField(required=False, allow_null=True)


class MedallionSearchSerializer(StrictSerializer):
    query = StrictCharField(min_length=1, max_length=MAX_QUERY_CHARS)
    graph_nodes = serializers.ListField(child=StrictCharField(), required=False, default=list)
    tags = serializers.ListField(child=StrictCharField(), required=False, default=list)
    status = serializers.ListField(child=StrictCharField(), required=False, default=list)


class MedallionListView(WorkspaceAPIView):
    @extend_schema(
        operation_id="medallions_list",
        summary="Medallions for a scope: graph_nodes ⊇ requested AND tags overlap, newest updated_at first",
        parameters=[
            OpenApiParameter(
                "graph_nodes",
                str,
                many=True,
                description="Repeatable or comma-separated; all must be present.",
            ),
            OpenApiParameter(
                "tags", str, many=True, description="Repeatable or comma-separated; any one matches."
            ),
            OpenApiParameter(
                "status",
                str,
                many=True,
                enum=[*schema.STATUSES, "any"],
                description="Default active; repeatable or comma-separated.",
            ),
            *PAGE_PARAMS,
        ],
        responses={200: OpenApiResponse(shapes.page_schema(shapes.MEDALLION_SCHEMA))},
    )
    def get(self, request: Request) -> Response:
        scope = scope_from_query(_query_list(request, "graph_nodes"), _query_list(request, "tags"))
        queryset = medallions_for_scope(workspace=self.workspace, scope=scope, statuses=_statuses(request))
        page = KeysetPage(request, queryset, ["-updated_at", "-id"])
        return Response(page.envelope([shapes.medallion_representation(m) for m in page.results]))

    @extend_schema(
        operation_id="medallions_create",
        summary="Store an agent-written medallion (409 if an active one has exactly this scope)",
        request={"application/json": shapes.MEDALLION_CREATE_SCHEMA},
        responses={201: OpenApiResponse(shapes.MEDALLION_SCHEMA)},
    )
    def post(self, request: Request) -> Response:
        draft = parse_input(schema.MedallionDraft.from_dict, request.data)
        medallion = medallion_create(workspace=self.workspace, document=draft, actor=self.actor)
        return Response(
            shapes.medallion_representation(medallion),
            status=status.HTTP_201_CREATED,
            headers={"Location": medallion_url(medallion)},
        )


class MedallionSearchView(ReadingPostView):
    @extend_schema(
        operation_id="medallions_search",
        summary="Medallions of a scope ranked by meaning against `query`, each with its `score`",
        description=(
            "The scope and status select as in `GET medallions/` (an empty scope selects every medallion); "
            "the best match comes first. Medallions not embedded yet follow, newest first, with a null "
            "score (docs/medallions.md)."
        ),
        parameters=PAGE_PARAMS,
        request=MedallionSearchSerializer,
        responses={200: OpenApiResponse(shapes.page_schema(shapes.SCORED_MEDALLION_SCHEMA))},
    )
    def post(self, request: Request) -> Response:
        data = self.validated(MedallionSearchSerializer)
        scope = parse_input(
            schema.MedallionScope.from_dict, {"graph_nodes": data["graph_nodes"], "tags": data["tags"]}
        )
        page = OffsetPage(request)
        found = medallions_search(
            workspace=self.workspace,
            scope=scope,
            query=data["query"],
            statuses=statuses_from(data["status"]),
            limit=page.limit + 1,  # one more tells whether there is a next page
            offset=page.offset,
        )
        results = [{**shapes.medallion_representation(m), "score": score} for m, score in found]
        return Response(page.envelope(results))


class MedallionCheckpointView(WorkspaceAPIView):
    @extend_schema(
        operation_id="medallions_checkpoint",
        summary="checkpoint_session: create or update the medallion of exactly this scope (a job)",
        description=(
            "Runs as a job. With `?wait=N` (0-30 s) the call waits for it: 201 with the new medallion, 200 "
            "with the updated one; otherwise (or if it is not done in time, or failed) 202 with the job."
        ),
        parameters=[OpenApiParameter("wait", OpenApiTypes.NUMBER, description="Seconds to wait, 0-30.")],
        request={"application/json": shapes.CHECKPOINT_SCHEMA},
        responses={
            201: OpenApiResponse(shapes.MEDALLION_SCHEMA, description="Created."),
            200: OpenApiResponse(shapes.MEDALLION_SCHEMA, description="Updated."),
            202: OpenApiResponse(JobSerializer, description="Still running, or failed: see the job."),
        },
    )
    def post(self, request: Request) -> Response:
        seconds = _wait_seconds(request)
        data = self.validated(MedallionCheckpointSerializer)
        scope = parse_input(lambda d: schema.MedallionScope.from_dict(d, "$.scope"), data["scope"])
        evidence = parse_input(lambda d: schema.Evidence.from_dict(d, "$.evidence"), data["evidence"])
        thread = None
        if data.get("thread_id"):
            thread = thread_get(workspace=self.workspace, thread_id=data["thread_id"])
        job = medallion_checkpoint_submit(
            workspace=self.workspace, scope=scope, evidence=evidence, actor=self.actor, thread=thread
        )
        job = _wait_for(job, seconds)
        if job.status != Job.Status.SUCCEEDED or not job.result:
            return job_response(job)
        medallion = medallion_get(workspace=self.workspace, medallion_id=job.result["medallion_id"])
        created = bool(job.result.get("created"))
        return Response(
            shapes.medallion_representation(medallion),
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
            headers={"Location": medallion_url(medallion), "X-Job-Id": str(job.job_id)},
        )


class MedallionDetailView(WorkspaceAPIView):
    @extend_schema(
        operation_id="medallions_retrieve",
        summary="One medallion (its current version)",
        responses={200: OpenApiResponse(shapes.MEDALLION_SCHEMA)},
    )
    def get(self, request: Request, medallion_id: str) -> Response:
        medallion = medallion_get(workspace=self.workspace, medallion_id=medallion_id)
        return Response(
            shapes.medallion_representation(medallion), headers={"ETag": f'"{medallion.version}"'}
        )

    @extend_schema(
        operation_id="medallions_partial_update",
        summary="Change status and/or content: a new version (stale/superseded frees the scope)",
        parameters=[
            OpenApiParameter(
                "If-Match",
                str,
                location=OpenApiParameter.HEADER,
                description="The version you edited (the ETag); 412 if the medallion has moved on.",
            )
        ],
        request={"application/json": shapes.MEDALLION_PATCH_SCHEMA},
        responses={200: OpenApiResponse(shapes.MEDALLION_SCHEMA)},
    )
    def patch(self, request: Request, medallion_id: str) -> Response:
        medallion = medallion_get(workspace=self.workspace, medallion_id=medallion_id)
        patch = parse_input(schema.MedallionPatch.from_dict, request.data)
        updated = medallion_update(
            medallion=medallion, changes=patch, actor=self.actor, expected_version=self._if_match(request)
        )
        return Response(shapes.medallion_representation(updated), headers={"ETag": f'"{updated.version}"'})

    @extend_schema(
        operation_id="medallions_destroy",
        summary="Delete a medallion and its revisions",
        responses={204: None},
    )
    def delete(self, request: Request, medallion_id: str) -> Response:
        medallion_delete(
            medallion=medallion_get(workspace=self.workspace, medallion_id=medallion_id), actor=self.actor
        )
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _if_match(request: Request) -> int | None:
        raw = request.headers.get("If-Match")
        if raw is None:
            return None
        version = parse_whole_number(raw.strip().removeprefix("W/").strip('"'))
        if version is None or version < 0:
            raise ValidationFailed("If-Match must be a medallion version (its ETag).", {"If-Match": raw[:64]})
        return version


class MedallionRevisionsView(WorkspaceAPIView):
    @extend_schema(
        operation_id="medallions_revisions_list",
        summary="Every version of a medallion, newest first, with the evidence that produced it",
        parameters=PAGE_PARAMS,
        responses={200: OpenApiResponse(shapes.page_schema(shapes.REVISION_SCHEMA))},
    )
    def get(self, request: Request, medallion_id: str) -> Response:
        medallion = medallion_get(workspace=self.workspace, medallion_id=medallion_id)
        page = KeysetPage(request, medallion_revisions(medallion=medallion), ["-version"])
        return Response(page.envelope([shapes.revision_representation(r) for r in page.results]))


class ThreadSummarizeView(WorkspaceAPIView):
    @extend_schema(
        operation_id="threads_summarize",
        summary="Summarise the thread's new messages into the medallion of its scope (a job)",
        request=None,
        responses={202: JobSerializer},
    )
    def post(self, request: Request, thread_id: str) -> Response:
        if request.data not in ({}, None):
            self._refuse_body(request.data)
        thread = thread_get(workspace=self.workspace, thread_id=thread_id)
        return job_response(thread_summarize_submit(thread=thread, actor=self.actor))

    @staticmethod
    def _refuse_body(data: Any) -> None:
        raise ValidationFailed("This endpoint takes no body (send none, or {}).", {"body": str(data)[:100]})
