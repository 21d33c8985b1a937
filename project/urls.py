"""Top-level routes: the API, the admin, the dashboard and the health check."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.defaults import page_not_found
from django.views.generic import RedirectView

from checkpoints.api.errors import api_not_found
from checkpoints.api.views.health import healthz
from checkpoints.dashboard.views.favicon import favicon

urlpatterns = [
    path("api/v1/", include("checkpoints.api.urls")),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("dashboard/", include("checkpoints.dashboard.urls")),
    path("", RedirectView.as_view(pattern_name="dashboard:home"), name="root"),
]


def handler404(request: HttpRequest, exception: Exception) -> HttpResponse:
    """JSON envelope under /api/, Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return api_not_found(request, exception)
    return page_not_found(request, exception)
