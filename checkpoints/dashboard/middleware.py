"""The dashboard's Content-Security-Policy: its pages load only their own scripts, styles and images (no
inline code, no other origins), so an injected tag can neither run nor phone home."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path.startswith("/dashboard/"):
            response.headers.setdefault("Content-Security-Policy", settings.CAIRN_DASHBOARD_CSP)
        return response
