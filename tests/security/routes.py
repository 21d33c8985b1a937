"""Every route of the project, straight from the URL conf (`get_resolver()`), classified by who may reach
what. A route the classification does not know is an error: a new endpoint must say how it is isolated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

METHODS = ("get", "post", "put", "patch", "delete")
# Routes that serve no workspace's data, and why.
PUBLIC = {
    "api:schema": "the OpenAPI document",
    "api:docs": "the interactive docs page",
    "healthz": "service health, no data",
    "favicon": "the dashboard's icon, a static file",
    "root": "a redirect to the dashboard",
    "dashboard:home": "lists only the workspaces the user is a member of (tested in tests/dashboard)",
    "dashboard:login": "the login form",
    "dashboard:logout": "logging out",
}
# The Django admin is tenant-scoped per staff user and tested in tests/admin (it has a route per model).
ADMIN_PREFIX = "admin/"


@dataclass(frozen=True)
class Route:
    template: str  # e.g. "api/v1/threads/<cid:thread_id>/checkpoints/"
    name: str  # namespaced, e.g. "api:thread-checkpoints"
    arguments: tuple[str, ...]
    callback: Any

    @property
    def kind(self) -> str:
        if self.name in PUBLIC:
            return "public"
        if self.template.startswith(ADMIN_PREFIX):
            return "admin"
        if self.template.startswith("api/v1/") and self.name.startswith("api:"):
            return "api"
        if self.template.startswith("dashboard/w/<slug:slug>/") and self.name.startswith("dashboard:"):
            return "dashboard"
        return "unknown"

    @property
    def methods(self) -> tuple[str, ...]:
        view_class = getattr(self.callback, "view_class", None)
        if view_class is None:  # a function view: its decorators decide; GET and POST are tried
            return ("get", "post")
        allowed = getattr(view_class, "http_method_names", METHODS)
        return tuple(m for m in METHODS if m in allowed and hasattr(view_class, m))

    def __str__(self) -> str:
        return f"{self.name} ({self.template})"


def _walk(patterns: list[Any], prefix: str, namespace: str, arguments: tuple[str, ...]) -> list[Route]:
    routes: list[Route] = []
    for entry in patterns:
        template = prefix + str(entry.pattern)
        names = arguments + tuple(getattr(entry.pattern, "converters", {}) or ())
        if isinstance(entry, URLResolver):
            inner = (
                f"{namespace}:{entry.namespace}"
                if namespace and entry.namespace
                else entry.namespace or namespace
            )
            routes += _walk(entry.url_patterns, template, inner or "", names)
        elif isinstance(entry, URLPattern):
            name = f"{namespace}:{entry.name}" if namespace else str(entry.name)
            routes.append(Route(template, name, names, entry.callback))
    return routes


def all_routes() -> list[Route]:
    return _walk(get_resolver().url_patterns, "", "", ())


def routes_of(kind: str) -> list[Route]:
    return [route for route in all_routes() if route.kind == kind]
