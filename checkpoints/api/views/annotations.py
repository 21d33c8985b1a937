"""Annotation endpoints: list and add a thread's findings, get or delete one (docs/dashboard.md,
"Findings")."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints.api.pagination import PAGE_PARAMS, KeysetPage
from checkpoints.api.serializers.annotations import (
    AnnotationCreateSerializer,
    AnnotationPageSerializer,
    AnnotationSerializer,
)
from checkpoints.api.views.threads import USER_PARAM, ThreadScopedView
from checkpoints.models import Annotation
from checkpoints.services.annotations import (
    annotation_create,
    annotation_delete,
    annotation_get,
    thread_annotations,
)


class ThreadAnnotationsView(ThreadScopedView):
    @extend_schema(
        operation_id="threads_annotations_list",
        summary="A thread's annotations, newest first",
        parameters=[USER_PARAM, *PAGE_PARAMS],
        responses=AnnotationPageSerializer,
    )
    def get(self, request: Request, thread_id: str) -> Response:
        thread = self.thread(thread_id)
        page = KeysetPage(request, thread_annotations(thread=thread), ["-created_at", "-id"])
        context = {"thread_id": thread.thread_id}
        return Response(page.envelope(AnnotationSerializer.render_many(page.results, context)))

    @extend_schema(
        summary="Add an annotation (a comment, an optional verdict) to the thread or a checkpoint of it",
        description="Audited as annotation.create. A checkpoint_id that is not in the thread is a 404.",
        request=AnnotationCreateSerializer,
        parameters=[USER_PARAM],
        responses={201: AnnotationSerializer},
    )
    def post(self, request: Request, thread_id: str) -> Response:
        data = self.validated(AnnotationCreateSerializer)
        thread = self.thread(thread_id)
        annotation = annotation_create(
            thread=thread,
            actor=self.actor,
            comment=data["comment"],
            verdict=data.get("verdict") or "",
            checkpoint=self.named_checkpoint(thread, data),
        )
        body = AnnotationSerializer.render(annotation, {"thread_id": thread.thread_id})
        return Response(body, status=status.HTTP_201_CREATED)


class AnnotationDetailView(ThreadScopedView):
    def annotation(self, thread_id: str, annotation_id: uuid.UUID) -> Annotation:
        """The annotation of the path, in the thread the key and `user_id` may reach."""
        thread = self.thread(thread_id)
        return annotation_get(workspace=self.workspace, thread=thread, annotation_id=annotation_id)

    @extend_schema(summary="One annotation", parameters=[USER_PARAM], responses={200: AnnotationSerializer})
    def get(self, request: Request, thread_id: str, annotation_id: uuid.UUID) -> Response:
        annotation = self.annotation(thread_id, annotation_id)
        return Response(AnnotationSerializer.render(annotation, {"thread_id": thread_id}))

    @extend_schema(summary="Delete one annotation (audited)", parameters=[USER_PARAM], responses={204: None})
    def delete(self, request: Request, thread_id: str, annotation_id: uuid.UUID) -> Response:
        annotation_delete(annotation=self.annotation(thread_id, annotation_id), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)
