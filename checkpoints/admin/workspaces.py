"""Workspaces (policy changes go through the audited service), memberships and API keys."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from checkpoints.admin.base import BulkOperation, CairnModelAdmin, WorkspaceFilter, YesNoFilter
from checkpoints.models import ApiKey, Membership, Workspace
from checkpoints.services.audit import Actor
from checkpoints.services.retention import POLICY_FIELDS, retention_policy_update
from checkpoints.services.workspaces import api_key_revoke


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ("user",)
    readonly_fields = ("created_at",)


class RetentionRuleFilter(admin.SimpleListFilter):
    title = "retention rule"
    parameter_name = "rule"
    RULES = {
        "default_ttl": ("Has a default TTL", "default_ttl_seconds__isnull"),
        "keep_latest": ("Keeps the latest N", "keep_latest__isnull"),
        "idle_expiry": ("Expires idle threads", "thread_idle_ttl_seconds__isnull"),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(key, label) for key, (label, _) in self.RULES.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        rule = self.RULES.get(self.value() or "")
        return queryset.filter(**{rule[1]: False}) if rule else queryset


@admin.register(Workspace)
class WorkspaceAdmin(CairnModelAdmin):
    workspace_path = ""
    list_display = (
        "slug",
        "name",
        "default_ttl_seconds",
        "keep_latest",
        "thread_idle_ttl_seconds",
        "created_at",
        "dashboard",
    )
    list_filter = (RetentionRuleFilter,)
    search_fields = ("slug", "name")
    date_hierarchy = "created_at"
    inlines = (MembershipInline,)
    readonly_fields = ("created_at",)

    def get_inlines(self, request: HttpRequest, obj: Any) -> Any:
        # Granting access is for superusers; other staff would hand themselves other workspaces.
        return self.inlines if request.user.is_superuser else ()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Deleting a workspace would erase its audit log with it: never from a form.
        return False

    def save_model(
        self, request: HttpRequest, obj: Workspace, form: ModelForm[Workspace], change: bool
    ) -> None:
        """Retention policy changes go through the service, which audits them (`retention.policy`)."""
        policy = {name: getattr(obj, name) for name in POLICY_FIELDS if name in form.changed_data}
        if not change:
            obj.save()
            return
        for name in policy:
            setattr(obj, name, form.initial.get(name))
        obj.save()
        if policy:
            retention_policy_update(workspace=obj, actor=Actor.for_user(request.user), **policy)

    @admin.display(description="dashboard")
    def dashboard(self, obj: Workspace) -> SafeString:
        return format_html('<a href="{}">Open</a>', reverse("dashboard:overview", args=[obj.slug]))


@admin.register(Membership)
class MembershipAdmin(CairnModelAdmin):
    list_display = ("user", "workspace", "created_at")
    list_filter = (WorkspaceFilter,)
    search_fields = ("user__username", "workspace__slug")
    date_hierarchy = "created_at"
    list_select_related = ("user", "workspace")
    autocomplete_fields = ("user", "workspace")
    readonly_fields = ("created_at",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)


def _revoke(key: ApiKey, actor: Actor) -> bool:
    if key.revoked_at is not None:
        return False
    api_key_revoke(api_key=key, actor=actor)
    return True


REVOKE = BulkOperation(
    "revoke",
    "Revoke all matching keys",
    "Each key is refused from the next request on; each revocation is audited. Revoked keys are skipped.",
    _revoke,
)


class RevokedFilter(YesNoFilter):
    title = "revoked"
    parameter_name = "revoked"
    options = (("no", "Active"), ("yes", "Revoked"))
    yes_when = Q(revoked_at__isnull=False)


@admin.register(ApiKey)
class ApiKeyAdmin(CairnModelAdmin):
    list_display = (
        "name",
        "prefix",
        "workspace",
        "scope",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    list_filter = (WorkspaceFilter, "scope", RevokedFilter)
    search_fields = ("=prefix", "name")
    search_help_text = "Exact prefix, or part of the name."
    date_hierarchy = "created_at"
    list_select_related = ("workspace",)
    bulk_operations = (REVOKE,)
    # Only harmless labels are editable here; scope, expiry and revocation change what a key can do.
    fields = (
        "workspace",
        "name",
        "prefix",
        "scope",
        "throttle_rate",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    readonly_fields = (
        "workspace",
        "prefix",
        "scope",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A key's secret must be shown once at creation: the dashboard's "API keys" page does that.
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
