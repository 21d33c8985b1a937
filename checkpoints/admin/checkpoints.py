"""Checkpoints (payloads read-only; expire and pin through the services) and LangGraph pending writes."""

from __future__ import annotations

from typing import Any, ClassVar
from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from checkpoints.admin.base import (
    THREAD_LINK,
    BulkOperation,
    CairnModelAdmin,
    ReadOnlyAdminMixin,
    WorkspaceFilter,
    admin_link,
    json_column,
    json_field,
    link_column,
)
from checkpoints.integrity import STEP_FIELDS
from checkpoints.models import Checkpoint, PendingWrite
from checkpoints.models.value import unpack_writes
from checkpoints.packing import is_packed
from checkpoints.services.audit import Actor
from checkpoints.services.checkpoints import checkpoint_expire, checkpoint_set_ttl, checkpoint_verify


class ExpiryFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("live", "Live"),
            ("expired", "Expired, not swept yet"),
            ("tombstone", "Tombstone"),
            ("expiring", "Has an expiry"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        if self.value() == "live":
            return queryset.live(now)  # type: ignore[attr-defined]
        if self.value() == "expired":
            return queryset.filter(expired_at__isnull=True, pinned=False, expires_at__lte=now)
        if self.value() == "tombstone":
            return queryset.filter(expired_at__isnull=False)
        if self.value() == "expiring":
            return queryset.filter(Q(expires_at__isnull=False), expired_at__isnull=True, pinned=False)
        return queryset


def _expire(checkpoint: Checkpoint, actor: Actor) -> bool:
    if not checkpoint.is_readable() or checkpoint.pinned:
        return False
    checkpoint_expire(checkpoint=checkpoint, actor=actor)
    return True


def _pin(pinned: bool) -> Any:
    def apply(checkpoint: Checkpoint, actor: Actor) -> bool:
        if checkpoint.pinned == pinned or not checkpoint.is_readable():
            return False
        checkpoint_set_ttl(checkpoint=checkpoint, actor=actor, pinned=pinned)
        return True

    return apply


EXPIRE = BulkOperation(
    "expire",
    "Expire all matching checkpoints",
    "Each live, unpinned checkpoint becomes a tombstone (payload and pending writes erased; ids, parent "
    "and checksum kept). Pinned and already expired ones are skipped. Each expiry is audited.",
    _expire,
)
PIN = BulkOperation("pin", "Pin all matching checkpoints", "Pinned checkpoints never expire.", _pin(True))
UNPIN = BulkOperation(
    "unpin", "Unpin all matching checkpoints", "They expire again at their expiry time.", _pin(False)
)


@admin.register(Checkpoint)
class CheckpointAdmin(ReadOnlyAdminMixin, CairnModelAdmin):
    list_display = (
        "checkpoint_id",
        "thread_link",
        "namespace",
        "agent_id",
        "step_index",
        "status",
        "size_bytes",
        "created_at",
        "expires_at",
    )
    list_filter = (WorkspaceFilter, ExpiryFilter, "pinned", "framework")
    # Exact matches on ids hit the indexes; a substring search over millions of rows would not.
    search_fields = ("=checkpoint_id", "=thread__thread_id", "=agent_id", "=run_id")
    search_help_text = "Exact checkpoint id, thread id, agent id or run id."
    date_hierarchy = "created_at"
    list_select_related = ("thread", "workspace")
    changelist_defer = ("state", "context", "metadata")
    bulk_operations = (EXPIRE, PIN, UNPIN)
    fields: ClassVar[tuple[str, ...]] = (
        "dashboard",
        "workspace_link",
        "thread_link",
        "namespace",
        "checkpoint_id",
        "parent_link",
        *STEP_FIELDS,
        "handoff_from",
        "handoff_target",
        "message_seq",
        "integrity",
        "checksum",
        "size_bytes",
        "created_at",
        "expires_at",
        "pinned",
        "expired_at",
        "state_view",
        "context_view",
        "metadata_view",
    )
    readonly_fields = fields
    thread_link = THREAD_LINK
    workspace_link = link_column("workspace", description="workspace")
    state_view = json_column("state", stored_text=True)
    context_view = json_column("context", stored_text=True)
    metadata_view = json_column("metadata", stored_text=True)

    @admin.display(description="parent")
    def parent_link(self, obj: Checkpoint) -> SafeString | str:
        parent = (
            Checkpoint.objects.filter(
                thread=obj.thread_id, namespace=obj.namespace, checkpoint_id=obj.parent_checkpoint_id
            )
            .only("pk", "checkpoint_id")
            .first()
            if obj.parent_checkpoint_id
            else None
        )
        return admin_link(parent, obj.parent_checkpoint_id) if parent else (obj.parent_checkpoint_id or "—")

    @admin.display(description="status")
    def status(self, obj: Checkpoint) -> str:
        if obj.expired_at is not None:
            return "tombstone"
        if not obj.is_readable():
            return "expired"
        return "pinned" if obj.pinned else "live"

    @admin.display(description="integrity")
    def integrity(self, obj: Checkpoint) -> SafeString:
        if obj.state is None:
            return format_html("<span>{}</span>", "tombstone: payload erased")
        if checkpoint_verify(obj):
            return format_html('<strong style="color:#146c2e">{}</strong>', "✔ checksum verified")
        return format_html('<strong style="color:#b42318">{}</strong>', "✖ checksum mismatch")

    @admin.display(description="dashboard")
    def dashboard(self, obj: Checkpoint) -> SafeString:
        url = reverse(
            "dashboard:checkpoint",
            kwargs={
                "slug": obj.workspace.slug,
                "thread_id": obj.thread.thread_id,
                "checkpoint_id": obj.checkpoint_id,
            },
        )
        return format_html('<a href="{}?{}">Open in the dashboard</a>', url, urlencode({"ns": obj.namespace}))


@admin.register(PendingWrite)
class PendingWriteAdmin(ReadOnlyAdminMixin, CairnModelAdmin):
    workspace_path = "thread__workspace"
    list_display = (
        "checkpoint_id",
        "thread_link",
        "namespace",
        "task_id",
        "idx",
        "channel",
        "type",
        "created_at",
    )
    list_filter = (WorkspaceFilter,)
    search_fields = ("=checkpoint_id", "=thread__thread_id", "=task_id")
    search_help_text = "Exact checkpoint id, thread id or task id."
    date_hierarchy = "created_at"
    list_select_related = ("thread",)
    changelist_defer = ("value",)
    fields = (
        "thread_link",
        "namespace",
        "checkpoint_id",
        "task_id",
        "task_path",
        "idx",
        "channel",
        "type",
        "created_at",
        "value_view",
    )
    readonly_fields = fields
    thread_link = THREAD_LINK

    @admin.display(description="value")
    def value_view(self, obj: PendingWrite) -> SafeString | str:
        unpack_writes([obj], obj.thread.workspace_id)  # a packed value whole again (docs/storage.md)
        if is_packed(obj.value):
            return "— (it names a stored part that is missing)"
        return json_field(obj.value)
