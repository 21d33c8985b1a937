"""Threads (delete and prune through the services) and messages."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.db.models import Q, QuerySet
from django.db.models.functions import Substr
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from checkpoints.admin.base import (
    THREAD_LINK,
    BulkOperation,
    CairnModelAdmin,
    ReadOnlyAdminMixin,
    WorkspaceFilter,
    YesNoFilter,
    delete_operation,
    json_column,
    link_column,
)
from checkpoints.exceptions import ValidationFailed
from checkpoints.models import Message, Thread
from checkpoints.services.audit import Actor
from checkpoints.services.idle_expiry import SOURCE_PINNED, SOURCE_THREAD, with_idle_expiry
from checkpoints.services.messages import message_delete
from checkpoints.services.search import messages_matching
from checkpoints.services.threads import thread_delete, thread_prune


def _prune(thread: Thread, actor: Actor) -> bool:
    return thread_prune(thread=thread, strategy="keep_latest", actor=actor) > 0


DELETE = delete_operation(
    "threads",
    "Each thread and everything under it (checkpoints, pending writes, messages) is erased for good; an "
    "audit event thread.delete remains for each.",
    thread_delete,
    "thread",
)
PRUNE = BulkOperation(
    "prune",
    "Prune all matching threads to their latest checkpoints",
    "Keeps only the newest live checkpoint of each namespace of each thread; older ones, tombstones and "
    "expired ones are deleted. Each prune is audited.",
    _prune,
)


class ForkedFilter(YesNoFilter):
    title = "origin"
    parameter_name = "forked"
    options = (("yes", "Forked from another thread"), ("no", "Not a fork"))
    yes_when = ~Q(forked_from_checkpoint_id="")


@admin.register(Thread)
class ThreadAdmin(ReadOnlyAdminMixin, CairnModelAdmin):
    list_display = (
        "thread_id",
        "workspace",
        "name",
        "user_id",
        "tags",
        "pinned",
        "forked_from_link",
        "created_at",
        "updated_at",
    )
    list_filter = (WorkspaceFilter, "pinned", ForkedFilter)
    search_fields = ("=thread_id", "=user_id", "name")
    search_help_text = "Exact thread id or user id, or part of the name."
    date_hierarchy = "created_at"
    list_select_related = ("workspace", "forked_from")
    changelist_defer = ("metadata", "scope")
    bulk_operations = (DELETE, PRUNE)
    fields = (
        "dashboard",
        "workspace",
        "thread_id",
        "name",
        "user_id",
        "tags",
        "metadata_view",
        "scope",
        "ttl_seconds",
        "expires_at",
        "idle_expiry",
        "pinned",
        "forked_from_link",
        "forked_from_checkpoint_id",
        "forked_from_namespace",
        "last_message_seq",
        "last_summarized_seq",
        "created_at",
        "updated_at",
        "checkpoints_link",
        "messages_link",
    )
    readonly_fields = fields
    forked_from_link = link_column("forked_from", "thread_id", description="forked from")
    metadata_view = json_column("metadata")

    @admin.display(description="dashboard")
    def dashboard(self, obj: Thread) -> SafeString:
        url = reverse("dashboard:thread", kwargs={"slug": obj.workspace.slug, "thread_id": obj.thread_id})
        return format_html('<a href="{}">Open in the dashboard</a>', url)

    @admin.display(description="deleted when idle")
    def idle_expiry(self, obj: Thread) -> str:
        """The date the idle-thread expiry acts on and its rule (`idle_expiry.with_idle_expiry`), as the
        dashboard's thread page and the API's thread detail show it."""
        annotated = with_idle_expiry(Thread.objects.filter(pk=obj.pk)).only("pk").get()
        date, source = annotated.effective_expires_at, annotated.expiry_source  # type: ignore[attr-defined]
        if date is None:
            return "never (pinned)" if source == SOURCE_PINNED else "never (no idle rule applies)"
        rule = "its own idle expiry" if source == SOURCE_THREAD else "the workspace's idle-thread rule"
        return f"{date:%Y-%m-%d %H:%M:%S} UTC, by {rule}"

    @admin.display(description="checkpoints")
    def checkpoints_link(self, obj: Thread) -> SafeString:
        url = reverse("admin:checkpoints_checkpoint_changelist")
        return format_html('<a href="{}?q={}">Checkpoints of this thread</a>', url, obj.thread_id)

    @admin.display(description="messages")
    def messages_link(self, obj: Thread) -> SafeString:
        url = reverse("admin:checkpoints_message_changelist")
        return format_html('<a href="{}?q={}">Messages of this thread</a>', url, obj.thread_id)


DELETE_MESSAGES = delete_operation(
    "messages",
    "Each message is erased for good (seqs of the others do not change); each deletion is audited.",
    message_delete,
    "message",
)


@admin.register(Message)
class MessageAdmin(ReadOnlyAdminMixin, CairnModelAdmin):
    workspace_path = "thread__workspace"
    list_display = ("seq", "thread_link", "role", "preview", "message_id", "created_at")
    list_filter = (WorkspaceFilter, "role")
    search_fields = ("=thread__thread_id", "=message_id")
    search_help_text = (
        "Exact thread id or message id, or words of the content (every word, anywhere in the text; "
        '"quoted phrases" too): the same indexed search as the API\'s ?search=.'
    )
    date_hierarchy = "created_at"
    list_select_related = ("thread",)
    changelist_defer = ("content", "content_blocks", "tool_calls", "usage", "metadata", "search_text")
    bulk_operations = (DELETE_MESSAGES,)
    fields = (
        "thread_link",
        "seq",
        "message_id",
        "role",
        "name",
        "content",
        "content_blocks",
        "tool_calls",
        "tool_call_id",
        "usage",
        "metadata",
        "size_bytes",
        "created_at",
    )
    readonly_fields = fields
    thread_link = THREAD_LINK

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        # The list shows the start of each message without loading the (deferred) whole text.
        return super().get_queryset(request).annotate(content_start=Substr("content", 1, 120))

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """The exact id matches of `search_fields`, plus the messages whose content matches, found through
        the trigram index (PostgreSQL) or FTS5 table (SQLite) the API's message search uses."""
        by_id, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        if not search_term.strip():
            return by_id, may_have_duplicates
        try:
            by_content = messages_matching(Message.objects.all(), search_term).values("pk")
        except ValidationFailed as error:  # too long, too many terms: the changelist says so
            raise IncorrectLookupParameters(error.message) from error
        return by_id | queryset.filter(pk__in=by_content), may_have_duplicates

    @admin.display(description="content")
    def preview(self, obj: Message) -> str:
        start: str = getattr(obj, "content_start", "") or ""
        return start + ("…" if len(start) == 120 else "")
