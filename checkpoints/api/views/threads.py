"""Thread endpoints: create, list, get, patch, delete; fork, copy, prune, storage."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints.api.filters import ThreadFilterSet
from checkpoints.api.pagination import PAGE_PARAMS, KeysetPage
from checkpoints.api.serializers.threads import (
    PruneResultSerializer,
    ThreadCopySerializer,
    ThreadCreateSerializer,
    ThreadDetailSerializer,
    ThreadForkSerializer,
    ThreadPageSerializer,
    ThreadPruneSerializer,
    ThreadSerializer,
    ThreadStorageSerializer,
    ThreadUpdateSerializer,
)
from checkpoints.api.views.base import USER_PARAM, WorkspaceAPIView
from checkpoints.exceptions import NotFound, ValidationFailed
from checkpoints.models import Checkpoint, Thread
from checkpoints.models.thread import ThreadQuerySet
from checkpoints.services.checkpoint_reads import checkpoint_get, thread_get
from checkpoints.services.idle_expiry import with_idle_expiry
from checkpoints.services.thread_storage import storage_summary, with_stored_sizes
from checkpoints.services.threads import (
    thread_copy,
    thread_create,
    thread_delete,
    thread_fork,
    thread_prune,
    thread_storage,
    thread_update,
)

THREAD_ORDERINGS = ("-updated_at", "updated_at", "-created_at", "created_at")


class ThreadScopedView(WorkspaceAPIView):
    """Finds threads the way every thread endpoint must: in the key's workspace, and the `user_id`'s."""

    def thread(self, thread_id: str, *, with_stats: bool = False) -> Thread:
        if not with_stats:
            return thread_get(workspace=self.workspace, thread_id=thread_id, user_id=self.query_user_id())
        queryset = Thread.objects.for_workspace(self.workspace).for_user(self.query_user_id())
        thread = detailed(queryset).filter(thread_id=thread_id).first()
        if thread is None:
            raise NotFound(f"Thread {thread_id!r} not found.")
        return thread

    def named_checkpoint(self, thread: Thread, data: Mapping[str, Any]) -> Checkpoint | None:
        """The checkpoint of `thread` a request body names by `checkpoint_id` (and `namespace`), or None."""
        if data.get("checkpoint_id") is None:
            return None
        # Without a namespace the id must be unique in the thread (409 ambiguous_id otherwise).
        return checkpoint_get(
            workspace=self.workspace,
            thread_id=thread.thread_id,
            checkpoint_id=data["checkpoint_id"],
            namespace=data.get("namespace"),
        )

    def detail_response(self, thread: Thread, code: int = status.HTTP_200_OK) -> Response:
        """The thread with its counts, sizes, head and idle expiry (one query, whatever the thread holds, and
        two more when it has packed documents: `render_detail`)."""
        thread = detailed(Thread.objects.all()).get(pk=thread.pk)
        headers = {}
        if code == status.HTTP_201_CREATED:
            headers["Location"] = reverse("api:thread-detail", kwargs={"thread_id": thread.thread_id})
        return Response(render_detail(thread), status=code, headers=headers)


def detailed(queryset: ThreadQuerySet) -> QuerySet[Thread]:
    """The threads with what the detail shows besides their own fields, each a subquery or join of the one
    query: counts and head (`with_stats`), sizes (`with_stored_sizes`) and the idle expiry the retention
    jobs act on (`with_idle_expiry`, by the thread's workspace's current policy)."""
    return with_idle_expiry(with_stored_sizes(queryset.with_stats(timezone.now())))


def render_detail(thread: Thread) -> dict[str, Any] | None:
    """The detail shape of a thread annotated by `detailed`, with its storage."""
    thread.storage = storage_summary(thread)  # type: ignore[attr-defined]
    return ThreadDetailSerializer.render(thread)


class ThreadListView(ThreadScopedView):
    filterset_class = ThreadFilterSet

    @extend_schema(
        operation_id="threads_list",
        summary="List threads (newest activity first by default)",
        parameters=[
            USER_PARAM,
            OpenApiParameter("ordering", str, enum=THREAD_ORDERINGS, description="Default -updated_at."),
            *PAGE_PARAMS,
        ],
        responses=ThreadPageSerializer,
    )
    def get(self, request: Request) -> Response:
        ordering = request.query_params.get("ordering", THREAD_ORDERINGS[0])
        if ordering not in THREAD_ORDERINGS:
            message = f"ordering must be one of {', '.join(THREAD_ORDERINGS)}."
            raise ValidationFailed(message, {"fields": {"ordering": [message]}})
        queryset = (
            Thread.objects.for_workspace(self.workspace).for_user(self.query_user_id()).with_fork_source()
        )
        queryset = self.filter_queryset(queryset)
        # Keyset on (ordering field, id): the id breaks ties between equal timestamps, in the same direction.
        tie_breaker = "-id" if ordering.startswith("-") else "id"
        page = KeysetPage(request, queryset, [ordering, tie_breaker])
        return Response(page.envelope(ThreadSerializer.render_many(page.results)))

    @extend_schema(
        summary="Create a thread",
        request=ThreadCreateSerializer,
        responses={201: ThreadDetailSerializer},
    )
    def post(self, request: Request) -> Response:
        data = self.validated(ThreadCreateSerializer)
        thread = thread_create(workspace=self.workspace, actor=self.actor, **data)
        return self.detail_response(thread, status.HTTP_201_CREATED)


class ThreadDetailView(ThreadScopedView):
    @extend_schema(
        summary="A thread with message_count, checkpoint_count, storage_bytes, storage (logical and stored "
        "bytes) and head",
        parameters=[USER_PARAM],
        responses={200: ThreadDetailSerializer},
    )
    def get(self, request: Request, thread_id: str) -> Response:
        return Response(render_detail(self.thread(thread_id, with_stats=True)))

    @extend_schema(
        summary="Change name, user_id, tags, metadata, scope, ttl_seconds or pinned",
        request=ThreadUpdateSerializer,
        parameters=[USER_PARAM],
        responses={200: ThreadDetailSerializer},
    )
    def patch(self, request: Request, thread_id: str) -> Response:
        thread = self.thread(thread_id)
        data = self.validated(ThreadUpdateSerializer)
        return self.detail_response(thread_update(thread=thread, actor=self.actor, **data))

    @extend_schema(
        summary="Erase the thread and everything under it (audited as thread.delete)",
        parameters=[USER_PARAM],
        responses={204: None},
    )
    def delete(self, request: Request, thread_id: str) -> Response:
        thread_delete(thread=self.thread(thread_id), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ThreadForkView(ThreadScopedView):
    @extend_schema(
        summary="Fork: a new thread headed by a copy of a checkpoint (default: the head), with the messages "
        "up to its message_seq",
        request=ThreadForkSerializer,
        parameters=[USER_PARAM],
        responses={201: ThreadDetailSerializer},
    )
    def post(self, request: Request, thread_id: str) -> Response:
        source = self.thread(thread_id)
        data = self.validated(ThreadForkSerializer)
        forked = thread_fork(
            source=source,
            actor=self.actor,
            checkpoint=self.named_checkpoint(source, data),
            namespace=data.get("namespace", ""),
            thread_id=data.get("thread_id"),
            name=data.get("name"),
        )
        return self.detail_response(forked, status.HTTP_201_CREATED)


class ThreadCopyView(ThreadScopedView):
    @extend_schema(
        summary="Copy the whole thread (checkpoints with the same ids, pending writes, messages)",
        request=ThreadCopySerializer,
        parameters=[USER_PARAM],
        responses={201: ThreadDetailSerializer},
    )
    def post(self, request: Request, thread_id: str) -> Response:
        source = self.thread(thread_id)
        data = self.validated(ThreadCopySerializer)
        copied = thread_copy(source=source, thread_id=data["thread_id"], actor=self.actor)
        return self.detail_response(copied, status.HTTP_201_CREATED)


class ThreadPruneView(ThreadScopedView):
    @extend_schema(
        summary="Delete checkpoints: keep_latest (the newest of each namespace) or delete (all)",
        request=ThreadPruneSerializer,
        parameters=[USER_PARAM],
        responses={200: PruneResultSerializer},
    )
    def post(self, request: Request, thread_id: str) -> Response:
        thread = self.thread(thread_id)
        data = self.validated(ThreadPruneSerializer)
        return Response({"pruned": thread_prune(thread=thread, strategy=data["strategy"], actor=self.actor)})


class ThreadStorageView(ThreadScopedView):
    @extend_schema(
        summary="Bytes stored under the thread, by namespace and kind (state, writes, messages), logical and "
        "as stored",
        parameters=[USER_PARAM],
        responses={200: ThreadStorageSerializer},
    )
    def get(self, request: Request, thread_id: str) -> Response:
        return Response(thread_storage(thread=self.thread(thread_id)))
