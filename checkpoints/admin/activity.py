"""Jobs and the audit log: both read-only (audit events can never be added, changed or deleted)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from checkpoints.admin.base import (
    CairnModelAdmin,
    ReadOnlyAdminMixin,
    WorkspaceFilter,
    json_column,
)
from checkpoints.models import AuditEvent, Job


@admin.register(Job)
class JobAdmin(ReadOnlyAdminMixin, CairnModelAdmin):
    list_display = (
        "job_id",
        "workspace",
        "kind",
        "status",
        "attempts",
        "created_at",
        "started_at",
        "finished_at",
    )
    list_filter = (WorkspaceFilter, "kind", "status")
    search_fields = ("=job_id", "=celery_task_id")
    search_help_text = "Exact job id or Celery task id."
    date_hierarchy = "created_at"
    list_select_related = ("workspace",)
    changelist_defer = ("params", "result", "error")
    fields = (
        "job_id",
        "workspace",
        "kind",
        "status",
        "attempts",
        "celery_task_id",
        "created_at",
        "started_at",
        "finished_at",
        "params_view",
        "result_view",
        "error",
    )
    readonly_fields = fields
    params_view = json_column("params")
    result_view = json_column("result")


class ActionFilter(admin.SimpleListFilter):
    """By kind of action (a prefix): no SELECT DISTINCT over the whole log."""

    title = "action"
    parameter_name = "action_kind"
    KINDS = ("thread", "checkpoint", "message", "medallion", "retention", "apikey")

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(kind, f"{kind}.*") for kind in self.KINDS]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in self.KINDS:
            return queryset.filter(action__startswith=f"{self.value()}.")
        return queryset


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdminMixin, CairnModelAdmin):
    list_display = (
        "created_at",
        "workspace",
        "actor_type",
        "actor_label",
        "action",
        "target_type",
        "target_id",
    )
    list_filter = (WorkspaceFilter, "actor_type", ActionFilter)
    search_fields = ("=action", "=target_id", "actor_label")
    search_help_text = "Exact action or target id, or part of the actor."
    date_hierarchy = "created_at"
    list_select_related = ("workspace",)
    changelist_defer = ("details",)
    fields = (
        "created_at",
        "workspace",
        "actor_type",
        "actor_label",
        "actor_user",
        "actor_api_key",
        "action",
        "target_type",
        "target_id",
        "details_view",
    )
    readonly_fields = fields
    details_view = json_column("details")
