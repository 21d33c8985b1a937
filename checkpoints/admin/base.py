"""What every Cairn ModelAdmin shares.

- Tenancy: staff who are not superusers see only rows of the workspaces they are members of.
- No COUNT(*) of a huge table: the paginator counts at most COUNT_CAP rows (`COUNT` over `LIMIT cap+1`)
  and the full-table count is off (`show_full_result_count = False`).
- Changelists `defer()` the large JSON/text columns.
- Bulk operations call services, one row at a time (each row is audited by its service), over **every**
  row matching the changelist's current filters and search: either from the action menu with "select all"
  (Django's select-across), or from the "… all matching" buttons, which need no selection at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.safestring import SafeString

from checkpoints.admin.changelist import FilterGuardMixin
from checkpoints.admin.columns import readable_columns
from checkpoints.dashboard.jsonview import render_json, render_json_text
from checkpoints.exceptions import CairnError
from checkpoints.models import Workspace
from checkpoints.services.audit import Actor

COUNT_CAP = 10_000
BULK_BATCH = 500


class CappedCountPaginator(Paginator):
    """Counts at most COUNT_CAP + 1 rows; `capped` says the real number is larger."""

    cap = COUNT_CAP

    @cached_property
    def count(self) -> int:
        queryset = cast(QuerySet[Any], self.object_list)
        return int(queryset[: COUNT_CAP + 1].count())

    @property
    def capped(self) -> bool:
        return self.count > COUNT_CAP


def admin_link(obj: Model | None, text: Any = None) -> SafeString | str:
    """A link to `obj`'s admin change page (or "—")."""
    if obj is None:
        return "—"
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, obj if text is None else text)


def json_field(text: str | None) -> SafeString | str:
    """Stored JSON text as the dashboard's capped, collapsible viewer (read-only)."""
    rendered = render_json_text(text)
    if rendered is None:
        return "— (erased)"
    return format_html('<div class="cairn-json">{}</div>', rendered.html)


def json_value(value: Any) -> SafeString:
    return format_html('<div class="cairn-json">{}</div>', render_json(value, max_nodes=500).html)


Display = Callable[[Any, Any], SafeString | str]


def json_column(name: str, *, stored_text: bool = False) -> Display:
    """A read-only display of the JSON attribute `name` (described by its name): stored JSON text through
    `json_field` when `stored_text`, otherwise a value through `json_value`."""
    render = json_field if stored_text else json_value

    @admin.display(description=name.replace("_", " "))
    def column(model_admin: Any, obj: Any) -> SafeString | str:
        return render(getattr(obj, name))

    return column


def link_column(
    relation: str, label: str | None = None, *, description: str, ordering: str | None = None
) -> Display:
    """A display linking to the admin page of the related object `relation` (or "—"), shown as its
    attribute `label` (its str() when None)."""

    @admin.display(description=description, ordering=ordering)
    def column(model_admin: Any, obj: Any) -> SafeString | str:
        related = getattr(obj, relation)
        return admin_link(related, None if related is None or label is None else getattr(related, label))

    return column


THREAD_LINK = link_column("thread", "thread_id", description="thread", ordering="thread__thread_id")


class WorkspaceFilter(admin.SimpleListFilter):
    """Filter by workspace, listing only the workspaces the user may see."""

    title = "workspace"
    parameter_name = "workspace"

    def __init__(self, request: HttpRequest, params: Any, model: Any, model_admin: Any) -> None:
        self.workspace_path = getattr(model_admin, "workspace_path", "workspace")
        super().__init__(request, params, model, model_admin)

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(w.slug, w.name) for w in Workspace.objects.for_user(request.user).order_by("slug")[:200]]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if not self.value():
            return queryset
        field = f"{self.workspace_path}__slug" if self.workspace_path else "slug"
        return queryset.filter(**{field: self.value()})


class YesNoFilter(admin.SimpleListFilter):
    """A filter with the two values "yes" (the rows matching `yes_when`) and "no" (the others), labelled by
    `options` (in their order)."""

    options: ClassVar[tuple[tuple[str, str], ...]] = ()
    yes_when: ClassVar[Q]

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(self.options)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(self.yes_when)
        if self.value() == "no":
            return queryset.exclude(self.yes_when)
        return queryset


@dataclass(frozen=True)
class BulkOperation:
    """A service call applied to each matching row. `apply` returns False (or raises a domain error) for a
    row it skips, e.g. a pinned checkpoint that cannot be expired."""

    name: str
    label: str
    explanation: str
    apply: Callable[[Any, Actor], bool]
    permission: str = "change"


def delete_operation(
    plural: str, explanation: str, delete: Callable[..., Any], argument: str
) -> BulkOperation:
    """Bulk deletion of each matching row: `delete(<argument>=row, actor=actor)`, none skipped."""

    def apply(row: Any, actor: Actor) -> bool:
        delete(**{argument: row}, actor=actor)
        return True

    return BulkOperation("delete", f"Delete all matching {plural}", explanation, apply, permission="delete")


@dataclass(frozen=True)
class BulkResult:
    done: int
    skipped: int


