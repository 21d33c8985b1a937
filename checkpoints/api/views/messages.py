"""Message endpoints: append and list a thread's messages, get or delete one, search the workspace."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from checkpoints.api.filters import MessageFilterSet, WorkspaceMessageFilterSet
from checkpoints.api.pagination import PAGE_PARAMS, KeysetPage
from checkpoints.api.serializers.messages import (
    MessageListSerializer,
    MessagePageSerializer,
    MessagesAppendSerializer,
    MessageSerializer,
)
from checkpoints.api.views.threads import USER_PARAM, ThreadScopedView
from checkpoints.exceptions import NotFound
from checkpoints.models import Message
from checkpoints.services.messages import MessagePages, message_delete, messages_append


class ThreadMessagesView(ThreadScopedView):
    filterset_class = MessageFilterSet

    @extend_schema(
        operation_id="threads_messages_list",
        summary="A thread's messages in seq order",
        parameters=[USER_PARAM, *PAGE_PARAMS],
        responses=MessagePageSerializer,
    )
    def get(self, request: Request, thread_id: str) -> Response:
        thread = self.thread(thread_id)
        page = self.page(MessagePages(thread), ["seq"])  # seq is unique per thread
        context = {"thread_id": thread.thread_id}
        return Response(page.envelope(MessageSerializer.render_many(page.results, context)))

    @extend_schema(
        summary="Append 1-1000 messages in order (creates the thread if missing)",
        description="Each gets the thread's next seq. A known message_id with identical content is returned "
        "as stored (idempotent retry); with different content the whole batch is refused (409).",
        request=MessagesAppendSerializer,
        parameters=[USER_PARAM],
        responses={201: MessageListSerializer},
    )
    def post(self, request: Request, thread_id: str) -> Response:
        data = self.validated(MessagesAppendSerializer)
        messages = messages_append(
            workspace=self.workspace,
            thread_id=thread_id,
            messages=data["messages"],
            user_id=self.query_user_id(),
        )
        body = {"results": MessageSerializer.render_many(messages, {"thread_id": thread_id})}
        return Response(body, status=status.HTTP_201_CREATED)


class MessageDetailView(ThreadScopedView):
    def message(self, thread_id: str, message_id: str) -> Message:
        thread = self.thread(thread_id)
        message = Message.objects.filter(thread=thread, message_id=message_id).for_display().first()
        if message is None:
            raise NotFound(f"Message {message_id!r} not found in thread {thread_id!r}.")
        return message

    @extend_schema(summary="One message", parameters=[USER_PARAM], responses={200: MessageSerializer})
    def get(self, request: Request, thread_id: str, message_id: str) -> Response:
        message = self.message(thread_id, message_id)
        return Response(MessageSerializer.render(message, {"thread_id": thread_id}))

    @extend_schema(summary="Delete one message (audited)", parameters=[USER_PARAM], responses={204: None})
    def delete(self, request: Request, thread_id: str, message_id: str) -> Response:
        message_delete(message=self.message(thread_id, message_id), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkspaceMessagesView(ThreadScopedView):
    filterset_class = WorkspaceMessageFilterSet

    @extend_schema(
        summary="Search messages across the workspace (newest first)",
        parameters=[
            OpenApiParameter("user_id", str, description="Only messages of this end user's threads."),
            *PAGE_PARAMS,
        ],
        responses=MessagePageSerializer,
    )
    def get(self, request: Request) -> Response:
        queryset = Message.objects.for_workspace(self.workspace).for_display().with_thread_id()
        user_id = self.query_user_id()
        if user_id is not None:
            queryset = queryset.filter(thread__user_id=user_id)
        page = KeysetPage(request, self.filter_queryset(queryset), ["-id"])
        return Response(page.envelope(MessageSerializer.render_many(page.results)))
