"""Medallions and their revisions: read-only here (every change is a revision written by a service)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from checkpoints.admin.base import (
    BulkOperation,
    CairnModelAdmin,
    ReadOnlyAdminMixin,
    WorkspaceFilter,
    delete_operation,
    json_column,
    link_column,
)
from checkpoints.models import Medallion, MedallionRevision
from checkpoints.services.audit import Actor
from checkpoints.services.medallions import medallion_delete, medallion_update


def _mark_stale(medallion: Medallion, actor: Actor) -> bool:
    if medallion.status == Medallion.Status.STALE:
        return False
    medallion_update(medallion=medallion, changes={"status": Medallion.Status.STALE}, actor=actor)
    return True


MARK_STALE = BulkOperation(
    "stale",
    "Mark all matching medallions stale",
    "Stale medallions are no longer loaded by scope queries and free their scope for a new one. Each change "
    "is a new revision and is audited.",
    _mark_stale,
)
DELETE = delete_operation(
    "medallions",
    "Each medallion and its revisions are deleted; the audit event keeps its scope and version.",
    medallion_delete,
    "medallion",
)


@admin.register(Medallion)
class MedallionAdmin(ReadOnlyAdminMixin, CairnModelAdmin):
    list_display = (
        "medallion_id",
        "workspace",
        "high_level",
        "graph_nodes",
        "tags",
        "status",
        "version",
        "updated_at",
    )
    list_filter = (WorkspaceFilter, "status")
    search_fields = ("=medallion_id", "high_level")
    search_help_text = "Exact medallion id, or part of the summary."
    date_hierarchy = "updated_at"
    list_select_related = ("workspace",)
    changelist_defer = ("subsystems", "decisions", "open_questions", "affordances")
    bulk_operations = (MARK_STALE, DELETE)
    fields = (
        "dashboard",
        "medallion_id",
        "workspace",
        "graph_nodes",
        "tags",
        "scope_key",
        "status",
        "version",
        "schema_version",
        "model",
        "high_level",
        "subsystems_view",
        "decisions_view",
        "open_questions_view",
        "affordances_view",
        "knowledge_min_ts",
        "knowledge_max_ts",
        "source_thread_link",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    source_thread_link = link_column("source_thread", "thread_id", description="source thread")
    subsystems_view = json_column("subsystems")
    decisions_view = json_column("decisions")
    open_questions_view = json_column("open_questions")
    affordances_view = json_column("affordances")

    @admin.display(description="dashboard")
    def dashboard(self, obj: Medallion) -> SafeString:
        url = reverse("dashboard:medallion", args=[obj.workspace.slug, obj.medallion_id])
        return format_html('<a href="{}">Open with its revision history</a>', url)


@admin.register(MedallionRevision)
class MedallionRevisionAdmin(ReadOnlyAdminMixin, CairnModelAdmin):
    workspace_path = "medallion__workspace"
    list_display = ("medallion_link", "version", "status", "model", "actor_label", "job", "created_at")
    list_filter = (WorkspaceFilter, "status")
    search_fields = ("=medallion__medallion_id",)
    search_help_text = "Exact medallion id."
    date_hierarchy = "created_at"
    list_select_related = ("medallion", "job")
    changelist_defer = ("content", "evidence")
    fields = (
        "medallion_link",
        "version",
        "status",
        "model",
        "actor_label",
        "job",
        "created_at",
        "content_view",
        "evidence_view",
    )
    readonly_fields = fields
    medallion_link = link_column("medallion", "medallion_id", description="medallion")
    content_view = json_column("content")
    evidence_view = json_column("evidence")