class CairnModelAdmin(FilterGuardMixin, admin.ModelAdmin):
    """Base ModelAdmin: tenancy, capped counts, deferred blobs, bulk operations over every matching row,
    no server error from any filter value (FilterGuardMixin)."""

    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 50
    # The ORM path from this model to its workspace, for tenancy ("" for Workspace itself).
    workspace_path: ClassVar[str] = "workspace"
    # Columns too large for a list page.
    changelist_defer: ClassVar[tuple[str, ...]] = ()
    bulk_operations: ClassVar[tuple[BulkOperation, ...]] = ()
    change_list_template = "admin/checkpoints/change_list.html"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every bulk operation is also an admin action over the selected rows, unless `actions` is set."""
        super().__init_subclass__(**kwargs)
        if "bulk_operations" in cls.__dict__ and "actions" not in cls.__dict__:
            cls.actions = [cls.action_for(op) for op in cls.bulk_operations]

    def get_list_display(self, request: HttpRequest) -> Any:
        """Times to the second (UTC) and `*_seconds` durations in human units, in every list."""
        return readable_columns(self.model, super().get_list_display(request))

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if not request.user.is_superuser:
            visible = Workspace.objects.for_user(request.user)
            field = f"{self.workspace_path}__in" if self.workspace_path else "pk__in"
            queryset = queryset.filter(**{field: visible})
        match = getattr(request, "resolver_match", None)
        if self.changelist_defer and match is not None and match.url_name.endswith("_changelist"):
            queryset = queryset.defer(*self.changelist_defer)
        return queryset

    # --- bulk operations ---------------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        bulk = path(
            "bulk/<slug:operation>/",
            self.admin_site.admin_view(self.bulk_view),
            name="{}_{}_bulk".format(*info),
        )
        return [bulk, *super().get_urls()]

    def _operation(self, name: str) -> BulkOperation:
        for operation in self.bulk_operations:
            if operation.name == name:
                return operation
        raise PermissionDenied("No such bulk operation.")

    def has_bulk_permission(self, request: HttpRequest, operation: BulkOperation) -> bool:
        return request.user.has_perm(f"{self.opts.app_label}.{operation.permission}_{self.opts.model_name}")

    def rows(self, queryset: QuerySet[Any]) -> Iterator[Any]:
        """Every row of `queryset`, in primary-key batches (keyset, no OFFSET; rows that an operation
        moves out of the filter do not shift the next batch)."""
        last = None
        while True:
            batch = queryset.order_by("pk")
            if last is not None:
                batch = batch.filter(pk__gt=last)
            rows = list(batch[:BULK_BATCH])
            if not rows:
                return
            yield from rows
            last = rows[-1].pk

    def run_bulk(self, request: HttpRequest, queryset: QuerySet[Any], operation: BulkOperation) -> BulkResult:
        """Apply `operation` to every row of `queryset`, each in its own service transaction."""
        actor = Actor.for_user(request.user)
        done = skipped = 0
        for row in self.rows(queryset):
            try:
                acted = operation.apply(row, actor)
            except CairnError:
                acted = False
            done, skipped = (done + 1, skipped) if acted else (done, skipped + 1)
        return BulkResult(done, skipped)

    def report(self, request: HttpRequest, operation: BulkOperation, result: BulkResult) -> None:
        noun = self.opts.verbose_name if result.done == 1 else self.opts.verbose_name_plural
        text = f"{operation.label}: {result.done} {noun} done"
        if result.skipped:
            text += f", {result.skipped} skipped (not applicable or already done)"
        self.message_user(request, text + ".", messages.SUCCESS if result.done else messages.WARNING)

    def bulk_view(self, request: HttpRequest, operation: str) -> HttpResponse:
        """Confirm, then apply an operation to every row matching the changelist's filters and search."""
        chosen = self._operation(operation)
        if not self.has_bulk_permission(request, chosen):
            raise PermissionDenied
        changelist_url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        filters = request.GET.urlencode()
        back = f"{changelist_url}?{filters}" if filters else changelist_url
        try:
            queryset = self.get_changelist_instance(request).get_queryset(request)
        except IncorrectLookupParameters:  # get_changelist_instance has said why
            return HttpResponseRedirect(changelist_url)
        if request.method == "POST":
            self.report(request, chosen, self.run_bulk(request, queryset, chosen))
            return HttpResponseRedirect(back)
        matching = int(queryset[: COUNT_CAP + 1].count())
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": chosen.label,
            "operation": chosen,
            "matching": matching,
            "capped": matching > COUNT_CAP,
            "cap": COUNT_CAP,
            "sample": list(queryset.order_by("pk")[:20]),
            "filters": [(key, value) for key, value in request.GET.items()],
            "back": back,
        }
        return render(request, "admin/checkpoints/bulk_confirm.html", context)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        filters = request.GET.copy()
        for transient in ("p", "o", "all"):
            filters.pop(transient, None)
        query = f"?{filters.urlencode()}" if filters else ""
        operations = [
            (op, reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_bulk", args=[op.name]) + query)
            for op in self.bulk_operations
            if self.has_bulk_permission(request, op)
        ]
        return super().changelist_view(request, {**(extra_context or {}), "bulk_operations": operations})

    @staticmethod
    def action_for(operation: BulkOperation) -> Callable[..., None]:
        """The same operation as an admin action over the selected rows (with "select all": every match)."""

        def action(model_admin: CairnModelAdmin, request: HttpRequest, queryset: QuerySet[Any]) -> None:
            if not model_admin.has_bulk_permission(request, operation):
                raise PermissionDenied
            model_admin.report(request, operation, model_admin.run_bulk(request, queryset, operation))

        action.__name__ = f"bulk_{operation.name}"
        return admin.action(description=f"{operation.label} (selected)")(action)


class ReadOnlyAdminMixin:
    """Rows that only services may write: viewable, never added, changed or deleted through a form."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
